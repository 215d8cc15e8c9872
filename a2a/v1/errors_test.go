package v1_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

const errorInfo = `{"@type":"type.googleapis.com/google.rpc.ErrorInfo",`

func TestAppendErrorV1(t *testing.T) {
	tests := []struct {
		name string
		id   json.RawMessage
		err  *a2a.Error
		want string
	}{
		{"task not found", json.RawMessage(`"abc"`), a2a.ErrTaskNotFound,
			`{"jsonrpc":"2.0","id":"abc","error":{"code":-32001,"message":"Task not found","data":[` +
				errorInfo + `"reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`},
		{"push config not found", json.RawMessage(`1`), a2a.ErrPushConfigNotFound,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Push notification config not found","data":[` +
				errorInfo + `"reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`},
		{"not cancelable", json.RawMessage(`1`), a2a.ErrTaskNotCancelable,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Task cannot be canceled","data":[` +
				errorInfo + `"reason":"TASK_NOT_CANCELABLE","domain":"a2a-protocol.org"}]}}`},
		{"push not supported", json.RawMessage(`1`), a2a.ErrPushNotSupported,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"Push Notification is not supported","data":[` +
				errorInfo + `"reason":"PUSH_NOTIFICATION_NOT_SUPPORTED","domain":"a2a-protocol.org"}]}}`},
		{"unsupported", json.RawMessage(`1`), a2a.ErrStreamingNotSupport,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32004,"message":"Streaming is not supported","data":[` +
				errorInfo + `"reason":"UNSUPPORTED_OPERATION","domain":"a2a-protocol.org"}]}}`},
		{"content type", json.RawMessage(`1`), &a2a.Error{Code: a2a.CodeContentTypeNotSupported, Message: "Incompatible content types"},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"Incompatible content types","data":[` +
				errorInfo + `"reason":"CONTENT_TYPE_NOT_SUPPORTED","domain":"a2a-protocol.org"}]}}`},
		{"invalid agent response", json.RawMessage(`1`), &a2a.Error{Code: a2a.CodeInvalidAgentResponse, Message: "Invalid agent response"},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32006,"message":"Invalid agent response","data":[` +
				errorInfo + `"reason":"INVALID_AGENT_RESPONSE","domain":"a2a-protocol.org"}]}}`},
		{"extended card", json.RawMessage(`1`), a2a.ErrExtendedCardNotConf,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32007,"message":"Authenticated Extended Card is not configured","data":[` +
				errorInfo + `"reason":"EXTENDED_AGENT_CARD_NOT_CONFIGURED","domain":"a2a-protocol.org"}]}}`},
		{"extension required", json.RawMessage(`1`), &a2a.Error{Code: a2a.CodeExtensionSupportRequired, Message: "Extension support required"},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32008,"message":"Extension support required","data":[` +
				errorInfo + `"reason":"EXTENSION_SUPPORT_REQUIRED","domain":"a2a-protocol.org"}]}}`},
		{"version", json.RawMessage(`1`), a2a.ErrVersionNotSupported,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32009,"message":"Version not supported","data":[` +
				errorInfo + `"reason":"VERSION_NOT_SUPPORTED","domain":"a2a-protocol.org"}]}}`},
		{"parse error, no id", nil, a2a.ErrParse.WithData(map[string]any{"reason": "body is not valid JSON", "offset": int64(12)}),
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON payload","data":[` +
				errorInfo + `"reason":"PARSE_ERROR","domain":"github.com/a2ad/a2ad","metadata":{"offset":"12","reason":"body is not valid JSON"}}]}}`},
		{"invalid request", json.RawMessage(`null`), a2a.ErrInvalidRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request payload validation error","data":[` +
				errorInfo + `"reason":"INVALID_REQUEST","domain":"github.com/a2ad/a2ad"}]}}`},
		{"method not found", json.RawMessage(`7`), a2a.MethodNotFound("Foo"),
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: Foo","data":[` +
				errorInfo + `"reason":"METHOD_NOT_FOUND","domain":"github.com/a2ad/a2ad","metadata":{"method":"Foo"}}]}}`},
		{"nil error", json.RawMessage(`7`), nil,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error","data":[` +
				errorInfo + `"reason":"INTERNAL_ERROR","domain":"github.com/a2ad/a2ad"}]}}`},
		{"internal", json.RawMessage(`7`), a2a.ErrInternal,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error","data":[` +
				errorInfo + `"reason":"INTERNAL_ERROR","domain":"github.com/a2ad/a2ad"}]}}`},
		{"server busy", json.RawMessage(`7`), a2a.ErrServerBusy,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32050,"message":"Server busy: too many calls are waiting; retry later","data":[` +
				errorInfo + `"reason":"SERVER_BUSY","domain":"github.com/a2ad/a2ad","metadata":{"scope":"server"}}]}}`},
		{"caller busy", json.RawMessage(`7`), a2a.ErrCallerBusy,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32050,"message":"Too many calls of this caller are running or waiting; retry later","data":[` +
				errorInfo + `"reason":"SERVER_BUSY","domain":"github.com/a2ad/a2ad","metadata":{"scope":"caller"}}]}}`},
		{"shutting down with retry", json.RawMessage(`7`), a2a.ErrShuttingDown.WithData(map[string]any{"retryAfterMs": float64(1500)}),
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32051,"message":"Server is shutting down; retry later","data":[` +
				errorInfo + `"reason":"SHUTTING_DOWN","domain":"github.com/a2ad/a2ad","metadata":{"retryAfterMs":"1500"}}]}}`},
		{"unlisted code", json.RawMessage(`7`), &a2a.Error{Code: -32099, Message: "Odd", Data: map[string]any{}},
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32099,"message":"Odd","data":[` +
				errorInfo + `"reason":"UNKNOWN","domain":"github.com/a2ad/a2ad"}]}}`},
		{"metadata of every type", json.RawMessage(`7`), a2a.ErrInternal.WithData(map[string]any{
			"s": "<x>", "f": 1.5, "big": 1e21, "b": true, "n": nil, "list": []any{"a", 1.0}, "obj": map[string]any{"k": "v"}, "fn": func() {}}),
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error","data":[` + errorInfo +
				`"reason":"INTERNAL_ERROR","domain":"github.com/a2ad/a2ad","metadata":{"b":"true","big":"1e+21","f":"1.5","list":"[\"a\",1]","n":"null","obj":"{\"k\":\"v\"}","s":"\u003cx\u003e"}}]}}`},
		{"invalid params", json.RawMessage(`1`), a2a.InvalidParams(
			a2a.Problem{Path: "/", Message: "is required"},
			a2a.Problem{Path: "/message/parts/0/text", Message: "is required"},
			a2a.Problem{Path: "/message/metadata/a2ad.lastEventId", Message: "must be a non-negative integer"},
			a2a.Problem{Path: "/metadata/a~1b~0c/0x/12", Message: "odd keys"},
			a2a.Problem{Path: "/a//b", Message: "empty key"},
			a2a.Problem{Path: "Last-Event-ID", Message: "must be a non-negative integer"},
		),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters: /: is required (and 5 more problems)","data":[` +
				errorInfo + `"reason":"INVALID_PARAMS","domain":"github.com/a2ad/a2ad"},` +
				`{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[` +
				`{"description":"is required"},` +
				`{"field":"message.parts[0].text","description":"is required"},` +
				`{"field":"message.metadata[\"a2ad.lastEventId\"]","description":"must be a non-negative integer"},` +
				`{"field":"metadata[\"a/b~c\"][\"0x\"][12]","description":"odd keys"},` +
				`{"field":"a[\"\"].b","description":"empty key"},` +
				`{"field":"Last-Event-ID","description":"must be a non-negative integer"}]}]}}`},
		{"invalid params with other data", json.RawMessage(`1`), &a2a.Error{Code: a2a.CodeInvalidParams, Message: "Invalid parameters: /id: is required",
			Data: map[string]any{"errors": []a2a.Problem{{Path: "/id", Message: "is required"}}, "hint": "x"}},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters: /id: is required","data":[` +
				errorInfo + `"reason":"INVALID_PARAMS","domain":"github.com/a2ad/a2ad","metadata":{"hint":"x"}},` +
				`{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"id","description":"is required"}]}]}}`},
		{"invalid params with odd errors", json.RawMessage(`1`), &a2a.Error{Code: a2a.CodeInvalidParams, Message: "Invalid parameters",
			Data: map[string]any{"errors": []any{"x"}}},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters","data":[` +
				errorInfo + `"reason":"INVALID_PARAMS","domain":"github.com/a2ad/a2ad","metadata":{"errors":"[\"x\"]"}}]}}`},
		{"invalid params without problems", json.RawMessage(`1`), a2a.InvalidParams(),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters","data":[` +
				errorInfo + `"reason":"INVALID_PARAMS","domain":"github.com/a2ad/a2ad"}]}}`},
		{"errors key on another code stays metadata", json.RawMessage(`1`), a2a.ErrInternal.WithData(map[string]any{"errors": []any{}}),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":[` +
				errorInfo + `"reason":"INTERNAL_ERROR","domain":"github.com/a2ad/a2ad","metadata":{"errors":"[]"}}]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := v1.AppendError(nil, tc.id, tc.err)
			if string(got) != tc.want {
				t.Errorf("AppendErrorV1 =\n%s\nwant\n%s", got, tc.want)
			}
			checkErrorV1Shape(t, got)
			if tc.err == nil {
				return
			}
			// The same code and message as the 0.3 answer.
			var v03, v10 struct {
				Error struct {
					Code    int
					Message string
				}
			}
			_ = json.Unmarshal(a2a.AppendError(nil, tc.id, tc.err), &v03)
			_ = json.Unmarshal(got, &v10)
			if v03 != v10 {
				t.Errorf("1.0 error %+v differs from 0.3 error %+v", v10, v03)
			}
		})
	}
}

// checkErrorV1Shape checks a 1.0 error response: an error object with
// code, message and a data array whose first entry is an ErrorInfo with
// string metadata, and whose other entries are typed Any objects.
func checkErrorV1Shape(tb testing.TB, b []byte) {
	tb.Helper()
	var env struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		tb.Fatalf("not JSON: %v\n%s", err, b)
	}
	for k := range env.Error {
		if k != "code" && k != "message" && k != "data" {
			tb.Errorf("error has member %q", k)
		}
	}
	var data []map[string]json.RawMessage
	if err := json.Unmarshal(env.Error["data"], &data); err != nil || len(data) == 0 {
		tb.Fatalf("error.data = %s, want a non-empty array of objects", env.Error["data"])
	}
	var info struct {
		Type     string            `json:"@type"`
		Reason   string            `json:"reason"`
		Domain   string            `json:"domain"`
		Metadata map[string]string `json:"metadata"`
	}
	raw, _ := json.Marshal(data[0])
	if err := json.Unmarshal(raw, &info); err != nil {
		tb.Fatalf("data[0] = %s: %v (metadata must map strings to strings)", raw, err)
	}
	if info.Type != "type.googleapis.com/google.rpc.ErrorInfo" || info.Reason == "" || info.Domain == "" {
		tb.Errorf("data[0] = %s, want an ErrorInfo with reason and domain", raw)
	}
	for _, d := range data[1:] {
		var typ string
		if err := json.Unmarshal(d["@type"], &typ); err != nil || !strings.HasPrefix(typ, "type.googleapis.com/google.rpc.") {
			tb.Errorf("data entry without a google.rpc @type: %v", d)
		}
	}
}

func TestErrorReasonV1(t *testing.T) {
	for code, want := range map[int][2]string{
		-32001: {"TASK_NOT_FOUND", v1.ErrorDomainA2A},
		-32009: {"VERSION_NOT_SUPPORTED", v1.ErrorDomainA2A},
		-32602: {"INVALID_PARAMS", v1.ErrorDomainA2AD},
		-32050: {"SERVER_BUSY", v1.ErrorDomainA2AD},
		-32051: {"SHUTTING_DOWN", v1.ErrorDomainA2AD},
		0:      {"UNKNOWN", v1.ErrorDomainA2AD},
	} {
		if r, d := v1.ErrorReason(code); r != want[0] || d != want[1] {
			t.Errorf("ErrorReasonV1(%d) = %q, %q; want %q, %q", code, r, d, want[0], want[1])
		}
	}
}

func TestAppendErrorDetailsV1(t *testing.T) {
	got := v1.AppendErrorDetails([]byte(`{"details":`), a2a.ErrTaskNotFound.WithData(map[string]any{"id": "t1"}))
	want := `{"details":[` + errorInfo + `"reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"id":"t1"}}]`
	if string(got) != want {
		t.Errorf("AppendErrorDetailsV1 = %s, want %s", got, want)
	}
}
