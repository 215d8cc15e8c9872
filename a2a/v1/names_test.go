package v1_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

// TestProtoNames: every 1.0 decoder reads a member by its proto field name
// (snake_case) as by its JSON name, as ProtoJSON parsers do, and gives the
// same params.
func TestProtoNames(t *testing.T) {
	camel := `{"message":{"messageId":"m1","contextId":"c1","taskId":"t1","role":"ROLE_USER","referenceTaskIds":["r"],` +
		`"parts":[{"url":"https://x/a","mediaType":"text/plain","filename":"a"}]},` +
		`"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":2,"returnImmediately":true,` +
		`"taskPushNotificationConfig":{"taskId":"t1","url":"https://hook"}}}`
	snake := `{"message":{"message_id":"m1","context_id":"c1","task_id":"t1","role":"ROLE_USER","reference_task_ids":["r"],` +
		`"parts":[{"url":"https://x/a","media_type":"text/plain","filename":"a"}]},` +
		`"configuration":{"accepted_output_modes":["text/plain"],"history_length":2,"return_immediately":true,` +
		`"task_push_notification_config":{"task_id":"t1","url":"https://hook"}}}`
	want, err := v1.DecodeSendParams(json.RawMessage(camel))
	if err != nil {
		t.Fatal(err)
	}
	got, err := v1.DecodeSendParams(json.RawMessage(snake))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("SendMessage by proto names = %+v, %v\nwant %+v", got, err, want)
	}

	if q, err := v1.DecodeTaskQuery(json.RawMessage(`{"id":"t1","history_length":"3"}`)); err != nil || q.HistoryLength == nil || *q.HistoryLength != 3 {
		t.Errorf("GetTask history_length: %+v, %v", q, err)
	}
	if p, err := v1.DecodePushRef(json.RawMessage(`{"task_id":"t1","id":"c1"}`)); err != nil || p != (a2a.PushConfigParams{TaskID: "t1", ConfigID: "c1"}) {
		t.Errorf("push ref task_id: %+v, %v", p, err)
	}
	if p, err := v1.DecodePushCreate(json.RawMessage(`{"task_id":"t1","url":"https://x"}`)); err != nil || p.TaskID != "t1" {
		t.Errorf("push create task_id: %+v, %v", p, err)
	}
	if p, err := v1.DecodePushList(json.RawMessage(`{"task_id":"t1","page_size":3,"page_token":"p"}`)); err != nil || p != (v1.PushListParams{TaskID: "t1", PageSize: 3, PageToken: "p"}) {
		t.Errorf("push list by proto names: %+v, %v", p, err)
	}
}

// TestProtoNamesProblems: a problem is located with the JSON name, even
// when the request used the proto name; a member given under both names
// is one problem naming both.
func TestProtoNamesProblems(t *testing.T) {
	tests := []struct {
		name string
		err  *a2a.Error
		want []a2a.Problem
	}{
		{"send, proto name", second(v1.DecodeSendParams(json.RawMessage(`{"message":{"message_id":"","role":"ROLE_USER","parts":[{"text":"x"}]},"configuration":{"history_length":-1}}`))),
			[]a2a.Problem{wiretest.Prob("/message/messageId", "must not be empty"), wiretest.Prob("/configuration/historyLength", "must not be negative")}},
		{"send, both names", second(v1.DecodeSendParams(json.RawMessage(`{"message":{"messageId":"a","message_id":"b","role":"ROLE_USER","parts":[{"text":"x","media_type":"a","mediaType":"a"}]},` +
			`"configuration":{"returnImmediately":true,"return_immediately":true}}`))),
			[]a2a.Problem{
				wiretest.Prob("/message/messageId", `is given twice, as "messageId" and as "message_id"`),
				wiretest.Prob("/message/parts/0/mediaType", `is given twice, as "mediaType" and as "media_type"`),
				wiretest.Prob("/configuration/returnImmediately", `is given twice, as "returnImmediately" and as "return_immediately"`),
			}},
		{"push create, both names", second(v1.DecodePushCreate(json.RawMessage(`{"taskId":"t","task_id":"t","url":"https://x"}`))),
			[]a2a.Problem{wiretest.Prob("/taskId", `is given twice, as "taskId" and as "task_id"`)}},
		{"push config in send, proto name", second(v1.DecodeSendParams(json.RawMessage(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]},` +
			`"configuration":{"task_push_notification_config":{"task_id":7,"url":"https://x"}}}`))),
			[]a2a.Problem{wiretest.Prob("/configuration/taskPushNotificationConfig/taskId", "must be a string, not a number")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wiretest.CheckInvalidParams(t, tc.err, tc.want...) })
	}
}

func second[T any](_ T, e *a2a.Error) *a2a.Error { return e }

func TestProblemPath(t *testing.T) {
	for in, want := range map[string]string{
		"/pushNotificationConfig/url":                   "/url",
		"/pushNotificationConfig":                       "/",
		"/pushNotificationConfigs":                      "/pushNotificationConfigs",
		"/configuration/pushNotificationConfig/url":     "/configuration/taskPushNotificationConfig/url",
		"/configuration/pushNotificationConfig":         "/configuration/taskPushNotificationConfig",
		"/message/parts/0/data/skill":                   "/message/parts/0/data/skill",
		"/message/contextId":                            "/message/contextId",
		"/":                                             "/",
		"/configuration/pushNotificationConfigX/url":    "/configuration/pushNotificationConfigX/url",
		"/configuration/pushNotificationConfig/id/more": "/configuration/taskPushNotificationConfig/id/more",
	} {
		if got := v1.ProblemPath(in); got != want {
			t.Errorf("ProblemPath(%q) = %q, want %q", in, got, want)
		}
	}
}
