package jsonrpc_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
)

// TestUnavailable: a call that needs the task store while it cannot be
// reached, or that comes while the server drains for shutdown, is
// answered HTTP 503 with Retry-After (a load balancer retries it
// elsewhere) and the pinned -32057 or -32051, in the 0.3 shapes and in
// the 1.0 ones (ErrorInfo STORE_UNAVAILABLE, SHUTTING_DOWN); the details
// stay in the server.
func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		v03  string
		v10  string
	}{
		{"store unavailable", fmt.Errorf("get task: %w: dial tcp 10.0.0.9:5432: connect: connection refused", tasks.ErrStoreUnavailable),
			`{"code":-32057,"message":"Task store unavailable; retry later"}`,
			`{"code":-32057,"message":"Task store unavailable; retry later","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"STORE_UNAVAILABLE","domain":"github.com/a2ad/a2ad"}]}`},
		{"shutting down", tasks.ErrClosed,
			`{"code":-32051,"message":"Server is shutting down; retry later"}`,
			`{"code":-32051,"message":"Server is shutting down; retry later","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"SHUTTING_DOWN","domain":"github.com/a2ad/a2ad"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) { testUnavailable(t, tc.err, tc.v03, tc.v10) })
	}
}

func testUnavailable(t *testing.T, down error, v03, v10 string) {
	fake := &TaskService{
		SendFn: func(context.Context, tasks.Caller, a2a.SendParams) (*a2a.Task, error) { return nil, down },
		GetFn:  func(context.Context, tasks.Caller, string, *int) (*a2a.Task, error) { return nil, down },
		CancelFn: func(context.Context, tasks.Caller, string) (*a2a.Task, error) {
			return nil, down
		},
	}
	ts := MustServe(t, fake)
	const msg = `{"messageId":"m1","role":"%s","parts":[%s]}`
	tests := []struct{ method, params, want string }{
		{"message/send", fmt.Sprintf(`{"message":`+msg+`}`, "user", `{"kind":"text","text":"hi"}`), v03},
		{"tasks/get", `{"id":"t1"}`, v03},
		{"tasks/cancel", `{"id":"t1"}`, v03},
		{"SendMessage", fmt.Sprintf(`{"message":`+msg+`}`, "ROLE_USER", `{"text":"hi"}`), v10},
		{"GetTask", `{"id":"t1"}`, v10},
		{"CancelTask", `{"id":"t1"}`, v10},
	}
	for i, tc := range tests {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, i, tc.method, tc.params)
		resp, got := testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(body)))
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("%s: status %d, Retry-After %q; want 503, 1", tc.method, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":%s}`, i, tc.want); string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.method, got, want)
		}
	}
}
