package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/jsonrpc"
)

// TaskService is a fake transport.TaskService. A method whose function is
// unset fails the test that calls it.
type TaskService struct {
	tb       testing.TB
	SendFn   func(ctx context.Context, caller tasks.Caller, p a2a.SendParams) (*a2a.Task, error)
	GetFn    func(ctx context.Context, caller tasks.Caller, id string, historyLength *int) (*a2a.Task, error)
	CancelFn func(ctx context.Context, caller tasks.Caller, id string) (*a2a.Task, error)
	// Outcome is what Send returns beside SendFn's task and error.
	Outcome tasks.Outcome

	calls atomic.Int64
}

var _ transport.TaskService = (*TaskService)(nil)

var errUnexpectedCall = errors.New("fake: unexpected call")

func (s *TaskService) Send(ctx context.Context, caller tasks.Caller, p a2a.SendParams) (*a2a.Task, tasks.Outcome, error) {
	s.calls.Add(1)
	if s.SendFn == nil {
		s.tb.Errorf("unexpected call to Send(%+v)", p)
		return nil, tasks.Outcome{}, errUnexpectedCall
	}
	task, err := s.SendFn(ctx, caller, p)
	return task, s.Outcome, err
}

func (s *TaskService) Get(ctx context.Context, caller tasks.Caller, id string, historyLength *int) (*a2a.Task, error) {
	s.calls.Add(1)
	if s.GetFn == nil {
		s.tb.Errorf("unexpected call to Get(%q)", id)
		return nil, errUnexpectedCall
	}
	return s.GetFn(ctx, caller, id, historyLength)
}

func (s *TaskService) Cancel(ctx context.Context, caller tasks.Caller, id string) (*a2a.Task, error) {
	s.calls.Add(1)
	if s.CancelFn == nil {
		s.tb.Errorf("unexpected call to Cancel(%q)", id)
		return nil, errUnexpectedCall
	}
	return s.CancelFn(ctx, caller, id)
}

// Calls returns how many times any method was called.
func (s *TaskService) Calls() int64 { return s.calls.Load() }

// syncBuffer is a log sink the server goroutines and the test share.
type syncBuffer = testkit.SyncBuffer

var testCard = transport.Card{
	JSON: []byte(`{"name":"a2ad test","protocolVersion":"0.3.0","url":"http://127.0.0.1/a2a"}`),
	ETag: `"c0ffee"`,
}

const testMaxBody = 1024

// MustServe starts a2ad's handler on loopback with fake as the task
// service, a 1024-byte body limit and the test card.
func MustServe(tb testing.TB, fake *TaskService, opts ...func(*jsonrpc.Config)) *httptest.Server {
	tb.Helper()
	fake.tb = tb
	cfg := jsonrpc.Config{
		Config: transport.Config{Tasks: fake, MaxBodyBytes: testMaxBody},
		Card:   func() transport.Card { return testCard },
	}
	for _, o := range opts {
		o(&cfg)
	}
	ts := httptest.NewServer(jsonrpc.New(cfg).Handler())
	tb.Cleanup(ts.Close)
	return ts
}

func newRequest(tb testing.TB, method, url, contentType string, body io.Reader) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		tb.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req
}

// rpc posts body to /a2a as application/json, checks the answer is a
// JSON-RPC response (HTTP 200, application/json) and returns its body.
func rpc(tb testing.TB, ts *httptest.Server, body string) []byte {
	tb.Helper()
	resp, out := testkit.RoundTrip(tb, nil, newRequest(tb, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(body)))
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("POST /a2a %s: status %d, want 200; body %s", body, resp.StatusCode, out)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		tb.Errorf("POST /a2a %s: Content-Type %q, want application/json", body, ct)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(out, &fields); err != nil {
		tb.Fatalf("POST /a2a %s: answer %s is not a JSON object: %v", body, out, err)
	}
	_, hasResult := fields["result"]
	_, hasError := fields["error"]
	if string(fields["jsonrpc"]) != `"2.0"` || fields["id"] == nil || hasResult == hasError || len(fields) != 3 {
		tb.Errorf("POST /a2a %s: answer %s is not a JSON-RPC 2.0 response", body, out)
	}
	return out
}

func task(id string) *a2a.Task {
	return &a2a.Task{ID: id, ContextID: "ctx-" + id, Status: a2a.TaskStatus{State: a2a.StateCompleted, Timestamp: "2025-01-02T03:04:05.006Z"}}
}

func taskJSON(tb testing.TB, t *a2a.Task) string {
	tb.Helper()
	b, err := v03.AppendTask(nil, t)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// okService answers every method with a task named after the request.
func okService() *TaskService {
	return &TaskService{
		SendFn: func(_ context.Context, _ tasks.Caller, p a2a.SendParams) (*a2a.Task, error) {
			return task("sent-" + p.Message.MessageID), nil
		},
		GetFn: func(_ context.Context, _ tasks.Caller, id string, _ *int) (*a2a.Task, error) {
			return task(id), nil
		},
		CancelFn: func(_ context.Context, _ tasks.Caller, id string) (*a2a.Task, error) {
			return task(id), nil
		},
	}
}

// padTo pads the JSON object body with spaces before its closing brace to
// exactly n bytes.
func padTo(tb testing.TB, body string, n int) string {
	tb.Helper()
	if len(body) > n {
		tb.Fatalf("body is %d bytes, longer than %d", len(body), n)
	}
	return body[:len(body)-1] + strings.Repeat(" ", n-len(body)) + "}"
}

const getT1 = `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t1"}}`

// onlyReader hides the length of a reader, so the client sends the body
// chunked, without Content-Length.
type onlyReader struct{ io.Reader }

func TestBodyLimit(t *testing.T) {
	fake := okService()
	ts := MustServe(t, fake)
	big := padTo(t, getT1, testMaxBody+1)
	wantBody := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request body exceeds 1024 bytes"}}`

	t.Run("content-length", func(t *testing.T) {
		req := newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(big))
		if req.ContentLength != testMaxBody+1 {
			t.Fatalf("request ContentLength = %d", req.ContentLength)
		}
		resp, body := testkit.RoundTrip(t, nil, req)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || strings.TrimSpace(string(body)) != wantBody {
			t.Errorf("status %d body %s, want 413 %s", resp.StatusCode, body, wantBody)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		req := newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", onlyReader{strings.NewReader(big)})
		if req.ContentLength != 0 {
			t.Fatalf("request ContentLength = %d, want 0 (unknown)", req.ContentLength)
		}
		resp, body := testkit.RoundTrip(t, nil, req)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || strings.TrimSpace(string(body)) != wantBody {
			t.Errorf("status %d body %s, want 413 %s", resp.StatusCode, body, wantBody)
		}
	})
	t.Run("chunked, far over", func(t *testing.T) {
		huge := padTo(t, getT1, 64*testMaxBody)
		req := newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", onlyReader{strings.NewReader(huge)})
		resp, _ := testkit.RoundTrip(t, nil, req)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", resp.StatusCode)
		}
	})
	if n := fake.Calls(); n != 0 {
		t.Errorf("task service called %d times for bodies over the limit", n)
	}

	// A body of exactly the limit is served, whichever way it is sent.
	exact := padTo(t, getT1, testMaxBody)
	want := `{"jsonrpc":"2.0","id":1,"result":` + taskJSON(t, task("t1")) + `}`
	for name, r := range map[string]io.Reader{"content-length": strings.NewReader(exact), "chunked": onlyReader{strings.NewReader(exact)}} {
		resp, body := testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", r))
		if resp.StatusCode != http.StatusOK || string(body) != want {
			t.Errorf("%s body of exactly %d bytes: status %d body %s, want 200 %s", name, testMaxBody, resp.StatusCode, body, want)
		}
	}
	if n := fake.Calls(); n != 2 {
		t.Errorf("task service called %d times for bodies at the limit, want 2", n)
	}
}

func TestDefaultBodyLimit(t *testing.T) {
	fake := okService()
	ts := MustServe(t, fake, func(c *jsonrpc.Config) { c.MaxBodyBytes = 0 })
	// 2 KiB is over the test limit but well under the 1 MiB default.
	body := padTo(t, getT1, 2048)
	if got := rpc(t, ts, body); !bytes.Contains(got, []byte(`"result"`)) {
		t.Errorf("2 KiB body with the default limit: %s", got)
	}
	big := padTo(t, getT1, transport.DefaultMaxBodyBytes+1)
	resp, _ := testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(big)))
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("body of DefaultMaxBodyBytes+1: status %d, want 413", resp.StatusCode)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	fake := okService()
	ts := MustServe(t, fake)
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead} {
		t.Run(method, func(t *testing.T) {
			resp, body := testkit.RoundTrip(t, nil, newRequest(t, method, ts.URL+"/a2a", "application/json", strings.NewReader(getT1)))
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("%s /a2a: status %d, want 405", method, resp.StatusCode)
			}
			if got := resp.Header.Values("Allow"); !reflect.DeepEqual(got, []string{"POST"}) {
				t.Errorf("%s /a2a: Allow = %q, want [POST]", method, got)
			}
			want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"use POST for JSON-RPC requests"}}`
			if method == http.MethodHead {
				want = ""
			}
			if got := strings.TrimSpace(string(body)); got != want {
				t.Errorf("%s /a2a: body %q, want %q", method, got, want)
			}
		})
	}
	if n := fake.Calls(); n != 0 {
		t.Errorf("task service called %d times", n)
	}
}

func TestContentType(t *testing.T) {
	fake := okService()
	ts := MustServe(t, fake)
	for _, ct := range []string{"", "text/plain", "text/json", "application/x-www-form-urlencoded", "application/jsonx", "application/json; charset", "json"} {
		resp, body := testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", ct, strings.NewReader(getT1)))
		want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Content-Type must be application/json"}}`
		if resp.StatusCode != http.StatusUnsupportedMediaType || strings.TrimSpace(string(body)) != want {
			t.Errorf("Content-Type %q: status %d body %s, want 415 %s", ct, resp.StatusCode, body, want)
		}
	}
	if n := fake.Calls(); n != 0 {
		t.Fatalf("task service called %d times for unsupported content types", n)
	}

	want := `{"jsonrpc":"2.0","id":1,"result":` + taskJSON(t, task("t1")) + `}`
	accepted := []string{"application/json", "application/json; charset=utf-8", "application/a2a+json", "Application/JSON;charset=UTF-8"}
	for _, ct := range accepted {
		resp, body := testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", ct, strings.NewReader(getT1)))
		if resp.StatusCode != http.StatusOK || string(body) != want {
			t.Errorf("Content-Type %q: status %d body %s, want 200 %s", ct, resp.StatusCode, body, want)
		}
	}
	if n := fake.Calls(); n != int64(len(accepted)) {
		t.Errorf("task service called %d times, want %d", n, len(accepted))
	}
}

func TestJSONRPCEnvelope(t *testing.T) {
	fake := okService()
	ts := MustServe(t, fake)
	t1 := taskJSON(t, task("t1"))
	tests := []struct {
		name string
		body string
		want string
	}{
		{"parse error", `{`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON payload","data":{"offset":1,"reason":"body is not valid JSON"}}}`},
		{"empty body", ``,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON payload","data":{"reason":"empty body"}}}`},
		{"batch", `[` + getT1 + `]`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request payload validation error: batch requests are not supported","data":{"reason":"batch requests are not supported"}}}`},
		{"not an object", `"tasks/get"`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request payload validation error: the body must be a JSON-RPC request object","data":{"reason":"the body must be a JSON-RPC request object"}}}`},
		{"bad version keeps string id", `{"jsonrpc":"1.0","id":"abc","method":"tasks/get","params":{"id":"t1"}}`,
			`{"jsonrpc":"2.0","id":"abc","error":{"code":-32600,"message":"Request payload validation error: \"jsonrpc\" must be \"2.0\"","data":{"reason":"\"jsonrpc\" must be \"2.0\""}}}`},
		{"bad version keeps number id", `{"jsonrpc":2.0,"id":7,"method":"tasks/get"}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Request payload validation error: \"jsonrpc\" must be \"2.0\"","data":{"reason":"\"jsonrpc\" must be \"2.0\""}}}`},
		{"bad id", `{"jsonrpc":"2.0","id":{"a":1},"method":"tasks/get"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request payload validation error: \"id\" must be a string, a number or null","data":{"reason":"\"id\" must be a string, a number or null"}}}`},
		{"method missing", `{"jsonrpc":"2.0","id":"x"}`,
			`{"jsonrpc":"2.0","id":"x","error":{"code":-32600,"message":"Request payload validation error: \"method\" is missing","data":{"reason":"\"method\" is missing"}}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":1.5e3,"method":"foo/bar"}`,
			`{"jsonrpc":"2.0","id":1.5e3,"error":{"code":-32601,"message":"Method not found: foo/bar","data":{"method":"foo/bar"}}}`},
		{"invalid params", `{"jsonrpc":"2.0","id":"abc","method":"tasks/get","params":{"historyLength":-1}}`,
			`{"jsonrpc":"2.0","id":"abc","error":{"code":-32602,"message":"Invalid parameters: /id: is required (and 1 more problem)",` +
				`"data":{"errors":[{"message":"is required","path":"/id"},{"message":"must not be negative","path":"/historyLength"}]}}}`},
		{"params missing", `{"jsonrpc":"2.0","id":2,"method":"message/send"}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid parameters: /: is required","data":{"errors":[{"message":"is required","path":"/"}]}}}`},
		{"string id", `{"jsonrpc":"2.0","id":"abc","method":"tasks/get","params":{"id":"t1"}}`,
			`{"jsonrpc":"2.0","id":"abc","result":` + t1 + `}`},
		{"number id", `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t1"}}`,
			`{"jsonrpc":"2.0","id":7,"result":` + t1 + `}`},
		{"exponent id", `{"jsonrpc":"2.0","id":-1.5e3,"method":"tasks/get","params":{"id":"t1"}}`,
			`{"jsonrpc":"2.0","id":-1.5e3,"result":` + t1 + `}`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"tasks/get","params":{"id":"t1"}}`,
			`{"jsonrpc":"2.0","id":null,"result":` + t1 + `}`},
		{"no id", `{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"t1"}}`,
			`{"jsonrpc":"2.0","id":null,"result":` + t1 + `}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rpc(t, ts, tc.body); string(got) != tc.want {
				t.Errorf("POST /a2a %s\n got %s\nwant %s", tc.body, got, tc.want)
			}
		})
	}
	// Only the five good requests reach the service.
	if n := fake.Calls(); n != 5 {
		t.Errorf("task service called %d times, want 5", n)
	}
}

func TestUnsupportedMethods(t *testing.T) {
	fake := &TaskService{} // any call fails the test
	ts := MustServe(t, fake)
	tests := []struct {
		method string
		want   string
	}{
		{"message/stream", `{"code":-32004,"message":"Streaming is not supported"}`},
		{"tasks/resubscribe", `{"code":-32004,"message":"Streaming is not supported"}`},
		{"tasks/pushNotificationConfig/set", `{"code":-32003,"message":"Push Notification is not supported"}`},
		{"tasks/pushNotificationConfig/get", `{"code":-32003,"message":"Push Notification is not supported"}`},
		{"tasks/pushNotificationConfig/list", `{"code":-32003,"message":"Push Notification is not supported"}`},
		{"tasks/pushNotificationConfig/delete", `{"code":-32003,"message":"Push Notification is not supported"}`},
		{"agent/getAuthenticatedExtendedCard", `{"code":-32004,"message":"This operation is not supported"}`},
		{"foo/bar", `{"code":-32601,"message":"Method not found: foo/bar","data":{"method":"foo/bar"}}`},
		{"tasks/list", `{"code":-32601,"message":"Method not found: tasks/list","data":{"method":"tasks/list"}}`},
		{"sendMessage", `{"code":-32601,"message":"Method not found: sendMessage","data":{"method":"sendMessage"}}`},
		{"", `{"code":-32601,"message":"Method not found: ","data":{"method":""}}`},
	}
	for i, tc := range tests {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"id":"t1","message":{}}}`, i, tc.method)
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":%s}`, i, tc.want)
		if got := rpc(t, ts, body); string(got) != want {
			t.Errorf("method %q:\n got %s\nwant %s", tc.method, got, want)
		}
	}
	if n := fake.Calls(); n != 0 {
		t.Errorf("task service called %d times", n)
	}
}

// TestErrorMapping: each service error has its JSON-RPC error, answered
// with HTTP 200 (the two answered with 503, -32051 and -32057, are in
// TestUnavailable).
func TestErrorMapping(t *testing.T) {
	passThrough := &a2a.Error{Code: a2a.CodeContentTypeNotSupported, Message: "Incompatible content types", Data: map[string]any{"mimeType": "image/png"}}
	tests := []struct {
		name string
		err  error
		want string // the error object
	}{
		{"not found", tasks.ErrNotFound, `{"code":-32001,"message":"Task not found"}`},
		{"not found, wrapped", fmt.Errorf("get task: %w", tasks.ErrNotFound), `{"code":-32001,"message":"Task not found"}`},
		{"not cancelable", tasks.ErrNotCancelable, `{"code":-32002,"message":"Task cannot be canceled"}`},
		{"messageId reused", tasks.ErrMessageIDReused,
			`{"code":-32602,"message":"messageId reused with a different message","data":{"errors":[{"message":"reused with a different message","path":"/message/messageId"}]}}`},
		{"task busy", tasks.ErrTaskBusy, `{"code":-32004,"message":"Task is still running: wait for it to settle or cancel it"}`},
		{"conflict", tasks.ErrConflict, `{"code":-32004,"message":"Task is still running: wait for it to settle or cancel it"}`},
		{"server busy", tasks.ErrBusy, `{"code":-32050,"message":"Server busy: too many calls are waiting; retry later","data":{"scope":"server"}}`},
		{"server busy, joined", errors.Join(errors.New("queue"), tasks.ErrBusy), `{"code":-32050,"message":"Server busy: too many calls are waiting; retry later","data":{"scope":"server"}}`},
		{"caller busy", fmt.Errorf("send: %w", tasks.ErrCallerBusy), `{"code":-32050,"message":"Too many calls of this caller are running or waiting; retry later","data":{"scope":"caller"}}`},
		{"byte quota", fmt.Errorf("create: %w", &tasks.QuotaError{Which: tasks.QuotaBytes, Used: 1000, Limit: 1024}),
			`{"code":-32055,"message":"Storage quota exceeded: 1000 of 1024 bytes stored; wait for old tasks to expire or ask the operator for more","data":{"limit":1024,"quota":"bytes","used":1000}}`},
		{"task quota", &tasks.QuotaError{Which: tasks.QuotaTasks, Used: 5, Limit: 5},
			`{"code":-32055,"message":"Storage quota exceeded: 5 of 5 tasks stored; wait for old tasks to expire or ask the operator for more","data":{"limit":5,"quota":"tasks","used":5}}`},
		{"history cap", &tasks.TaskLimitError{Messages: 100, Max: 100},
			`{"code":-32056,"message":"Task limit exceeded: the task holds 100 messages (max 100); start a new task","data":{"limit":"history","max":100,"messages":100}}`},
		{"input problems", fmt.Errorf("send: %w", &tasks.InputError{Problems: []a2a.Problem{{Path: "/message/contextId", Message: "does not match the task's contextId"}}}),
			`{"code":-32602,"message":"Invalid parameters: /message/contextId: does not match the task's contextId","data":{"errors":[{"message":"does not match the task's contextId","path":"/message/contextId"}]}}`},
		{"input against a schema", &tasks.InputError{Skill: "pricing::quote", Problems: []a2a.Problem{{Path: "", Message: "missing property sku"}, {Path: "/quantity", Message: "must be at least 1"}}},
			`{"code":-32602,"message":"Invalid parameters: input does not match the schema of skill pricing::quote: /: missing property sku","data":{"errors":[{"message":"missing property sku","path":""},{"message":"must be at least 1","path":"/quantity"}],"skill":"pricing::quote"}}`},
		{"push unavailable", tasks.ErrPushUnavailable, `{"code":-32003,"message":"Push Notification is not supported"}`},
		{"a2a error", passThrough, `{"code":-32005,"message":"Incompatible content types","data":{"mimeType":"image/png"}}`},
		{"a2a error, wrapped", fmt.Errorf("send: %w", passThrough), `{"code":-32005,"message":"Incompatible content types","data":{"mimeType":"image/png"}}`},
		{"internal", errors.New("disk on fire"), `{"code":-32603,"message":"Internal error"}`},
		{"internal, wrapping a sentinel message", fmt.Errorf("disk on fire: %v", tasks.ErrNotFound), `{"code":-32603,"message":"Internal error"}`},
	}
	methods := []struct {
		name   string
		params string
	}{
		{"message/send", `{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}`},
		{"tasks/get", `{"id":"t1"}`},
		{"tasks/cancel", `{"id":"t1"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			fake := &TaskService{
				SendFn: func(context.Context, tasks.Caller, a2a.SendParams) (*a2a.Task, error) { return nil, tc.err },
				GetFn:  func(context.Context, tasks.Caller, string, *int) (*a2a.Task, error) { return nil, tc.err },
				CancelFn: func(context.Context, tasks.Caller, string) (*a2a.Task, error) {
					return nil, tc.err
				},
			}
			ts := MustServe(t, fake, func(c *jsonrpc.Config) { c.Logger = zerolog.New(&logs) })
			for i, m := range methods {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"r%d","method":%q,"params":%s}`, i, m.name, m.params)
				want := fmt.Sprintf(`{"jsonrpc":"2.0","id":"r%d","error":%s}`, i, tc.want)
				got := rpc(t, ts, body)
				if string(got) != want {
					t.Errorf("%s returning %v:\n got %s\nwant %s", m.name, tc.err, got, want)
				}
				if bytes.Contains(got, []byte("disk on fire")) {
					t.Errorf("%s: the answer leaks the error text: %s", m.name, got)
				}
			}
			if n := fake.Calls(); n != int64(len(methods)) {
				t.Errorf("task service called %d times, want %d", n, len(methods))
			}
			// Only unexpected errors are logged as errors, once per request.
			wantLogged := 0
			if strings.Contains(tc.want, "-32603") {
				wantLogged = len(methods)
			}
			if got := strings.Count(logs.String(), `"level":"error"`); got != wantLogged {
				t.Errorf("%d errors logged, want %d; log:\n%s", got, wantLogged, logs.String())
			}
		})
	}
	if a2a.ErrTaskNotFound.Data != nil || passThrough.Code != a2a.CodeContentTypeNotSupported {
		t.Errorf("the mapping modified its errors: %#v, %#v", a2a.ErrTaskNotFound, passThrough)
	}
}

func TestInternalErrorLog(t *testing.T) {
	var logs syncBuffer
	fake := &TaskService{
		GetFn: func(context.Context, tasks.Caller, string, *int) (*a2a.Task, error) {
			return nil, errors.New("disk on fire")
		},
	}
	ts := MustServe(t, fake, func(c *jsonrpc.Config) { c.Logger = zerolog.New(&logs) })
	resp, body := testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(getT1)))
	if want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}`; string(body) != want {
		t.Fatalf("body %s, want %s", body, want)
	}
	reqID := resp.Header.Get("X-Request-Id")
	if reqID == "" {
		t.Fatal("no X-Request-Id header")
	}
	var entry map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["error"] == "disk on fire" {
			if entry != nil {
				t.Errorf("the error was logged twice: %s", logs.String())
			}
			entry = m
		}
	}
	if entry == nil {
		t.Fatalf("the error was not logged: %s", logs.String())
	}
	if entry["level"] != "error" || entry["req_id"] != reqID || entry["rpc_method"] != "tasks/get" {
		t.Errorf("log entry %v, want level error, req_id %q, rpc_method tasks/get", entry, reqID)
	}
}

func TestServiceReceivesParams(t *testing.T) {
	type call struct {
		caller tasks.Caller
		send   a2a.SendParams
		id     string
		hl     *int
	}
	var (
		mu   sync.Mutex
		last call
	)
	record := func(c call) {
		mu.Lock()
		defer mu.Unlock()
		last = c
	}
	got := func() call {
		mu.Lock()
		defer mu.Unlock()
		c := last
		last = call{}
		return c
	}
	fake := &TaskService{
		SendFn: func(_ context.Context, caller tasks.Caller, p a2a.SendParams) (*a2a.Task, error) {
			record(call{caller: caller, send: p})
			return task("t-new"), nil
		},
		GetFn: func(_ context.Context, caller tasks.Caller, id string, hl *int) (*a2a.Task, error) {
			record(call{caller: caller, id: id, hl: hl})
			return task(id), nil
		},
		CancelFn: func(_ context.Context, caller tasks.Caller, id string) (*a2a.Task, error) {
			record(call{caller: caller, id: id})
			return task(id), nil
		},
	}
	ts := MustServe(t, fake, func(c *jsonrpc.Config) {
		c.Caller = func(r *http.Request) tasks.Caller {
			return tasks.Caller{ID: r.Header.Get("X-Test-Caller"), Tiers: []string{"gold"}}
		}
	})
	post := func(body string) []byte {
		t.Helper()
		req := newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(body))
		req.Header.Set("X-Test-Caller", "alice")
		resp, out := testkit.RoundTrip(t, nil, req)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return out
	}
	alice := tasks.Caller{ID: "alice", Tiers: []string{"gold"}}

	t.Run("message/send", func(t *testing.T) {
		out := post(`{"jsonrpc":"2.0","id":"s","method":"message/send","params":{
			"message":{"kind":"message","messageId":"m-1","contextId":"c-1","taskId":"t-0","role":"user",
				"referenceTaskIds":["t-ref"],"metadata":{"k":"v"},
				"parts":[{"kind":"text","text":"hi"},{"kind":"data","data":{"n":1}},{"kind":"file","file":{"uri":"https://example.com/f"}}]},
			"configuration":{"blocking":false,"historyLength":0,"acceptedOutputModes":["application/json"]},
			"metadata":{"trace":"x"}}}`)
		if want := `{"jsonrpc":"2.0","id":"s","result":` + taskJSON(t, task("t-new")) + `}`; string(out) != want {
			t.Errorf("answer %s, want %s", out, want)
		}
		c := got()
		if !reflect.DeepEqual(c.caller, alice) {
			t.Errorf("caller = %+v, want %+v", c.caller, alice)
		}
		p := c.send
		if p.Blocking == nil || *p.Blocking {
			t.Errorf("Blocking = %v, want pointer to false", p.Blocking)
		}
		if p.HistoryLength == nil || *p.HistoryLength != 0 {
			t.Errorf("HistoryLength = %v, want pointer to 0", p.HistoryLength)
		}
		wantMsg := a2a.Message{
			MessageID: "m-1", ContextID: "c-1", TaskID: "t-0", Role: a2a.RoleUser,
			ReferenceTaskIDs: []string{"t-ref"}, Metadata: map[string]any{"k": "v"},
			Parts: []a2a.Part{
				a2a.TextPart("hi"),
				a2a.DataPart(json.RawMessage(`{"n":1}`)),
				{Kind: a2a.PartFile, File: &a2a.FileContent{URI: "https://example.com/f"}},
			},
		}
		if !reflect.DeepEqual(p.Message, wantMsg) {
			t.Errorf("Message =\n%#v\nwant\n%#v", p.Message, wantMsg)
		}
		if !reflect.DeepEqual(p.AcceptedOutputModes, []string{"application/json"}) || !reflect.DeepEqual(p.Metadata, map[string]any{"trace": "x"}) {
			t.Errorf("AcceptedOutputModes %v, Metadata %v", p.AcceptedOutputModes, p.Metadata)
		}

		post(`{"jsonrpc":"2.0","id":"s2","method":"message/send","params":{"message":{"messageId":"m-2","role":"user","parts":[{"kind":"text","text":"x"}]},"configuration":{"blocking":true,"historyLength":5}}}`)
		p = got().send
		if p.Blocking == nil || !*p.Blocking || p.HistoryLength == nil || *p.HistoryLength != 5 {
			t.Errorf("Blocking %v, HistoryLength %v; want true, 5", p.Blocking, p.HistoryLength)
		}
		post(`{"jsonrpc":"2.0","id":"s3","method":"message/send","params":{"message":{"messageId":"m-3","role":"user","parts":[{"kind":"text","text":"x"}]}}}`)
		p = got().send
		if p.Blocking != nil || p.HistoryLength != nil {
			t.Errorf("without configuration: Blocking %v, HistoryLength %v; want nil, nil", p.Blocking, p.HistoryLength)
		}
	})

	t.Run("tasks/get", func(t *testing.T) {
		post(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t-7","historyLength":2}}`)
		c := got()
		if !reflect.DeepEqual(c.caller, alice) || c.id != "t-7" || c.hl == nil || *c.hl != 2 {
			t.Errorf("Get(%+v, %q, %v), want (%+v, t-7, 2)", c.caller, c.id, c.hl, alice)
		}
		post(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t-8"}}`)
		if c := got(); c.id != "t-8" || c.hl != nil {
			t.Errorf("Get(%q, %v), want (t-8, nil)", c.id, c.hl)
		}
		post(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t-9","historyLength":0}}`)
		if c := got(); c.id != "t-9" || c.hl == nil || *c.hl != 0 {
			t.Errorf("Get(%q, %v), want (t-9, 0)", c.id, c.hl)
		}
	})

	t.Run("tasks/cancel", func(t *testing.T) {
		out := post(`{"jsonrpc":"2.0","id":9,"method":"tasks/cancel","params":{"id":"t-5","metadata":{}}}`)
		if c := got(); !reflect.DeepEqual(c.caller, alice) || c.id != "t-5" {
			t.Errorf("Cancel(%+v, %q), want (%+v, t-5)", c.caller, c.id, alice)
		}
		if want := `{"jsonrpc":"2.0","id":9,"result":` + taskJSON(t, task("t-5")) + `}`; string(out) != want {
			t.Errorf("answer %s, want %s", out, want)
		}
	})

	t.Run("invalid params do not reach the service", func(t *testing.T) {
		before := fake.Calls()
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[]}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":""}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":5}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":[]}`,
		} {
			if out := post(body); !bytes.Contains(out, []byte(`"code":-32602`)) {
				t.Errorf("%s: answer %s, want -32602", body, out)
			}
		}
		if n := fake.Calls() - before; n != 0 {
			t.Errorf("task service called %d times", n)
		}
	})
}

func TestDefaultCallerIsAnonymous(t *testing.T) {
	var got atomic.Pointer[tasks.Caller]
	fake := &TaskService{
		CancelFn: func(_ context.Context, caller tasks.Caller, id string) (*a2a.Task, error) {
			got.Store(&caller)
			return task(id), nil
		},
	}
	ts := MustServe(t, fake)
	rpc(t, ts, `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"t"}}`)
	if c := got.Load(); c == nil || !reflect.DeepEqual(*c, tasks.Caller{}) {
		t.Errorf("caller = %v, want the anonymous caller", c)
	}
}

// TestConcurrentRequests checks answers never mix up, though request and
// answer buffers are pooled.
func TestConcurrentRequests(t *testing.T) {
	fake := okService()
	ts := MustServe(t, fake)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				id := fmt.Sprintf("t-%d-%d", i, j)
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tasks/get","params":{"id":%q}}`, id, id)
				want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":%s}`, id, taskJSON(t, task(id)))
				req := newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				out, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(out) != want {
					t.Errorf("answer %s, %v; want %s", out, err, want)
				}
			}
		}()
	}
	wg.Wait()
}

func TestAgentCard(t *testing.T) {
	ts := MustServe(t, &TaskService{})
	for _, path := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
		t.Run(path, func(t *testing.T) {
			get := func(inm string) (*http.Response, []byte) {
				t.Helper()
				req := newRequest(t, http.MethodGet, ts.URL+path, "", nil)
				if inm != "" {
					req.Header.Set("If-None-Match", inm)
				}
				return testkit.RoundTrip(t, nil, req)
			}
			resp, body := get("")
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, testCard.JSON) {
				t.Fatalf("GET %s: status %d body %s, want 200 %s", path, resp.StatusCode, body, testCard.JSON)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if et := resp.Header.Get("ETag"); et != testCard.ETag {
				t.Errorf("ETag %q, want %q", et, testCard.ETag)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=300" {
				t.Errorf("Cache-Control %q, want %q", cc, "public, max-age=300")
			}

			tests := []struct {
				ifNoneMatch string
				want        int
			}{
				{`"c0ffee"`, http.StatusNotModified},
				{`W/"c0ffee"`, http.StatusNotModified},
				{`"aaa", "c0ffee"`, http.StatusNotModified},
				{`"aaa",W/"c0ffee" , "bbb"`, http.StatusNotModified},
				{`*`, http.StatusNotModified},
				{`"other"`, http.StatusOK},
				{`"aaa", "bbb"`, http.StatusOK},
				{`c0ffee`, http.StatusOK},
				{`"c0ffee-gzip"`, http.StatusOK},
			}
			for _, tc := range tests {
				resp, body := get(tc.ifNoneMatch)
				if resp.StatusCode != tc.want {
					t.Errorf("If-None-Match %s: status %d, want %d", tc.ifNoneMatch, resp.StatusCode, tc.want)
					continue
				}
				if et := resp.Header.Get("ETag"); et != testCard.ETag {
					t.Errorf("If-None-Match %s: ETag %q, want %q", tc.ifNoneMatch, et, testCard.ETag)
				}
				if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=300" {
					t.Errorf("If-None-Match %s: Cache-Control %q", tc.ifNoneMatch, cc)
				}
				switch tc.want {
				case http.StatusNotModified:
					if len(body) != 0 {
						t.Errorf("If-None-Match %s: 304 with body %q", tc.ifNoneMatch, body)
					}
				case http.StatusOK:
					if !bytes.Equal(body, testCard.JSON) {
						t.Errorf("If-None-Match %s: body %s", tc.ifNoneMatch, body)
					}
				}
			}
		})
	}
}

func TestAgentCardSourceAndMaxAge(t *testing.T) {
	var n atomic.Int64
	fake := &TaskService{}
	ts := MustServe(t, fake, func(c *jsonrpc.Config) {
		c.CardMaxAge = 90 * time.Second
		c.Card = func() transport.Card {
			v := n.Add(1)
			return transport.Card{JSON: []byte(fmt.Sprintf(`{"v":%d}`, v)), ETag: fmt.Sprintf(`"v%d"`, v)}
		}
	})
	for want := 1; want <= 2; want++ {
		resp, body := testkit.RoundTrip(t, nil, newRequest(t, http.MethodGet, ts.URL+"/.well-known/agent-card.json", "", nil))
		if string(body) != fmt.Sprintf(`{"v":%d}`, want) || resp.Header.Get("ETag") != fmt.Sprintf(`"v%d"`, want) {
			t.Errorf("card %s ETag %s, want version %d: the source must be read per request", body, resp.Header.Get("ETag"), want)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=90" {
			t.Errorf("Cache-Control %q, want public, max-age=90", cc)
		}
	}
}

func TestHealthz(t *testing.T) {
	fake := &TaskService{}
	ts := MustServe(t, fake)
	resp, body := testkit.RoundTrip(t, nil, newRequest(t, http.MethodGet, ts.URL+"/healthz", "", nil))
	if resp.StatusCode != http.StatusOK || string(body) != `{"status":"ok"}` {
		t.Errorf("GET /healthz: status %d body %s, want 200 {\"status\":\"ok\"}", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET /healthz: Content-Type %q, want application/json", ct)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("GET /healthz: no X-Request-Id")
	}
	if n := fake.Calls(); n != 0 {
		t.Errorf("task service called %d times", n)
	}
}

// TestUnknownRoute: a path with no route answers 404 with a JSON-RPC
// error, the listener's binding's own shape (not Echo's), in the form of
// the version asked for; so does a transport error of the endpoint (a
// 1.0 client's wrong Content-Type here).
func TestUnknownRoute(t *testing.T) {
	ts := MustServe(t, &TaskService{})
	const info10 = `,"data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"METHOD_NOT_FOUND","domain":"github.com/a2ad/a2ad"}]`
	for _, c := range []struct{ method, path, version, ct, want string }{
		{http.MethodGet, "/nope", "", "application/json", `{"code":-32601,"message":"No A2A endpoint at GET /nope"}`},
		{http.MethodPost, "/a2a/x", "1.0", "application/json", `{"code":-32601,"message":"No A2A endpoint at POST /a2a/x"` + info10 + `}`},
		{http.MethodPost, "/a2a//", "", "application/json", `{"code":-32601,"message":"No A2A endpoint at POST /a2a//"}`},
		{http.MethodDelete, "/", "1.0", "application/json", `{"code":-32601,"message":"No A2A endpoint at DELETE /"` + info10 + `}`},
		{http.MethodPost, "/a2a", "1.0", "text/plain", `{"code":-32600,"message":"Content-Type must be application/json","data":[` +
			`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_REQUEST","domain":"github.com/a2ad/a2ad"}]}`},
	} {
		req := newRequest(t, c.method, ts.URL+c.path, c.ct, strings.NewReader(`{}`))
		if c.version != "" {
			req.Header.Set("A2A-Version", c.version)
		}
		resp, body := testkit.RoundTrip(t, nil, req)
		want := `{"jsonrpc":"2.0","id":null,"error":` + c.want + `}`
		wantStatus := http.StatusNotFound
		if c.ct != "application/json" {
			wantStatus = http.StatusUnsupportedMediaType
		}
		if resp.StatusCode != wantStatus || string(body) != want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: status %d %q body %s, want %d application/json %s", c.method, c.path, resp.StatusCode,
				resp.Header.Get("Content-Type"), body, wantStatus, want)
		}
	}
}

// TestTrailingSlash: POST /a2a/ is the endpoint, as POST /a2a (the
// TCK's client posts to the interface URL plus "/"), and it takes only
// POST as /a2a does.
func TestTrailingSlash(t *testing.T) {
	fake := &TaskService{GetFn: func(context.Context, tasks.Caller, string, *int) (*a2a.Task, error) {
		return nil, tasks.ErrNotFound
	}}
	ts := MustServe(t, fake)
	req := newRequest(t, http.MethodPost, ts.URL+"/a2a/", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"t1"}}`))
	req.Header.Set("A2A-Version", "1.0")
	resp, body := testkit.RoundTrip(t, nil, req)
	want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"Task not found","data":[` +
		`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != want {
		t.Errorf("POST /a2a/: status %d body %s, want 200 %s", resp.StatusCode, body, want)
	}
	if n := fake.calls.Load(); n != 1 {
		t.Errorf("task service called %d times, want 1", n)
	}
	resp, body = testkit.RoundTrip(t, nil, newRequest(t, http.MethodGet, ts.URL+"/a2a/", "", nil))
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost ||
		strings.TrimSpace(string(body)) != `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"use POST for JSON-RPC requests"}}` {
		t.Errorf("GET /a2a/: status %d Allow %q body %s, want 405 POST", resp.StatusCode, resp.Header.Get("Allow"), body)
	}
}

// TestPanicAnswered: a handler that panics is answered with HTTP 500 and
// the panic logged with the request's id, which the client sent.
func TestPanicAnswered(t *testing.T) {
	var logs syncBuffer
	fake := &TaskService{
		GetFn: func(context.Context, tasks.Caller, string, *int) (*a2a.Task, error) { panic("disk on fire") },
	}
	ts := MustServe(t, fake, func(c *jsonrpc.Config) { c.Logger = zerolog.New(&logs) })
	req := newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(getT1))
	req.Header.Set("X-Request-Id", "client-chosen-id")
	resp, body := testkit.RoundTrip(t, nil, req)
	if resp.StatusCode != http.StatusInternalServerError || strings.TrimSpace(string(body)) != `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}` {
		t.Errorf("panicking handler: HTTP %d %s, want 500 {\"error\":\"internal error\"}", resp.StatusCode, body)
	}
	if id := resp.Header.Get("X-Request-Id"); id != "client-chosen-id" {
		t.Errorf("X-Request-Id %q, want the client's", id)
	}
	if !strings.Contains(logs.String(), `"error":"disk on fire","req_id":"client-chosen-id","message":"handler panicked"`) {
		t.Errorf("panic not logged with its request id: %s", logs.String())
	}
}
