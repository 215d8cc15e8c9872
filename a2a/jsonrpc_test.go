package a2a_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/a2ad/a2ad/a2a"
)

const (
	msgInvalidRequest = "Request payload validation error: "
	reasonBatch       = "batch requests are not supported"
	reasonNotObject   = "the body must be a JSON-RPC request object"
	reasonVersion     = `"jsonrpc" must be "2.0"`
	reasonNoMethod    = `"method" is missing`
	reasonMethodType  = `"method" must be a string`
	reasonIDType      = `"id" must be a string, a number or null`
)

// parseRequestCases are the envelope cases of ParseRequest. FuzzParseRequest
// seeds its corpus with them.
var parseRequestCases = []struct {
	name string
	body string
	// On success:
	wantID     json.RawMessage // nil: no id
	wantMethod string
	wantParams json.RawMessage
	// On error (wantCode 0 means success):
	wantCode    int
	wantMessage string
	wantData    map[string]any
}{
	{name: "empty body", body: "",
		wantCode: -32700, wantMessage: "Invalid JSON payload",
		wantData: map[string]any{"reason": "empty body"}},
	{name: "blank body", body: " \r\n\t ",
		wantCode: -32700, wantMessage: "Invalid JSON payload",
		wantData: map[string]any{"reason": "empty body"}},
	{name: "open brace", body: "{",
		wantCode: -32700, wantMessage: "Invalid JSON payload",
		wantData: map[string]any{"reason": "body is not valid JSON", "offset": int64(1)}},
	{name: "truncated literal", body: "nul",
		wantCode: -32700, wantMessage: "Invalid JSON payload",
		wantData: map[string]any{"reason": "body is not valid JSON", "offset": int64(3)}},
	{name: "trailing garbage", body: `{"jsonrpc":"2.0","method":"x"} x`,
		wantCode: -32700, wantMessage: "Invalid JSON payload",
		wantData: map[string]any{"reason": "body is not valid JSON", "offset": int64(32)}},
	{name: "unquoted key with id", body: `{id: 1, "jsonrpc":"2.0"}`,
		wantCode: -32700, wantMessage: "Invalid JSON payload",
		wantData: map[string]any{"reason": "body is not valid JSON", "offset": int64(2)}},

	{name: "empty batch", body: "[]",
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonBatch,
		wantData: map[string]any{"reason": reasonBatch}},
	{name: "batch", body: ` [{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"}}]`,
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonBatch,
		wantData: map[string]any{"reason": reasonBatch}},

	{name: "string body", body: `"str"`,
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonNotObject,
		wantData: map[string]any{"reason": reasonNotObject}},
	{name: "number body", body: `42`,
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonNotObject,
		wantData: map[string]any{"reason": reasonNotObject}},
	{name: "null body", body: `null`,
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonNotObject,
		wantData: map[string]any{"reason": reasonNotObject}},
	{name: "bool body", body: `true`,
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonNotObject,
		wantData: map[string]any{"reason": reasonNotObject}},

	{name: "jsonrpc missing, string id", body: `{"id":"abc","method":"tasks/get"}`,
		wantID:   json.RawMessage(`"abc"`),
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonVersion,
		wantData: map[string]any{"reason": reasonVersion}},
	{name: "jsonrpc 1.0, number id", body: `{"jsonrpc":"1.0","id":7,"method":"tasks/get"}`,
		wantID:   json.RawMessage(`7`),
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonVersion,
		wantData: map[string]any{"reason": reasonVersion}},
	{name: "jsonrpc number, exponent id", body: `{"jsonrpc":2.0,"id":1.5e3,"method":"tasks/get"}`,
		wantID:   json.RawMessage(`1.5e3`),
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonVersion,
		wantData: map[string]any{"reason": reasonVersion}},
	{name: "jsonrpc missing, no id", body: `{"method":"tasks/get"}`,
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonVersion,
		wantData: map[string]any{"reason": reasonVersion}},
	{name: "jsonrpc null", body: `{"jsonrpc":null,"id":-1,"method":"tasks/get"}`,
		wantID:   json.RawMessage(`-1`),
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonVersion,
		wantData: map[string]any{"reason": reasonVersion}},

	{name: "method missing", body: `{"jsonrpc":"2.0","id":"abc"}`,
		wantID:   json.RawMessage(`"abc"`),
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonNoMethod,
		wantData: map[string]any{"reason": reasonNoMethod}},
	{name: "method number", body: `{"jsonrpc":"2.0","id":7,"method":5}`,
		wantID:   json.RawMessage(`7`),
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonMethodType,
		wantData: map[string]any{"reason": reasonMethodType}},
	{name: "method null", body: `{"jsonrpc":"2.0","id":7,"method":null}`,
		wantID:   json.RawMessage(`7`),
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonMethodType,
		wantData: map[string]any{"reason": reasonMethodType}},
	{name: "method array", body: `{"jsonrpc":"2.0","method":["tasks/get"]}`,
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonMethodType,
		wantData: map[string]any{"reason": reasonMethodType}},

	{name: "id object", body: `{"jsonrpc":"2.0","id":{},"method":"tasks/get"}`,
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonIDType,
		wantData: map[string]any{"reason": reasonIDType}},
	{name: "id array", body: `{"jsonrpc":"2.0","id":[],"method":"tasks/get"}`,
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonIDType,
		wantData: map[string]any{"reason": reasonIDType}},
	{name: "id true", body: `{"jsonrpc":"2.0","id":true,"method":"tasks/get"}`,
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonIDType,
		wantData: map[string]any{"reason": reasonIDType}},
	{name: "id false, jsonrpc wrong too", body: `{"jsonrpc":"1.0","id":false}`,
		wantCode: -32600, wantMessage: msgInvalidRequest + reasonIDType,
		wantData: map[string]any{"reason": reasonIDType}},

	{name: "no id", body: `{"jsonrpc":"2.0","method":"tasks/get"}`,
		wantMethod: "tasks/get"},
	{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"tasks/get"}`,
		wantID: json.RawMessage(`null`), wantMethod: "tasks/get"},
	{name: "string id", body: `{"jsonrpc":"2.0","id":"abc","method":"tasks/cancel","params":{"id":"t1"}}`,
		wantID: json.RawMessage(`"abc"`), wantMethod: "tasks/cancel", wantParams: json.RawMessage(`{"id":"t1"}`)},
	{name: "number id", body: `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t1","historyLength":2}}`,
		wantID: json.RawMessage(`7`), wantMethod: "tasks/get", wantParams: json.RawMessage(`{"id":"t1","historyLength":2}`)},
	{name: "exponent id kept verbatim", body: `{"jsonrpc":"2.0","id":1.5e3,"method":"message/send","params":[1, 2]}`,
		wantID: json.RawMessage(`1.5e3`), wantMethod: "message/send", wantParams: json.RawMessage(`[1, 2]`)},
	{name: "surrounding whitespace and unknown fields", body: "\n {\"x\":1, \"jsonrpc\" : \"2.0\", \"method\" : \"foo/bar\", \"id\" : \"\"} \n",
		wantID: json.RawMessage(`""`), wantMethod: "foo/bar"},
	{name: "null params", body: `{"jsonrpc":"2.0","id":0,"method":"tasks/get","params":null}`,
		wantID: json.RawMessage(`0`), wantMethod: "tasks/get", wantParams: json.RawMessage(`null`)},
	{name: "empty method", body: `{"jsonrpc":"2.0","id":1,"method":""}`,
		wantID: json.RawMessage(`1`), wantMethod: ""},
}

func TestParseRequest(t *testing.T) {
	for _, tc := range parseRequestCases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := a2a.ParseRequest([]byte(tc.body))
			if !reflect.DeepEqual(req.ID, tc.wantID) {
				t.Errorf("ParseRequest(%q).ID = %q, want %q", tc.body, req.ID, tc.wantID)
			}
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("ParseRequest(%q) error = %#v, want nil", tc.body, err)
				}
				if req.Method != tc.wantMethod {
					t.Errorf("ParseRequest(%q).Method = %q, want %q", tc.body, req.Method, tc.wantMethod)
				}
				if !reflect.DeepEqual(req.Params, tc.wantParams) {
					t.Errorf("ParseRequest(%q).Params = %q, want %q", tc.body, req.Params, tc.wantParams)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseRequest(%q) = %+v, nil; want error %d", tc.body, req, tc.wantCode)
			}
			if err.Code != tc.wantCode || err.Message != tc.wantMessage {
				t.Errorf("ParseRequest(%q) error = %d %q, want %d %q", tc.body, err.Code, err.Message, tc.wantCode, tc.wantMessage)
			}
			if !reflect.DeepEqual(err.Data, tc.wantData) {
				t.Errorf("ParseRequest(%q) error data = %#v, want %#v", tc.body, err.Data, tc.wantData)
			}
		})
	}
}

// TestParseRequestIDIsCopied checks the returned id and params do not alias
// the body, which the server reads into a pooled buffer.
func TestParseRequestIDIsCopied(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":"abc","method":"m","params":{"a":1}}`)
	req, err := a2a.ParseRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'x'
	}
	if string(req.ID) != `"abc"` || string(req.Params) != `{"a":1}` || req.Method != "m" {
		t.Errorf("after overwriting the body: ID %q, Params %q, Method %q", req.ID, req.Params, req.Method)
	}
}

func TestParseRequestDoesNotShareSentinels(t *testing.T) {
	_, err := a2a.ParseRequest(nil)
	if err == a2a.ErrParse {
		t.Fatal("ParseRequest returned the ErrParse sentinel itself; callers could modify it")
	}
	if a2a.ErrParse.Data != nil {
		t.Errorf("ErrParse.Data = %v, want nil", a2a.ErrParse.Data)
	}
}

func TestAppendResult(t *testing.T) {
	tests := []struct {
		id   json.RawMessage
		want string
	}{
		{nil, `{"jsonrpc":"2.0","id":null,"result":{"kind":"task"}}`},
		{json.RawMessage{}, `{"jsonrpc":"2.0","id":null,"result":{"kind":"task"}}`},
		{json.RawMessage(`null`), `{"jsonrpc":"2.0","id":null,"result":{"kind":"task"}}`},
		{json.RawMessage(`"abc"`), `{"jsonrpc":"2.0","id":"abc","result":{"kind":"task"}}`},
		{json.RawMessage(`7`), `{"jsonrpc":"2.0","id":7,"result":{"kind":"task"}}`},
		{json.RawMessage(`1.5e3`), `{"jsonrpc":"2.0","id":1.5e3,"result":{"kind":"task"}}`},
	}
	for _, tc := range tests {
		got := a2a.AppendResult(nil, tc.id, []byte(`{"kind":"task"}`))
		if string(got) != tc.want {
			t.Errorf("AppendResult(nil, %q, ...) = %s, want %s", tc.id, got, tc.want)
		}
	}
	got := a2a.AppendResult([]byte("prefix:"), json.RawMessage(`1`), []byte(`null`))
	if want := `prefix:{"jsonrpc":"2.0","id":1,"result":null}`; string(got) != want {
		t.Errorf("AppendResult(prefix) = %s, want %s", got, want)
	}
}

func TestAppendError(t *testing.T) {
	tests := []struct {
		name string
		id   json.RawMessage
		err  *a2a.Error
		want string
	}{
		{"nil id", nil, a2a.ErrParse.WithData(map[string]any{"reason": "empty body"}),
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON payload","data":{"reason":"empty body"}}}`},
		{"string id, no data", json.RawMessage(`"abc"`), a2a.ErrTaskNotFound,
			`{"jsonrpc":"2.0","id":"abc","error":{"code":-32001,"message":"Task not found"}}`},
		{"number id", json.RawMessage(`7`), a2a.MethodNotFound("foo/bar"),
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: foo/bar","data":{"method":"foo/bar"}}}`},
		{"empty data map is left out", json.RawMessage(`7`), a2a.ErrInternal.WithData(map[string]any{}),
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error"}}`},
		{"unencodable data keeps code and message", json.RawMessage(`"x"`), a2a.ErrInternal.WithData(map[string]any{"f": func() {}}),
			`{"jsonrpc":"2.0","id":"x","error":{"code":-32603,"message":"Internal error"}}`},
		{"invalid params", json.RawMessage(`1`), a2a.InvalidParams(a2a.Problem{Path: "/id", Message: "is required"}),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters: /id: is required","data":{"errors":[{"message":"is required","path":"/id"}]}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := a2a.AppendError(nil, tc.id, tc.err)
			if string(got) != tc.want {
				t.Errorf("AppendError = %s\nwant %s", got, tc.want)
			}
			// The error object has only code, message and an object data.
			var env struct {
				Error map[string]json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(got, &env); err != nil {
				t.Fatalf("AppendError produced invalid JSON: %v", err)
			}
			for k, v := range env.Error {
				switch k {
				case "code", "message":
				case "data":
					if v[0] != '{' {
						t.Errorf("error.data = %s, want an object", v)
					}
				default:
					t.Errorf("error object has field %q", k)
				}
			}
		})
	}
}

func TestErrorWithDataCopies(t *testing.T) {
	e := a2a.ErrTaskNotFound.WithData(map[string]any{"id": "t1"})
	if e == a2a.ErrTaskNotFound || a2a.ErrTaskNotFound.Data != nil {
		t.Fatalf("WithData modified the original: %#v", a2a.ErrTaskNotFound)
	}
	if e.Code != a2a.CodeTaskNotFound || e.Message != "Task not found" || e.Data["id"] != "t1" {
		t.Errorf("WithData = %#v", e)
	}
	if got, want := e.Error(), "a2a error -32001: Task not found"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestInvalidParamsMessage(t *testing.T) {
	p := func(path string) a2a.Problem { return a2a.Problem{Path: path, Message: "is required"} }
	tests := []struct {
		problems []a2a.Problem
		want     string
	}{
		{nil, "Invalid parameters"},
		{[]a2a.Problem{p("/a")}, "Invalid parameters: /a: is required"},
		{[]a2a.Problem{p("/a"), p("/b")}, "Invalid parameters: /a: is required (and 1 more problem)"},
		{[]a2a.Problem{p("/a"), p("/b"), p("/c")}, "Invalid parameters: /a: is required (and 2 more problems)"},
	}
	for _, tc := range tests {
		e := a2a.InvalidParams(tc.problems...)
		if e.Code != -32602 || e.Message != tc.want {
			t.Errorf("InvalidParams(%d problems) = %d %q, want -32602 %q", len(tc.problems), e.Code, e.Message, tc.want)
		}
		list, _ := e.Data["errors"].([]any)
		if len(list) != len(tc.problems) {
			t.Errorf("InvalidParams(%d problems) data.errors has %d entries", len(tc.problems), len(list))
		}
	}
}
