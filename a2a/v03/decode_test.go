package v03_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v03 "github.com/a2ad/a2ad/a2a/v03"
)

// sendParams builds message/send params around a 0.3 message.
var sendParams = wiretest.SendParams03

func withParts(parts string) string { return sendParams(map[string]string{"parts": parts}, "") }

// decodeSendParamsCases are the bad params of message/send, each with the
// problems it must report. FuzzDecodeSendParams seeds its corpus with them.
var decodeSendParamsCases = wiretest.NamedRefusals{
	{"params missing", "", []a2a.Problem{wiretest.Prob("/", "is required")}},
	{"params null", "null", []a2a.Problem{wiretest.Prob("/", "is required")}},
	{"params array", `[{"message":{}}]`, []a2a.Problem{wiretest.Prob("/", "must be an object, not an array")}},
	{"params string", `"hi"`, []a2a.Problem{wiretest.Prob("/", "must be an object, not a string")}},
	{"params number", `3`, []a2a.Problem{wiretest.Prob("/", "must be an object, not a number")}},
	{"message missing", `{}`, []a2a.Problem{wiretest.Prob("/message", "is required")}},
	{"message null", `{"message":null}`, []a2a.Problem{wiretest.Prob("/message", "is required")}},
	{"message string", `{"message":"hi"}`, []a2a.Problem{wiretest.Prob("/message", "must be an object, not a string")}},
	{"messageId missing", sendParams(map[string]string{"messageId": ""}, ""),
		[]a2a.Problem{wiretest.Prob("/message/messageId", "is required")}},
	{"messageId empty", sendParams(map[string]string{"messageId": `""`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/messageId", "must not be empty")}},
	{"messageId number", sendParams(map[string]string{"messageId": `12`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/messageId", "must be a string, not a number")}},
	{"role missing", sendParams(map[string]string{"role": ""}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", "is required")}},
	{"role bot", sendParams(map[string]string{"role": `"bot"`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", `must be "user" or "agent"`)}},
	{"role 1.0 spelling", sendParams(map[string]string{"role": `"ROLE_USER"`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", `must be "user" or "agent"`)}},
	{"role boolean", sendParams(map[string]string{"role": `true`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", "must be a string, not a boolean")}},
	{"parts missing", sendParams(map[string]string{"parts": ""}, ""),
		[]a2a.Problem{wiretest.Prob("/message/parts", "is required")}},
	{"parts null", withParts(`null`),
		[]a2a.Problem{wiretest.Prob("/message/parts", "is required")}},
	{"parts object", withParts(`{"kind":"text","text":"hi"}`),
		[]a2a.Problem{wiretest.Prob("/message/parts", "must be an array, not an object")}},
	{"parts string", withParts(`"hi"`),
		[]a2a.Problem{wiretest.Prob("/message/parts", "must be an array, not a string")}},
	{"parts empty", withParts(`[]`),
		[]a2a.Problem{wiretest.Prob("/message/parts", "must not be empty")}},
	{"part string", withParts(`["hi"]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0", "must be an object, not a string")}},
	{"part null", withParts(`[null]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0", "is required")}},
	{"second part array", withParts(`[{"kind":"text","text":"a"},[]]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/1", "must be an object, not an array")}},
	{"part kind missing", withParts(`[{"text":"hi"}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/kind", "is required")}},
	{"part kind number", withParts(`[{"kind":1,"text":"hi"}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/kind", "must be a string, not a number")}},
	{"part kind image", withParts(`[{"kind":"image","url":"x"}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/kind", `must be "text", "file" or "data"`)}},
	{"text part without text", withParts(`[{"kind":"text"}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/text", "is required")}},
	{"text part with number text", withParts(`[{"kind":"text","text":5}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/text", "must be a string, not a number")}},
	{"part metadata array", withParts(`[{"kind":"text","text":"a","metadata":[]}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/metadata", "must be an object, not an array")}},
	{"data part array", withParts(`[{"kind":"data","data":[1,2]}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/data", "must be an object, not an array")}},
	{"data part string", withParts(`[{"kind":"data","data":"{}"}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/data", "must be an object, not a string")}},
	{"data part missing", withParts(`[{"kind":"data"}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/data", "is required")}},
	{"data part null", withParts(`[{"kind":"data","data":null}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/data", "is required")}},
	{"file part without file", withParts(`[{"kind":"file"}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/file", "is required")}},
	{"file part with neither bytes nor uri", withParts(`[{"kind":"file","file":{"name":"a.txt"}}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/file", `must have "bytes" or "uri"`)}},
	{"file part with both", withParts(`[{"kind":"file","file":{"bytes":"aGk=","uri":"https://example.com/a"}}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/file", `must have either "bytes" or "uri", not both`)}},
	{"file part with empty bytes", withParts(`[{"kind":"file","file":{"bytes":""}}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/file/bytes", "must not be empty")}},
	{"file part with empty uri", withParts(`[{"kind":"file","file":{"uri":""}}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/file/uri", "must not be empty")}},
	{"file part with number bytes", withParts(`[{"kind":"file","file":{"bytes":1}}]`),
		[]a2a.Problem{
			wiretest.Prob("/message/parts/0/file/bytes", "must be a string, not a number"),
			wiretest.Prob("/message/parts/0/file", `must have "bytes" or "uri"`),
		}},
	{"file part with number mimeType", withParts(`[{"kind":"file","file":{"uri":"https://example.com/a","mimeType":1}}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/file/mimeType", "must be a string, not a number")}},
	{"configuration not an object", sendParams(nil, `"configuration":true`),
		[]a2a.Problem{wiretest.Prob("/configuration", "must be an object, not a boolean")}},
	{"blocking yes", sendParams(nil, `"configuration":{"blocking":"yes"}`),
		[]a2a.Problem{wiretest.Prob("/configuration/blocking", "must be a boolean, not a string")}},
	{"blocking number", sendParams(nil, `"configuration":{"blocking":1}`),
		[]a2a.Problem{wiretest.Prob("/configuration/blocking", "must be a boolean, not a number")}},
	{"historyLength negative", sendParams(nil, `"configuration":{"historyLength":-1}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must not be negative")}},
	{"historyLength fraction", sendParams(nil, `"configuration":{"historyLength":1.5}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must be an integer")}},
	{"historyLength string", sendParams(nil, `"configuration":{"historyLength":"3"}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must be an integer")}},
	{"historyLength too large", sendParams(nil, `"configuration":{"historyLength":1e30}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must be an integer")}},
	{"acceptedOutputModes not strings", sendParams(nil, `"configuration":{"acceptedOutputModes":[1]}`),
		[]a2a.Problem{wiretest.Prob("/configuration/acceptedOutputModes", "must be an array of strings")}},
	{"message kind task", sendParams(map[string]string{"kind": `"task"`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/kind", `must be "message"`)}},
	{"message kind number", sendParams(map[string]string{"kind": `1`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/kind", "must be a string, not a number")}},
	{"message contextId number", sendParams(map[string]string{"contextId": `1`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/contextId", "must be a string, not a number")}},
	{"message metadata string", sendParams(map[string]string{"metadata": `"x"`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/metadata", "must be an object, not a string")}},
	{"metadata array", sendParams(nil, `"metadata":[]`),
		[]a2a.Problem{wiretest.Prob("/metadata", "must be an object, not an array")}},
	{"metadata string", sendParams(nil, `"metadata":"x"`),
		[]a2a.Problem{wiretest.Prob("/metadata", "must be an object, not a string")}},
	{"several problems", `{"message":{"kind":"task","messageId":"","role":"bot","parts":[{"kind":"text"},{"kind":"image"},{"kind":"data","data":[]}]},` +
		`"configuration":{"blocking":"yes","historyLength":-1},"metadata":[]}`,
		[]a2a.Problem{
			wiretest.Prob("/message/kind", `must be "message"`),
			wiretest.Prob("/message/messageId", "must not be empty"),
			wiretest.Prob("/message/role", `must be "user" or "agent"`),
			wiretest.Prob("/message/parts/0/text", "is required"),
			wiretest.Prob("/message/parts/1/kind", `must be "text", "file" or "data"`),
			wiretest.Prob("/message/parts/2/data", "must be an object, not an array"),
			wiretest.Prob("/configuration/blocking", "must be a boolean, not a string"),
			wiretest.Prob("/configuration/historyLength", "must not be negative"),
			wiretest.Prob("/metadata", "must be an object, not an array"),
		}},
	{"two problems", `{"message":{"role":"user"}}`,
		[]a2a.Problem{
			wiretest.Prob("/message/messageId", "is required"),
			wiretest.Prob("/message/parts", "is required"),
		}},
}

func TestDecodeSendParamsProblems(t *testing.T) {
	wiretest.CheckNamedRefusals(t, v03.DecodeSendParams, decodeSendParamsCases)
}

func TestDecodeSendParamsSeveralProblemsMessage(t *testing.T) {
	_, err := v03.DecodeSendParams(json.RawMessage(`{"message":{"kind":"task","messageId":3,"parts":[]},"metadata":1}`))
	if err == nil {
		t.Fatal("DecodeSendParams = nil error")
	}
	want := `Invalid parameters: /message/kind: must be "message" (and 4 more problems)`
	if err.Message != want {
		t.Errorf("message = %q, want %q", err.Message, want)
	}
}

func TestDecodeSendParamsGood(t *testing.T) {
	raw := json.RawMessage(`{
		"message": {
			"kind": "message",
			"messageId": "m-1",
			"contextId": "ctx-1",
			"taskId": "task-1",
			"role": "user",
			"referenceTaskIds": ["task-0", "task-00"],
			"extensions": ["https://example.com/ext/v1"],
			"metadata": {"trace": "abc", "n": 2},
			"parts": [
				{"kind": "text", "text": "hello", "metadata": {"lang": "en"}},
				{"kind": "data", "data": {"a": [1, 2], "b": null}},
				{"kind": "file", "file": {"name": "a.txt", "mimeType": "text/plain", "bytes": "aGk="}},
				{"kind": "file", "file": {"uri": "https://example.com/b.pdf"}},
				{"kind": "text", "text": ""}
			]
		},
		"configuration": {"blocking": false, "historyLength": 0, "acceptedOutputModes": ["application/json"]},
		"metadata": {"x": true}
	}`)
	p, err := v03.DecodeSendParams(raw)
	if err != nil {
		t.Fatalf("DecodeSendParams error = %#v", err)
	}
	blocking, history := false, 0
	want := a2a.SendParams{
		Message: a2a.Message{
			MessageID:        "m-1",
			ContextID:        "ctx-1",
			TaskID:           "task-1",
			Role:             a2a.RoleUser,
			ReferenceTaskIDs: []string{"task-0", "task-00"},
			Extensions:       []string{"https://example.com/ext/v1"},
			Metadata:         map[string]any{"trace": "abc", "n": float64(2)},
			Parts: []a2a.Part{
				{Kind: a2a.PartText, Text: "hello", Metadata: map[string]any{"lang": "en"}},
				{Kind: a2a.PartData, Data: json.RawMessage(`{"a": [1, 2], "b": null}`)},
				{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "a.txt", MimeType: "text/plain", Bytes: "aGk="}},
				{Kind: a2a.PartFile, File: &a2a.FileContent{URI: "https://example.com/b.pdf"}},
				{Kind: a2a.PartText, Text: ""},
			},
		},
		Blocking:            &blocking,
		HistoryLength:       &history,
		AcceptedOutputModes: []string{"application/json"},
		Metadata:            map[string]any{"x": true},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("DecodeSendParams =\n%#v\nwant\n%#v", p, want)
	}
	if p.Blocking == nil || *p.Blocking {
		t.Errorf("Blocking = %v, want pointer to false", p.Blocking)
	}
	if p.HistoryLength == nil || *p.HistoryLength != 0 {
		t.Errorf("HistoryLength = %v, want pointer to 0", p.HistoryLength)
	}
}

func TestDecodeSendParamsMinimal(t *testing.T) {
	// kind is required by the 0.3 schema but a2ad is lenient about it;
	// configuration and metadata are optional, and null counts as absent.
	raw := json.RawMessage(`{"message":{"messageId":"m","role":"agent","parts":[{"kind":"text","text":"x"}],"contextId":null},` +
		`"configuration":{"blocking":true,"historyLength":null},"metadata":null}`)
	p, err := v03.DecodeSendParams(raw)
	if err != nil {
		t.Fatalf("DecodeSendParams error = %#v", err)
	}
	if p.Message.Role != a2a.RoleAgent || p.Message.MessageID != "m" || p.Message.ContextID != "" {
		t.Errorf("Message = %+v", p.Message)
	}
	if p.Blocking == nil || !*p.Blocking {
		t.Errorf("Blocking = %v, want pointer to true", p.Blocking)
	}
	if p.HistoryLength != nil || p.Metadata != nil || p.AcceptedOutputModes != nil {
		t.Errorf("unset fields = %v, %v, %v; want nil", p.HistoryLength, p.Metadata, p.AcceptedOutputModes)
	}

	p, err = v03.DecodeSendParams(json.RawMessage(`{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"x"}]}}`))
	if err != nil {
		t.Fatalf("DecodeSendParams error = %#v", err)
	}
	if p.Blocking != nil || p.HistoryLength != nil {
		t.Errorf("without configuration: Blocking %v, HistoryLength %v; want nil, nil", p.Blocking, p.HistoryLength)
	}
}

func TestDecodeTaskQuery(t *testing.T) {
	wiretest.CheckRefusals(t, v03.DecodeTaskQuery, wiretest.Refusals{
		{"", []a2a.Problem{wiretest.Prob("/", "is required")}},
		{`[]`, []a2a.Problem{wiretest.Prob("/", "must be an object, not an array")}},
		{`{}`, []a2a.Problem{wiretest.Prob("/id", "is required")}},
		{`{"id":null}`, []a2a.Problem{wiretest.Prob("/id", "is required")}},
		{`{"id":""}`, []a2a.Problem{wiretest.Prob("/id", "must not be empty")}},
		{`{"id":42}`, []a2a.Problem{wiretest.Prob("/id", "must be a string, not a number")}},
		{`{"id":"t1","historyLength":-1}`, []a2a.Problem{wiretest.Prob("/historyLength", "must not be negative")}},
		{`{"id":"t1","historyLength":"2"}`, []a2a.Problem{wiretest.Prob("/historyLength", "must be an integer")}},
		{`{"id":7,"historyLength":-3}`, []a2a.Problem{
			wiretest.Prob("/id", "must be a string, not a number"),
			wiretest.Prob("/historyLength", "must not be negative"),
		}},
	})

	q, err := v03.DecodeTaskQuery(json.RawMessage(`{"id":"t1","historyLength":3,"metadata":{}}`))
	if err != nil {
		t.Fatalf("DecodeTaskQuery error = %#v", err)
	}
	if q.ID != "t1" || q.HistoryLength == nil || *q.HistoryLength != 3 {
		t.Errorf("DecodeTaskQuery = %q, %v; want t1, 3", q.ID, q.HistoryLength)
	}
	q, err = v03.DecodeTaskQuery(json.RawMessage(`{"id":"t1"}`))
	if err != nil || q.HistoryLength != nil {
		t.Errorf("DecodeTaskQuery without historyLength = %+v, %v; want nil historyLength", q, err)
	}
	q, err = v03.DecodeTaskQuery(json.RawMessage(`{"id":"t1","historyLength":0}`))
	if err != nil || q.HistoryLength == nil || *q.HistoryLength != 0 {
		t.Errorf("DecodeTaskQuery with historyLength 0 = %+v, %v; want pointer to 0", q, err)
	}
}

func TestDecodeTaskID(t *testing.T) {
	wiretest.CheckRefusals(t, v03.DecodeTaskID, wiretest.Refusals{
		{"", []a2a.Problem{wiretest.Prob("/", "is required")}},
		{`"t1"`, []a2a.Problem{wiretest.Prob("/", "must be an object, not a string")}},
		{`{}`, []a2a.Problem{wiretest.Prob("/id", "is required")}},
		{`{"id":""}`, []a2a.Problem{wiretest.Prob("/id", "must not be empty")}},
		{`{"id":1}`, []a2a.Problem{wiretest.Prob("/id", "must be a string, not a number")}},
		{`{"id":{"id":"t1"}}`, []a2a.Problem{wiretest.Prob("/id", "must be a string, not an object")}},
	})

	id, err := v03.DecodeTaskID(json.RawMessage(`{"id":"t1","metadata":{"a":1}}`))
	if err != nil || id != "t1" {
		t.Errorf("DecodeTaskID = %q, %v; want t1, nil", id, err)
	}
}

// TestDecodeSendParamsBase64: 0.3 file bytes are base64, read as 1.0's
// raw is (issue 13 item 9: 0.3 stored bytes that were not, and handed them
// to 1.0 clients).
func TestDecodeSendParamsBase64(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"aGk=", "aGk="},
		{"aGk", "aGk="},
		{"-_8", "+/8="},
	} {
		p, err := v03.DecodeSendParams(json.RawMessage(withParts(`[{"kind":"file","file":{"bytes":"` + tc.in + `"}}]`)))
		if err != nil {
			t.Errorf("bytes %q: %v", tc.in, err)
			continue
		}
		if got := p.Message.Parts[0].File.Bytes; got != tc.want {
			t.Errorf("bytes %q: Bytes = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"a", "aGk==", "a=Gk", "a b", "é", "not base64!"} {
		_, err := v03.DecodeSendParams(json.RawMessage(withParts(`[{"kind":"file","file":{"bytes":"` + bad + `"}}]`)))
		wiretest.CheckInvalidParams(t, err, wiretest.Prob("/message/parts/0/file/bytes", "must be base64"))
	}
}

func TestDecodeListTasksGood(t *testing.T) {
	tests := []struct {
		params string
		want   a2a.ListTasksParams
	}{
		{``, a2a.ListTasksParams{}},
		{`null`, a2a.ListTasksParams{}},
		{`{}`, a2a.ListTasksParams{}},
		// What the a2a-go v0.3.15 client sends for a full request.
		{`{"context_id":"c1","status":"input-required","page_size":7,"page_token":"tok","history_length":2,` +
			`"last_updated_after":"2026-03-01T12:00:00.123456789+02:00","include_artifacts":true}`,
			a2a.ListTasksParams{ContextID: "c1", Status: a2a.StateInputRequired, PageSize: 7, PageToken: "tok",
				HistoryLength: wiretest.IntP(2), StatusTimestampAfter: wiretest.TimeP(t, "2026-03-01T10:00:00.123456789Z"), IncludeArtifacts: true}},
		{`{"status":"","page_size":0,"history_length":0,"include_artifacts":false,"context_id":null}`,
			a2a.ListTasksParams{HistoryLength: wiretest.IntP(0)}},
		{`{"page_size":1}`, a2a.ListTasksParams{PageSize: 1}},
		{`{"page_size":100}`, a2a.ListTasksParams{PageSize: 100}},
		{`{"last_updated_after":"2026-03-01T12:00:00Z"}`, a2a.ListTasksParams{StatusTimestampAfter: wiretest.TimeP(t, "2026-03-01T12:00:00Z")}},
	}
	for _, tc := range tests {
		wiretest.CheckListParams(t, "DecodeListTasks", v03.DecodeListTasks, tc.params, tc.want)
	}
	for _, st := range []a2a.TaskState{a2a.StateSubmitted, a2a.StateWorking, a2a.StateInputRequired, a2a.StateAuthRequired,
		a2a.StateCompleted, a2a.StateCanceled, a2a.StateFailed, a2a.StateRejected, a2a.StateUnknown} {
		got, err := v03.DecodeListTasks(json.RawMessage(`{"status":"` + string(st) + `"}`))
		if err != nil || got.Status != st {
			t.Errorf("status %q: %+v, %v", st, got, err)
		}
	}
}

const stateProblem03 = `must be a task state: "submitted", "working", "input-required", "auth-required", "completed", "canceled", "failed", "rejected" or "unknown"`

const unknownList03 = "is not a tasks/list param; they are context_id, status, page_size, page_token, history_length, last_updated_after and include_artifacts"

func TestDecodeListTasksProblems(t *testing.T) {
	tests := []struct {
		params string
		want   []a2a.Problem
	}{
		{`[]`, []a2a.Problem{wiretest.Prob("/", "must be an object, not an array")}},
		{`"x"`, []a2a.Problem{wiretest.Prob("/", "must be an object, not a string")}},
		{`{`, []a2a.Problem{wiretest.Prob("/", "must be an object")}},
		{`{"context_id":1}`, []a2a.Problem{wiretest.Prob("/context_id", "must be a string, not a number")}},
		{`{"status":"TASK_STATE_WORKING"}`, []a2a.Problem{wiretest.Prob("/status", stateProblem03)}},
		{`{"status":"Working"}`, []a2a.Problem{wiretest.Prob("/status", stateProblem03)}},
		{`{"status":2}`, []a2a.Problem{wiretest.Prob("/status", "must be a string, not a number")}},
		{`{"page_size":0.5}`, []a2a.Problem{wiretest.Prob("/page_size", "must be an integer")}},
		{`{"page_size":"7"}`, []a2a.Problem{wiretest.Prob("/page_size", "must be an integer")}},
		{`{"page_size":101}`, []a2a.Problem{wiretest.Prob("/page_size", "must be from 1 to 100, not 101")}},
		{`{"page_size":-1}`, []a2a.Problem{wiretest.Prob("/page_size", "must be from 1 to 100, not -1")}},
		{`{"page_token":7}`, []a2a.Problem{wiretest.Prob("/page_token", "must be a string, not a number")}},
		{`{"history_length":-1}`, []a2a.Problem{wiretest.Prob("/history_length", "must not be negative")}},
		{`{"history_length":"2"}`, []a2a.Problem{wiretest.Prob("/history_length", "must be an integer")}},
		{`{"last_updated_after":"2026-03-01"}`, []a2a.Problem{wiretest.Prob("/last_updated_after", wiretest.TimeProblem)}},
		{`{"last_updated_after":"2026-03-01T12:00:00"}`, []a2a.Problem{wiretest.Prob("/last_updated_after", wiretest.TimeProblem)}},
		{`{"last_updated_after":1767268800000}`, []a2a.Problem{wiretest.Prob("/last_updated_after", "must be a string, not a number")}},
		{`{"include_artifacts":"true"}`, []a2a.Problem{wiretest.Prob("/include_artifacts", "must be a boolean, not a string")}},
		{`{"context_id":[],"status":"x","page_size":1000,"page_token":{},"history_length":-2,"last_updated_after":"now","include_artifacts":1}`,
			[]a2a.Problem{
				wiretest.Prob("/context_id", "must be a string, not an array"),
				wiretest.Prob("/status", stateProblem03),
				wiretest.Prob("/page_size", "must be from 1 to 100, not 1000"),
				wiretest.Prob("/page_token", "must be a string, not an object"),
				wiretest.Prob("/history_length", "must not be negative"),
				wiretest.Prob("/last_updated_after", wiretest.TimeProblem),
				wiretest.Prob("/include_artifacts", "must be a boolean, not a number"),
			}},
		// Unknown members are named, each once, after the other problems;
		// camelCase ones with the member they were likely meant as.
		{`{"foo":1}`, []a2a.Problem{wiretest.Prob("/foo", unknownList03)}},
		{`{"pageSize":5,"page_token":7,"contextId":"c","a/b~c":null,"statusTimestampAfter":"2026-03-01T12:00:00Z"}`, []a2a.Problem{
			wiretest.Prob("/page_token", "must be a string, not a number"),
			wiretest.Prob("/pageSize", `is not a tasks/list param: did you mean "page_size"? (tasks/list, a2a-go's extension of 0.3, spells its params in snake_case)`),
			wiretest.Prob("/contextId", `is not a tasks/list param: did you mean "context_id"? (tasks/list, a2a-go's extension of 0.3, spells its params in snake_case)`),
			wiretest.Prob("/a~1b~0c", unknownList03),
			wiretest.Prob("/statusTimestampAfter", unknownList03),
		}},
		{`{"metadata":{}}`, []a2a.Problem{wiretest.Prob("/metadata", unknownList03)}},
	}
	for _, tc := range tests {
		_, err := v03.DecodeListTasks(json.RawMessage(tc.params))
		t.Run(tc.params, func(t *testing.T) { wiretest.CheckInvalidParams(t, err, tc.want...) })
	}
}

func TestAppendListTasksResult(t *testing.T) {
	r := a2a.ListTasksResult{
		Tasks: []a2a.Task{
			{ID: "t2", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking, Timestamp: "2026-03-01T12:00:00.000Z"}},
			{ID: "t1", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted}},
		},
		TotalSize: 9, PageSize: 2, NextPageToken: "AQ-_",
	}
	got, err := v03.AppendListTasksResult([]byte("x"), &r)
	want := `x{"tasks":[{"kind":"task","id":"t2","contextId":"c","status":{"state":"working","timestamp":"2026-03-01T12:00:00.000Z"}},` +
		`{"kind":"task","id":"t1","contextId":"c","status":{"state":"completed"}}],"total_size":9,"page_size":2,"next_page_token":"AQ-_"}`
	if err != nil || string(got) != want {
		t.Fatalf("AppendListTasksResult =\n%s, %v\nwant\n%s", got, err, want)
	}
	// The last page: no tasks, and every member still there.
	got, err = v03.AppendListTasksResult(nil, &a2a.ListTasksResult{PageSize: 50})
	if want := `{"tasks":[],"total_size":0,"page_size":50,"next_page_token":""}`; err != nil || string(got) != want {
		t.Fatalf("empty page = %s, %v; want %s", got, err, want)
	}
	bad := a2a.ListTasksResult{Tasks: []a2a.Task{{ID: "t", Status: a2a.TaskStatus{State: a2a.StateWorking},
		History: []a2a.Message{{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{{Kind: "bogus"}}}}}}}
	if _, err := v03.AppendListTasksResult(nil, &bad); err == nil {
		t.Fatal("a task that cannot be encoded: no error")
	}
}

func TestDecodedDataIsOwned(t *testing.T) {
	wiretest.DataOwned(t, `{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"a":1}}]}}`, v03.DecodeSendParams)
}
