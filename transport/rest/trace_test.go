package rest_test

import (
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/transport/jsonrpc"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// TestTracesEachHTTPCall: with a Tracer, a call over JSON-RPC or HTTP+JSON
// is a server span, a child of the traceparent it carries, named for its
// method, with what its audit record says; the service runs under it.
func TestTracesEachHTTPCall(t *testing.T) {
	for _, tc := range []struct {
		name, path, ctype, body, method, transport string
	}{
		{"jsonrpc", "/a2a", "application/json",
			`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
			"message/send", "jsonrpc"},
		{"rest", "/a2a/rest/message:send", "application/a2a+json",
			`{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`,
			"SendMessage", "rest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := transporttest.NewTraces()
			fake := &transporttest.Service{
				SendFn:  func(a2a.SendParams) (*a2a.Task, error) { return task("t1", a2a.StateCompleted), nil },
				SendCtx: tr.SendCtx,
			}
			ts, _ := serve(t, fake, func(c *jsonrpc.Config) { c.Tracer = tr.Tracer })
			code, _, body := call(t, "POST", ts.URL+tc.path, tc.ctype, tc.body, "traceparent", transporttest.Traceparent)
			if code != 200 {
				t.Fatalf("%s = %d %s", tc.method, code, body)
			}
			tr.CheckCall(t, tc.method, map[string]string{
				"a2a.method": tc.method, "a2a.transport": tc.transport, "a2a.caller": "",
				"a2a.task_id": "t1", "a2a.outcome": "ok", "a2a.reason": "completed",
			})
		})
	}
}

// TestNoTracerNoSpan: without a Tracer, a traceparent changes nothing:
// the service's context carries no span.
func TestNoTracerNoSpan(t *testing.T) {
	tr := transporttest.NewTraces()
	fake := &transporttest.Service{
		SendFn:  func(a2a.SendParams) (*a2a.Task, error) { return task("t1", a2a.StateCompleted), nil },
		SendCtx: tr.SendCtx,
	}
	ts, _ := serve(t, fake)
	code, _, _ := call(t, "POST", ts.URL+"/a2a/rest/message:send", "application/json",
		`{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, "traceparent", transporttest.Traceparent)
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	if sc := tr.Sent(); len(sc) != 1 || sc[0].IsValid() {
		t.Errorf("Send's context carries %v, want no span", sc)
	}
}
