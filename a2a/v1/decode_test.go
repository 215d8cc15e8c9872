package v1_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"

	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

func withPartsV1(parts string) string {
	return wiretest.SendParams10(map[string]string{"parts": parts}, "")
}

func withConfV1(conf string) string { return wiretest.SendParams10(nil, `"configuration":`+conf) }

// decodeSendParamsV1Cases are bad SendMessage params, each with the
// problems it must report. FuzzDecodeSendParamsV1 seeds its corpus with
// them.
var decodeSendParamsV1Cases = wiretest.NamedRefusals{
	{"params missing", "", []a2a.Problem{wiretest.Prob("/", "is required")}},
	{"params null", "null", []a2a.Problem{wiretest.Prob("/", "is required")}},
	{"params array", `[{"message":{}}]`, []a2a.Problem{wiretest.Prob("/", "must be an object, not an array")}},
	{"params string", `"hi"`, []a2a.Problem{wiretest.Prob("/", "must be an object, not a string")}},
	{"params invalid JSON", `{"message":`, []a2a.Problem{wiretest.Prob("/", "must be an object")}},
	{"message missing", `{}`, []a2a.Problem{wiretest.Prob("/message", "is required")}},
	{"message null", `{"message":null}`, []a2a.Problem{wiretest.Prob("/message", "is required")}},
	{"message array", `{"message":[]}`, []a2a.Problem{wiretest.Prob("/message", "must be an object, not an array")}},
	{"tenant number", wiretest.SendParams10(nil, `"tenant":5`), []a2a.Problem{wiretest.Prob("/tenant", "must be a string, not a number")}},
	{"messageId missing", wiretest.SendParams10(map[string]string{"messageId": ""}, ""),
		[]a2a.Problem{wiretest.Prob("/message/messageId", "is required")}},
	{"messageId empty", wiretest.SendParams10(map[string]string{"messageId": `""`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/messageId", "must not be empty")}},
	{"messageId number", wiretest.SendParams10(map[string]string{"messageId": `12`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/messageId", "must be a string, not a number")}},
	{"contextId number", wiretest.SendParams10(map[string]string{"contextId": `1`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/contextId", "must be a string, not a number")}},
	{"taskId object", wiretest.SendParams10(map[string]string{"taskId": `{}`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/taskId", "must be a string, not an object")}},
	{"role missing", wiretest.SendParams10(map[string]string{"role": ""}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", "is required")}},
	{"role null", wiretest.SendParams10(map[string]string{"role": "null"}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", "is required")}},
	{"role 0.3 spelling", wiretest.SendParams10(map[string]string{"role": `"user"`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", `must be "ROLE_USER" or "ROLE_AGENT"`)}},
	{"role unspecified", wiretest.SendParams10(map[string]string{"role": `"ROLE_UNSPECIFIED"`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", `must be "ROLE_USER" or "ROLE_AGENT"`)}},
	{"role lower case", wiretest.SendParams10(map[string]string{"role": `"role_user"`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", `must be "ROLE_USER" or "ROLE_AGENT"`)}},
	{"role number 0", wiretest.SendParams10(map[string]string{"role": `0`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", `must be "ROLE_USER" or "ROLE_AGENT"`)}},
	{"role number 3", wiretest.SendParams10(map[string]string{"role": `3`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", `must be "ROLE_USER" or "ROLE_AGENT"`)}},
	{"role number 1.0", wiretest.SendParams10(map[string]string{"role": `1.0`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", `must be "ROLE_USER" or "ROLE_AGENT"`)}},
	{"role boolean", wiretest.SendParams10(map[string]string{"role": `true`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/role", `must be "ROLE_USER" or "ROLE_AGENT", not a boolean`)}},
	{"parts missing", wiretest.SendParams10(map[string]string{"parts": ""}, ""),
		[]a2a.Problem{wiretest.Prob("/message/parts", "is required")}},
	{"parts null", withPartsV1(`null`), []a2a.Problem{wiretest.Prob("/message/parts", "is required")}},
	{"parts object", withPartsV1(`{"text":"hi"}`), []a2a.Problem{wiretest.Prob("/message/parts", "must be an array, not an object")}},
	{"parts empty", withPartsV1(`[]`), []a2a.Problem{wiretest.Prob("/message/parts", "must not be empty")}},
	{"part string", withPartsV1(`["hi"]`), []a2a.Problem{wiretest.Prob("/message/parts/0", "must be an object, not a string")}},
	{"part null", withPartsV1(`[null]`), []a2a.Problem{wiretest.Prob("/message/parts/0", "is required")}},
	{"part empty", withPartsV1(`[{}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0", `must have one of "text", "raw", "url" or "data"`)}},
	{"part with only nulls", withPartsV1(`[{"text":null,"raw":null,"url":null}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0", `must have one of "text", "raw", "url" or "data"`)}},
	{"0.3 file part", withPartsV1(`[{"kind":"text","text":"hi"},{"kind":"file","file":{"uri":"https://x"}}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/1", `must have one of "text", "raw", "url" or "data"`)}},
	{"part text and data", withPartsV1(`[{"text":"a","data":{}}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0", `must have only one of "text", "raw", "url" and "data"`)}},
	{"part raw and url", withPartsV1(`[{"raw":"aGk=","url":"https://x"}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0", `must have only one of "text", "raw", "url" and "data"`)}},
	{"part text and null data", withPartsV1(`[{"text":"a","data":null}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0", `must have only one of "text", "raw", "url" and "data"`)}},
	{"text number", withPartsV1(`[{"text":5}]`), []a2a.Problem{wiretest.Prob("/message/parts/0/text", "must be a string, not a number")}},
	{"data array", withPartsV1(`[{"data":[1,2]}]`), []a2a.Problem{wiretest.Prob("/message/parts/0/data", "must be an object, not an array")}},
	{"data string", withPartsV1(`[{"data":"{}"}]`), []a2a.Problem{wiretest.Prob("/message/parts/0/data", "must be an object, not a string")}},
	{"data number", withPartsV1(`[{"data":1}]`), []a2a.Problem{wiretest.Prob("/message/parts/0/data", "must be an object, not a number")}},
	{"data boolean", withPartsV1(`[{"data":false}]`), []a2a.Problem{wiretest.Prob("/message/parts/0/data", "must be an object, not a boolean")}},
	{"data null", withPartsV1(`[{"data":null}]`), []a2a.Problem{wiretest.Prob("/message/parts/0/data", "must be an object, not null")}},
	{"raw empty", withPartsV1(`[{"raw":""}]`), []a2a.Problem{wiretest.Prob("/message/parts/0/raw", "must not be empty")}},
	{"raw not base64", withPartsV1(`[{"raw":"not base64!"}]`), []a2a.Problem{wiretest.Prob("/message/parts/0/raw", "must be base64")}},
	{"raw number", withPartsV1(`[{"raw":12}]`), []a2a.Problem{wiretest.Prob("/message/parts/0/raw", "must be a string, not a number")}},
	{"url empty", withPartsV1(`[{"url":""}]`), []a2a.Problem{wiretest.Prob("/message/parts/0/url", "must not be empty")}},
	{"url array", withPartsV1(`[{"url":["https://x"]}]`), []a2a.Problem{wiretest.Prob("/message/parts/0/url", "must be a string, not an array")}},
	{"mediaType number", withPartsV1(`[{"url":"https://x","mediaType":1}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/mediaType", "must be a string, not a number")}},
	{"filename boolean on text", withPartsV1(`[{"text":"x","filename":true}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/filename", "must be a string, not a boolean")}},
	{"part metadata array", withPartsV1(`[{"text":"x","metadata":[]}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/0/metadata", "must be an object, not an array")}},
	{"second part bad", withPartsV1(`[{"text":"a"},{"raw":"%%%"}]`),
		[]a2a.Problem{wiretest.Prob("/message/parts/1/raw", "must be base64")}},
	{"message metadata string", wiretest.SendParams10(map[string]string{"metadata": `"x"`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/metadata", "must be an object, not a string")}},
	{"extensions not strings", wiretest.SendParams10(map[string]string{"extensions": `[1]`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/extensions", "must be an array of strings")}},
	{"referenceTaskIds string", wiretest.SendParams10(map[string]string{"referenceTaskIds": `"t"`}, ""),
		[]a2a.Problem{wiretest.Prob("/message/referenceTaskIds", "must be an array of strings")}},
	{"configuration string", withConfV1(`"x"`), []a2a.Problem{wiretest.Prob("/configuration", "must be an object, not a string")}},
	{"acceptedOutputModes string", withConfV1(`{"acceptedOutputModes":"text/plain"}`),
		[]a2a.Problem{wiretest.Prob("/configuration/acceptedOutputModes", "must be an array of strings")}},
	{"returnImmediately string", withConfV1(`{"returnImmediately":"true"}`),
		[]a2a.Problem{wiretest.Prob("/configuration/returnImmediately", "must be a boolean, not a string")}},
	{"historyLength negative", withConfV1(`{"historyLength":-1}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must not be negative")}},
	{"historyLength fraction", withConfV1(`{"historyLength":1.5}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must be an integer")}},
	{"historyLength too large", withConfV1(`{"historyLength":2147483648}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must be at most 2147483647")}},
	{"historyLength huge", withConfV1(`{"historyLength":1e400}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must be at most 2147483647")}},
	{"historyLength bad string", withConfV1(`{"historyLength":"three"}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must be an integer")}},
	{"historyLength padded string", withConfV1(`{"historyLength":" 3"}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must be an integer")}},
	{"historyLength empty string", withConfV1(`{"historyLength":""}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must be an integer")}},
	{"historyLength hex string", withConfV1(`{"historyLength":"0x10"}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must be an integer")}},
	{"historyLength negative string", withConfV1(`{"historyLength":"-2"}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must not be negative")}},
	{"historyLength boolean", withConfV1(`{"historyLength":true}`),
		[]a2a.Problem{wiretest.Prob("/configuration/historyLength", "must be an integer")}},
	{"push config string", withConfV1(`{"taskPushNotificationConfig":"https://x"}`),
		[]a2a.Problem{wiretest.Prob("/configuration/taskPushNotificationConfig", "must be an object, not a string")}},
	{"push config without url", withConfV1(`{"taskPushNotificationConfig":{}}`),
		[]a2a.Problem{wiretest.Prob("/configuration/taskPushNotificationConfig/url", "is required")}},
	{"push config empty url", withConfV1(`{"taskPushNotificationConfig":{"url":""}}`),
		[]a2a.Problem{wiretest.Prob("/configuration/taskPushNotificationConfig/url", "must not be empty")}},
	{"push config other task", withConfV1(`{"taskPushNotificationConfig":{"taskId":"t9","url":"https://x"}}`),
		[]a2a.Problem{wiretest.Prob("/configuration/taskPushNotificationConfig/taskId", "must be empty or the message's taskId")}},
	{"push config 0.3 auth", withConfV1(`{"taskPushNotificationConfig":{"url":"https://x","authentication":{"schemes":["Bearer"]}}}`),
		[]a2a.Problem{wiretest.Prob("/configuration/taskPushNotificationConfig/authentication/scheme", "is required")}},
	{"push config empty scheme", withConfV1(`{"taskPushNotificationConfig":{"url":"https://x","authentication":{"scheme":""}}}`),
		[]a2a.Problem{wiretest.Prob("/configuration/taskPushNotificationConfig/authentication/scheme", "must not be empty")}},
	{"push config fields", withConfV1(`{"taskPushNotificationConfig":{"tenant":1,"id":2,"url":"https://x","token":3,"authentication":{"scheme":"Bearer","credentials":4}}}`),
		[]a2a.Problem{
			wiretest.Prob("/configuration/taskPushNotificationConfig/tenant", "must be a string, not a number"),
			wiretest.Prob("/configuration/taskPushNotificationConfig/id", "must be a string, not a number"),
			wiretest.Prob("/configuration/taskPushNotificationConfig/token", "must be a string, not a number"),
			wiretest.Prob("/configuration/taskPushNotificationConfig/authentication/credentials", "must be a string, not a number"),
		}},
	{"metadata array", wiretest.SendParams10(nil, `"metadata":[]`), []a2a.Problem{wiretest.Prob("/metadata", "must be an object, not an array")}},
	// A 0.3 text or data part reads as a 1.0 one (kind is an unknown
	// member); a 0.3 file part has none of the 1.0 members.
	{"a 0.3 request", `{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"},{"kind":"file","file":{"uri":"https://x"}}]},"configuration":{"blocking":false}}`,
		[]a2a.Problem{
			wiretest.Prob("/message/role", `must be "ROLE_USER" or "ROLE_AGENT"`),
			wiretest.Prob("/message/parts/1", `must have one of "text", "raw", "url" or "data"`),
		}},
	{"several problems", `{"tenant":[],"message":{"messageId":"","role":"bot","parts":[{"text":1},{},{"data":[]},{"raw":"??"}]},` +
		`"configuration":{"returnImmediately":1,"historyLength":-1},"metadata":3}`,
		[]a2a.Problem{
			wiretest.Prob("/tenant", "must be a string, not an array"),
			wiretest.Prob("/message/messageId", "must not be empty"),
			wiretest.Prob("/message/role", `must be "ROLE_USER" or "ROLE_AGENT"`),
			wiretest.Prob("/message/parts/0/text", "must be a string, not a number"),
			wiretest.Prob("/message/parts/1", `must have one of "text", "raw", "url" or "data"`),
			wiretest.Prob("/message/parts/2/data", "must be an object, not an array"),
			wiretest.Prob("/message/parts/3/raw", "must be base64"),
			wiretest.Prob("/configuration/historyLength", "must not be negative"),
			wiretest.Prob("/configuration/returnImmediately", "must be a boolean, not a number"),
			wiretest.Prob("/metadata", "must be an object, not a number"),
		}},
}

func TestDecodeSendParamsV1Problems(t *testing.T) {
	wiretest.CheckNamedRefusals(t, v1.DecodeSendParams, decodeSendParamsV1Cases)
}

func TestDecodeSendParamsV1Good(t *testing.T) {
	raw := json.RawMessage(`{
		"tenant": "ignored",
		"message": {
			"messageId": "m-1", "contextId": "ctx-1", "taskId": "task-1", "role": "ROLE_USER",
			"referenceTaskIds": ["task-0"], "extensions": ["https://example.com/ext/v1"],
			"metadata": {"trace": "abc", "n": 2},
			"kind": "message", "unknownField": [1],
			"parts": [
				{"text": "hello", "metadata": {"lang": "en"}, "mediaType": "text/markdown"},
				{"data": {"a": [1, 2], "b": null}, "mediaType": "application/json", "filename": "in.json"},
				{"raw": "aGk=", "mediaType": "text/plain", "filename": "a.txt"},
				{"url": "https://example.com/b.pdf", "filename": "b.pdf"},
				{"raw": "-_8", "text": null},
				{"text": ""}
			]
		},
		"configuration": {
			"acceptedOutputModes": ["application/json"],
			"taskPushNotificationConfig": {"taskId": "task-1", "id": "cfg", "url": "https://hooks.example.com", "token": "tok",
				"authentication": {"scheme": "Bearer", "credentials": "secret"}},
			"historyLength": "0",
			"returnImmediately": true,
			"blocking": true
		},
		"metadata": {"x": true}
	}`)
	p, err := v1.DecodeSendParams(raw)
	if err != nil {
		t.Fatalf("DecodeSendParamsV1 error = %#v", err)
	}
	blocking, history := false, 0
	want := a2a.SendParams{
		Message: a2a.Message{
			MessageID: "m-1", ContextID: "ctx-1", TaskID: "task-1", Role: a2a.RoleUser,
			ReferenceTaskIDs: []string{"task-0"}, Extensions: []string{"https://example.com/ext/v1"},
			Metadata: map[string]any{"trace": "abc", "n": float64(2)},
			Parts: []a2a.Part{
				{Kind: a2a.PartText, Text: "hello", Metadata: map[string]any{"lang": "en"}},
				{Kind: a2a.PartData, Data: json.RawMessage(`{"a": [1, 2], "b": null}`)},
				{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "a.txt", MimeType: "text/plain", Bytes: "aGk="}},
				{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "b.pdf", URI: "https://example.com/b.pdf"}},
				{Kind: a2a.PartFile, File: &a2a.FileContent{Bytes: "+/8="}},
				{Kind: a2a.PartText, Text: ""},
			},
		},
		Blocking:            &blocking,
		HistoryLength:       &history,
		AcceptedOutputModes: []string{"application/json"},
		PushConfig: &a2a.PushConfig{ID: "cfg", URL: "https://hooks.example.com", Token: "tok",
			Authentication: &a2a.PushAuth{Schemes: []string{"Bearer"}, Credentials: "secret"}},
		Metadata: map[string]any{"x": true},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("DecodeSendParamsV1 =\n%#v\nwant\n%#v", p, want)
	}
}

func TestDecodeSendParamsV1Blocking(t *testing.T) {
	for _, tc := range []struct {
		conf string
		want *bool // nil: unset
	}{
		{``, nil},
		{`"configuration":null`, nil},
		{`"configuration":{}`, nil},
		{`"configuration":{"returnImmediately":null}`, nil},
		{`"configuration":{"returnImmediately":false}`, ptr(true)},
		{`"configuration":{"returnImmediately":true}`, ptr(false)},
		{`"configuration":{"blocking":false}`, nil}, // a 0.3 member, ignored in 1.0
	} {
		p, err := v1.DecodeSendParams(json.RawMessage(wiretest.SendParams10(nil, tc.conf)))
		if err != nil {
			t.Fatalf("%s: %v", tc.conf, err)
		}
		if !reflect.DeepEqual(p.Blocking, tc.want) {
			t.Errorf("%s: Blocking = %v, want %v", tc.conf, deref(p.Blocking), deref(tc.want))
		}
	}
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestDecodeSendParamsV1EnumsAndInts(t *testing.T) {
	tests := []struct {
		role    string
		want    a2a.Role
		history string
		wantH   int
	}{
		{`"ROLE_USER"`, a2a.RoleUser, `3`, 3},
		{`"ROLE_AGENT"`, a2a.RoleAgent, `"7"`, 7},
		{`1`, a2a.RoleUser, `2147483647`, 2147483647},
		{`2`, a2a.RoleAgent, `5.0`, 5},
		{`1`, a2a.RoleUser, `1e2`, 100},
		{`1`, a2a.RoleUser, `"1e2"`, 100},
		{`1`, a2a.RoleUser, `-0`, 0},
	}
	for _, tc := range tests {
		raw := wiretest.SendParams10(map[string]string{"role": tc.role}, `"configuration":{"historyLength":`+tc.history+`}`)
		p, err := v1.DecodeSendParams(json.RawMessage(raw))
		if err != nil {
			t.Errorf("role %s, historyLength %s: %v", tc.role, tc.history, err)
			continue
		}
		if p.Message.Role != tc.want || p.HistoryLength == nil || *p.HistoryLength != tc.wantH {
			t.Errorf("role %s, historyLength %s: got %q, %v; want %q, %d", tc.role, tc.history, p.Message.Role, deref(p.HistoryLength), tc.want, tc.wantH)
		}
	}
}

func TestDecodeSendParamsV1Base64(t *testing.T) {
	// ProtoJSON reads bytes in standard or URL-safe base64, padded or not;
	// the core keeps standard padded base64.
	for _, tc := range []struct{ in, want string }{
		{"aGk=", "aGk="},
		{"aGk", "aGk="},
		{"+/8=", "+/8="},
		{"-_8=", "+/8="},
		{"-_8", "+/8="},
		{"AAAA", "AAAA"},
	} {
		p, err := v1.DecodeSendParams(json.RawMessage(withPartsV1(`[{"raw":"` + tc.in + `"}]`)))
		if err != nil {
			t.Errorf("raw %q: %v", tc.in, err)
			continue
		}
		if got := p.Message.Parts[0].File.Bytes; got != tc.want {
			t.Errorf("raw %q: Bytes = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"a", "aGk==", "a=Gk", "a b", "é"} {
		_, err := v1.DecodeSendParams(json.RawMessage(withPartsV1(`[{"raw":"` + bad + `"}]`)))
		wiretest.CheckInvalidParams(t, err, wiretest.Prob("/message/parts/0/raw", "must be base64"))
	}
}

func TestDecodeTaskQueryV1(t *testing.T) {
	wiretest.CheckRefusals(t, v1.DecodeTaskQuery, wiretest.Refusals{
		{"", []a2a.Problem{wiretest.Prob("/", "is required")}},
		{`[]`, []a2a.Problem{wiretest.Prob("/", "must be an object, not an array")}},
		{`{}`, []a2a.Problem{wiretest.Prob("/id", "is required")}},
		{`{"id":""}`, []a2a.Problem{wiretest.Prob("/id", "must not be empty")}},
		{`{"id":42}`, []a2a.Problem{wiretest.Prob("/id", "must be a string, not a number")}},
		{`{"name":"tasks/t1"}`, []a2a.Problem{wiretest.Prob("/id", "is required")}},
		{`{"id":"t1","historyLength":-1}`, []a2a.Problem{wiretest.Prob("/historyLength", "must not be negative")}},
		{`{"id":"t1","historyLength":"x"}`, []a2a.Problem{wiretest.Prob("/historyLength", "must be an integer")}},
		{`{"tenant":false,"id":7,"historyLength":0.5}`, []a2a.Problem{
			wiretest.Prob("/tenant", "must be a string, not a boolean"),
			wiretest.Prob("/id", "must be a string, not a number"),
			wiretest.Prob("/historyLength", "must be an integer"),
		}},
	})
	for _, tc := range []struct {
		params string
		want   a2a.TaskQuery
	}{
		{`{"id":"t1"}`, a2a.TaskQuery{ID: "t1"}},
		{`{"id":"t1","historyLength":null,"tenant":"x"}`, a2a.TaskQuery{ID: "t1"}},
		{`{"id":"t1","historyLength":0}`, a2a.TaskQuery{ID: "t1", HistoryLength: ptr(0)}},
		{`{"id":"t1","historyLength":"12"}`, a2a.TaskQuery{ID: "t1", HistoryLength: ptr(12)}},
	} {
		q, err := v1.DecodeTaskQuery(json.RawMessage(tc.params))
		if err != nil || !reflect.DeepEqual(q, tc.want) {
			t.Errorf("DecodeTaskQueryV1(%s) = %+v, %v; want %+v", tc.params, q, err, tc.want)
		}
	}
}

func TestDecodeTaskIDParamsV1(t *testing.T) {
	wiretest.CheckRefusals(t, v1.DecodeTaskIDParams, wiretest.Refusals{
		{"", []a2a.Problem{wiretest.Prob("/", "is required")}},
		{`"t1"`, []a2a.Problem{wiretest.Prob("/", "must be an object, not a string")}},
		{`{}`, []a2a.Problem{wiretest.Prob("/id", "is required")}},
		{`{"id":""}`, []a2a.Problem{wiretest.Prob("/id", "must not be empty")}},
		{`{"id":"t","metadata":"x"}`, []a2a.Problem{wiretest.Prob("/metadata", "must be an object, not a string")}},
		{`{"taskId":"t"}`, []a2a.Problem{wiretest.Prob("/id", "is required")}},
	})
	p, err := v1.DecodeTaskIDParams(json.RawMessage(`{"tenant":"","id":"t1","metadata":{"a2ad.lastEventId":4}}`))
	want := a2a.TaskIDParams{ID: "t1", Metadata: map[string]any{"a2ad.lastEventId": float64(4)}}
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Errorf("DecodeTaskIDParamsV1 = %+v, %v; want %+v", p, err, want)
	}
}

func TestDecodePushCreateV1(t *testing.T) {
	wiretest.CheckRefusals(t, v1.DecodePushCreate, wiretest.Refusals{
		{"", []a2a.Problem{wiretest.Prob("/", "is required")}},
		{`{}`, []a2a.Problem{wiretest.Prob("/taskId", "is required"), wiretest.Prob("/url", "is required")}},
		{`{"taskId":"","url":""}`, []a2a.Problem{wiretest.Prob("/taskId", "must not be empty"), wiretest.Prob("/url", "must not be empty")}},
		{`{"taskId":"t","pushNotificationConfig":{"url":"https://x"}}`, []a2a.Problem{wiretest.Prob("/url", "is required")}},
		{`{"taskId":"t","url":"https://x","authentication":"Bearer"}`, []a2a.Problem{wiretest.Prob("/authentication", "must be an object, not a string")}},
		{`{"taskId":"t","url":"https://x","authentication":{"credentials":"c"}}`, []a2a.Problem{wiretest.Prob("/authentication/scheme", "is required")}},
		{`{"taskId":"t","url":"https://x","authentication":{"scheme":["Bearer"]}}`, []a2a.Problem{wiretest.Prob("/authentication/scheme", "must be a string, not an array")}},
		{`{"tenant":1,"taskId":2,"id":3,"url":4,"token":5}`, []a2a.Problem{
			wiretest.Prob("/tenant", "must be a string, not a number"),
			wiretest.Prob("/taskId", "must be a string, not a number"),
			wiretest.Prob("/id", "must be a string, not a number"),
			wiretest.Prob("/url", "must be a string, not a number"),
			wiretest.Prob("/token", "must be a string, not a number"),
		}},
	})
	p, err := v1.DecodePushCreate(json.RawMessage(`{"taskId":"t1","url":"https://x"}`))
	want := a2a.PushConfigParams{TaskID: "t1", Config: a2a.PushConfig{URL: "https://x"}}
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Errorf("DecodePushCreateV1 = %+v, %v; want %+v", p, err, want)
	}
}

func TestDecodePushRefV1(t *testing.T) {
	wiretest.CheckRefusals(t, v1.DecodePushRef, wiretest.Refusals{
		{"", []a2a.Problem{wiretest.Prob("/", "is required")}},
		{`{}`, []a2a.Problem{wiretest.Prob("/taskId", "is required"), wiretest.Prob("/id", "is required")}},
		{`{"taskId":"t"}`, []a2a.Problem{wiretest.Prob("/id", "is required")}},
		{`{"id":"t","pushNotificationConfigId":"c"}`, []a2a.Problem{wiretest.Prob("/taskId", "is required")}},
		{`{"taskId":"","id":""}`, []a2a.Problem{wiretest.Prob("/taskId", "must not be empty"), wiretest.Prob("/id", "must not be empty")}},
		{`{"taskId":1,"id":true}`, []a2a.Problem{wiretest.Prob("/taskId", "must be a string, not a number"), wiretest.Prob("/id", "must be a string, not a boolean")}},
	})
	p, err := v1.DecodePushRef(json.RawMessage(`{"tenant":"x","taskId":"t1","id":"c1"}`))
	if want := (a2a.PushConfigParams{TaskID: "t1", ConfigID: "c1"}); err != nil || !reflect.DeepEqual(p, want) {
		t.Errorf("DecodePushRefV1 = %+v, %v; want %+v", p, err, want)
	}
}

func TestDecodePushListV1(t *testing.T) {
	wiretest.CheckRefusals(t, v1.DecodePushList, wiretest.Refusals{
		{"", []a2a.Problem{wiretest.Prob("/", "is required")}},
		{`{}`, []a2a.Problem{wiretest.Prob("/taskId", "is required")}},
		{`{"id":"t"}`, []a2a.Problem{wiretest.Prob("/taskId", "is required")}},
		{`{"taskId":"t","pageSize":-1}`, []a2a.Problem{wiretest.Prob("/pageSize", "must not be negative")}},
		{`{"taskId":"t","pageSize":"ten"}`, []a2a.Problem{wiretest.Prob("/pageSize", "must be an integer")}},
		{`{"taskId":"t","pageToken":1}`, []a2a.Problem{wiretest.Prob("/pageToken", "must be a string, not a number")}},
	})
	for _, tc := range []struct {
		params string
		want   v1.PushListParams
	}{
		{`{"taskId":"t1"}`, v1.PushListParams{TaskID: "t1"}},
		{`{"taskId":"t1","pageSize":10,"pageToken":"abc"}`, v1.PushListParams{TaskID: "t1", PageSize: 10, PageToken: "abc"}},
		{`{"taskId":"t1","pageSize":"3","pageToken":null}`, v1.PushListParams{TaskID: "t1", PageSize: 3}},
	} {
		p, err := v1.DecodePushList(json.RawMessage(tc.params))
		if err != nil || p != tc.want {
			t.Errorf("DecodePushListV1(%s) = %+v, %v; want %+v", tc.params, p, err, tc.want)
		}
	}
}

func TestDecodeNoParamsV1(t *testing.T) {
	for _, good := range []string{"", "null", "{}", `{"tenant":"x"}`, ` { "other" : [1] } `} {
		if err := v1.DecodeNoParams(wiretest.RawOrNil(good)); err != nil {
			t.Errorf("DecodeNoParamsV1(%q) = %v, want nil", good, err)
		}
	}
	for _, tc := range []struct {
		params string
		want   a2a.Problem
	}{
		{`[]`, wiretest.Prob("/", "must be an object, not an array")},
		{`"x"`, wiretest.Prob("/", "must be an object, not a string")},
		{`{`, wiretest.Prob("/", "must be an object")},
		{`{"tenant":1}`, wiretest.Prob("/tenant", "must be a string, not a number")},
	} {
		wiretest.CheckInvalidParams(t, v1.DecodeNoParams(json.RawMessage(tc.params)), tc.want)
	}
}

// TestDecodeV1Golden pins, per decoder, what a request decodes to (the
// core value) or the whole 1.0 error response it leads to.
func TestDecodeV1Golden(t *testing.T) {
	decoders := map[string]func(json.RawMessage) (any, *a2a.Error){
		"send": func(r json.RawMessage) (any, *a2a.Error) { return v1.DecodeSendParams(r) },
		"get":  func(r json.RawMessage) (any, *a2a.Error) { return v1.DecodeTaskQuery(r) },
		"id":   func(r json.RawMessage) (any, *a2a.Error) { return v1.DecodeTaskIDParams(r) },
		"push_create": func(r json.RawMessage) (any, *a2a.Error) {
			return v1.DecodePushCreate(r)
		},
		"push_ref":  func(r json.RawMessage) (any, *a2a.Error) { return v1.DecodePushRef(r) },
		"push_list": func(r json.RawMessage) (any, *a2a.Error) { return v1.DecodePushList(r) },
		"none": func(r json.RawMessage) (any, *a2a.Error) {
			return struct{}{}, v1.DecodeNoParams(r)
		},
	}
	cases := []struct {
		name, decoder, params string
	}{
		{"send_full", "send", `{"tenant":"t","message":{"messageId":"m-1","contextId":"c","taskId":"t1","role":"ROLE_USER",` +
			`"parts":[{"text":"hi","metadata":{"a":1}},{"data":{"skill":"demo::echo","input":{}}},{"raw":"aGk","mediaType":"text/plain","filename":"a.txt"},{"url":"https://x/y"}],` +
			`"metadata":{"k":"v"},"extensions":["urn:e"],"referenceTaskIds":["t0"]},` +
			`"configuration":{"acceptedOutputModes":["text/plain"],"taskPushNotificationConfig":{"url":"https://hooks/x","token":"tok","authentication":{"scheme":"Bearer","credentials":"c"}},"historyLength":2,"returnImmediately":true},` +
			`"metadata":{"m":true}}`},
		{"send_minimal", "send", `{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}`},
		{"send_problems", "send", `{"message":{"messageId":"","role":"user","parts":[{"kind":"text","text":"x"},{"data":[1]}]},"configuration":{"historyLength":-2}}`},
		{"send_no_params", "send", ``},
		{"get", "get", `{"id":"t1","historyLength":3}`},
		{"get_problems", "get", `{"id":1,"historyLength":"x"}`},
		{"cancel", "id", `{"id":"t1","metadata":{"reason":"user"}}`},
		{"subscribe", "id", `{"id":"t1"}`},
		{"id_problems", "id", `{"id":""}`},
		{"push_create", "push_create", `{"taskId":"t1","id":"c1","url":"https://hooks/x","token":"tok","authentication":{"scheme":"Basic","credentials":"dXNlcjpwdw=="}}`},
		{"push_create_problems", "push_create", `{"taskId":"t1","pushNotificationConfig":{"url":"https://hooks/x"},"authentication":{}}`},
		{"push_get", "push_ref", `{"taskId":"t1","id":"c1"}`},
		{"push_ref_problems", "push_ref", `{"taskId":"t1","pushNotificationConfigId":"c1"}`},
		{"push_list", "push_list", `{"taskId":"t1","pageSize":10,"pageToken":""}`},
		{"push_list_problems", "push_list", `{"taskId":"t1","pageSize":1.5}`},
		{"extended_card", "none", `{}`},
		{"extended_card_problems", "none", `[]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := decoders[tc.decoder](wiretest.RawOrNil(tc.params))
			if err != nil {
				if !strings.HasSuffix(tc.name, "_problems") && tc.name != "send_no_params" {
					t.Fatalf("unexpected error %v", err)
				}
				golden(t, "decode/"+tc.name, v1.AppendError(nil, json.RawMessage(`1`), err))
				return
			}
			if strings.HasSuffix(tc.name, "_problems") {
				t.Fatalf("decoded %+v, want an error", v)
			}
			goldenValue(t, "decode/"+tc.name, v)
		})
	}
}

// roundTripMessages are core messages that 1.0 can carry exactly: data is
// compact, bytes are standard padded base64, file names and media types
// only on files.
func roundTripMessages() []a2a.Message {
	full := fullMessage()
	return []a2a.Message{
		full,
		{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("")}},
		{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{
			a2a.DataPart(json.RawMessage(`{}`)),
			a2a.DataPart(json.RawMessage(`{"a":{"b":[true,false,null,"\u003c"]}}`)),
			{Kind: a2a.PartFile, File: &a2a.FileContent{Bytes: "+/8="}},
			{Kind: a2a.PartFile, File: &a2a.FileContent{URI: "u", Name: "n"}, Metadata: map[string]any{"x": []any{1.0, "y"}}},
			a2a.TextPart("\x00\t\n\"\\ é 漢字 🙂"),
		}},
	}
}

// TestRoundTripV1 encodes core values in 1.0 and decodes them back.
func TestRoundTripV1(t *testing.T) {
	for i, m := range roundTripMessages() {
		b, err := v1.AppendMessage(nil, &m)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		p, perr := v1.DecodeSendParams(json.RawMessage(`{"message":` + string(b) + `}`))
		if perr != nil {
			t.Fatalf("message %d: decoding %s: %v", i, b, perr)
		}
		if !reflect.DeepEqual(p.Message, m) {
			t.Errorf("message %d round trip:\n got %#v\nwant %#v", i, p.Message, m)
		}
	}

	cfg := pushConfig()
	cfg.PushNotificationConfig.Authentication.Schemes = cfg.PushNotificationConfig.Authentication.Schemes[:1]
	for _, c := range []a2a.TaskPushConfig{cfg, {TaskID: "t", PushNotificationConfig: a2a.PushConfig{URL: "https://x"}}} {
		b, err := v1.AppendPushConfig(nil, &c)
		if err != nil {
			t.Fatal(err)
		}
		p, perr := v1.DecodePushCreate(b)
		if perr != nil {
			t.Fatalf("decoding %s: %v", b, perr)
		}
		if got := (a2a.TaskPushConfig{TaskID: p.TaskID, PushNotificationConfig: p.Config}); !reflect.DeepEqual(got, c) {
			t.Errorf("push config round trip:\n got %#v\nwant %#v", got, c)
		}
		// And inside SendMessage's configuration, for the message's task.
		m := a2a.Message{MessageID: "m", TaskID: c.TaskID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}
		mb, _ := v1.AppendMessage(nil, &m)
		sp, perr := v1.DecodeSendParams(json.RawMessage(`{"message":` + string(mb) + `,"configuration":{"taskPushNotificationConfig":` + string(b) + `}}`))
		if perr != nil {
			t.Fatalf("send with %s: %v", b, perr)
		}
		if sp.PushConfig == nil || !reflect.DeepEqual(*sp.PushConfig, c.PushNotificationConfig) {
			t.Errorf("send push config = %#v, want %#v", sp.PushConfig, c.PushNotificationConfig)
		}
	}
}

// TestCrossCodec checks a 0.3 request and a 1.0 request for the same
// message decode to the same core value, which each codec then writes
// back unchanged: the task store (0.3 JSON) does not care which version a
// message came in.
func TestCrossCodec(t *testing.T) {
	req03 := `{"message":{"kind":"message","messageId":"m-1","contextId":"c","role":"user","parts":[` +
		`{"kind":"text","text":"hi","metadata":{"a":1}},{"kind":"data","data":{"skill":"demo::echo"}},` +
		`{"kind":"file","file":{"name":"a.txt","mimeType":"text/plain","bytes":"aGk="}},{"kind":"file","file":{"uri":"https://x"}}],` +
		`"referenceTaskIds":["t0"],"extensions":["urn:e"],"metadata":{"k":"v"}},` +
		`"configuration":{"blocking":false,"historyLength":1,"acceptedOutputModes":["text/plain"],` +
		`"pushNotificationConfig":{"id":"c1","url":"https://hooks","token":"tok","authentication":{"schemes":["Bearer"],"credentials":"s"}}},"metadata":{"x":1}}`
	req10 := `{"message":{"messageId":"m-1","contextId":"c","role":"ROLE_USER","parts":[` +
		`{"text":"hi","metadata":{"a":1}},{"data":{"skill":"demo::echo"}},` +
		`{"raw":"aGk=","mediaType":"text/plain","filename":"a.txt"},{"url":"https://x"}],` +
		`"extensions":["urn:e"],"referenceTaskIds":["t0"],"metadata":{"k":"v"}},` +
		`"configuration":{"returnImmediately":true,"historyLength":1,"acceptedOutputModes":["text/plain"],` +
		`"taskPushNotificationConfig":{"id":"c1","url":"https://hooks","token":"tok","authentication":{"scheme":"Bearer","credentials":"s"}}},"metadata":{"x":1}}`
	a, err := v03.DecodeSendParams(json.RawMessage(req03))
	if err != nil {
		t.Fatal(err)
	}
	b, err := v1.DecodeSendParams(json.RawMessage(req10))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("0.3 and 1.0 decode differently:\n0.3 %#v\n1.0 %#v", a, b)
	}
	m03, _ := v03.AppendMessage(nil, &a.Message)
	m10, _ := v1.AppendMessage(nil, &b.Message)
	if !strings.Contains(req03, string(m03[len(`{"kind":"message",`):len(m03)-1])) {
		t.Errorf("0.3 re-encoding %s is not in the request %s", m03, req03)
	}
	if !strings.Contains(req10, string(m10[1:len(m10)-1])) {
		t.Errorf("1.0 re-encoding %s is not in the request %s", m10, req10)
	}
}

// TestPushConfigCaps: a push config's url, token and credentials are
// capped (issue 13 item 9: 1 MB of each was accepted), in every method of
// both versions that takes one, naming the field.
func TestPushConfigCaps(t *testing.T) {
	url := "https://hooks.example/" + strings.Repeat("u", a2a.MaxPushURLBytes-len("https://hooks.example/"))
	token := strings.Repeat("t", a2a.MaxPushTokenBytes)
	creds := strings.Repeat("c", a2a.MaxPushCredentialsBytes)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	shape03 := func(u, tok, cr string) string {
		return `{"url":` + q(u) + `,"token":` + q(tok) + `,"authentication":{"schemes":["Bearer"],"credentials":` + q(cr) + `}}`
	}
	shape10 := func(u, tok, cr string) string {
		return `"url":` + q(u) + `,"token":` + q(tok) + `,"authentication":{"scheme":"Bearer","credentials":` + q(cr) + `}`
	}
	decoders := []struct {
		name   string
		prefix string // of the fields' paths
		decode func(u, tok, cr string) *a2a.Error
	}{
		{"0.3 set", "/pushNotificationConfig", func(u, tok, cr string) *a2a.Error {
			_, err := v03.DecodePushSet(json.RawMessage(`{"taskId":"t1","pushNotificationConfig":` + shape03(u, tok, cr) + `}`))
			return err
		}},
		{"0.3 send", "/configuration/pushNotificationConfig", func(u, tok, cr string) *a2a.Error {
			_, err := v03.DecodeSendParams(json.RawMessage(wiretest.SendParams03(nil, `"configuration":{"pushNotificationConfig":`+shape03(u, tok, cr)+`}`)))
			return err
		}},
		{"1.0 create", "", func(u, tok, cr string) *a2a.Error {
			_, err := v1.DecodePushCreate(json.RawMessage(`{"taskId":"t1",` + shape10(u, tok, cr) + `}`))
			return err
		}},
		{"1.0 send", "/configuration/taskPushNotificationConfig", func(u, tok, cr string) *a2a.Error {
			_, err := v1.DecodeSendParams(json.RawMessage(wiretest.SendParams10(nil, `"configuration":{"taskPushNotificationConfig":{`+shape10(u, tok, cr)+`}}`)))
			return err
		}},
	}
	for _, d := range decoders {
		t.Run(d.name, func(t *testing.T) {
			if err := d.decode(url, token, creds); err != nil {
				t.Fatalf("at the caps: %v", err)
			}
			wiretest.CheckInvalidParams(t, d.decode(url+"u", token, creds), wiretest.Prob(d.prefix+"/url", "must be at most 2048 bytes"))
			wiretest.CheckInvalidParams(t, d.decode(url, token+"t", creds), wiretest.Prob(d.prefix+"/token", "must be at most 4096 bytes"))
			wiretest.CheckInvalidParams(t, d.decode(url, token, creds+"c"), wiretest.Prob(d.prefix+"/authentication/credentials", "must be at most 4096 bytes"))
			big := strings.Repeat("x", 1<<20) // the attack: a megabyte each
			wiretest.CheckInvalidParams(t, d.decode(url+big, token+big, creds),
				wiretest.Prob(d.prefix+"/url", "must be at most 2048 bytes"), wiretest.Prob(d.prefix+"/token", "must be at most 4096 bytes"))
		})
	}
}

func TestDecodedDataIsOwned(t *testing.T) {
	wiretest.DataOwned(t, `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"a":1}}]}}`, v1.DecodeSendParams)
}
