package rest_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/jsonrpc"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// TestLimitRefusals: the limits refuse HTTP+JSON calls as they refuse
// JSON-RPC ones — a caller's rate, bytes or in-flight cap with 429, the
// server's cap with 503, the throttle of failed authentications with
// 429 — each with Retry-After in whole seconds and a google.rpc.Status
// body, a stream's call as any other; and each refusal is audited under
// the "rest" transport with its reason.
func TestLimitRefusals(t *testing.T) {
	fake := &transporttest.Service{GetFn: func(id string, _ *int) (*a2a.Task, error) { return task(id, a2a.StateCompleted), nil }}
	limits := &transporttest.Limits{Retry: 3 * time.Second}
	ts, auditLog := serve(t, fake, func(c *jsonrpc.Config) {
		c.Auth, c.Admit, c.Throttle = transporttest.OneKey("k1"), limits, limits
	})
	base := ts.URL + "/a2a/rest"
	status := func(code int, name, msg, reason, meta string) string {
		return `{"error":{"code":` + itoa(code) + `,"status":"` + name + `","message":"` + msg + `","details":[` +
			`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"` + reason + `","domain":"github.com/a2ad/a2ad","metadata":` + meta + `}]}}`
	}
	tests := []struct {
		name       string
		deny       transport.Denial
		code       int
		retryAfter string
		want       string
		audit      string
	}{
		{"caller's rate", transport.Denial{Scope: "caller", RateLimited: true, RetryAfter: 1500 * time.Millisecond}, 429, "2",
			status(429, "RESOURCE_EXHAUSTED", a2a.ErrRateLimited.Message, "RATE_LIMITED", `{"retryAfterMs":"1500","scope":"caller"}`),
			`"reason":"rate_limited","code":-32052`},
		{"caller's bytes", transport.Denial{Scope: "bytes", RateLimited: true, RetryAfter: 250 * time.Millisecond}, 429, "1",
			status(429, "RESOURCE_EXHAUSTED", a2a.ErrBytesRateLimited.Message, "RATE_LIMITED", `{"retryAfterMs":"250","scope":"bytes"}`),
			`"reason":"bytes_rate_limited","code":-32052`},
		{"caller's in-flight cap", transport.Denial{Scope: "caller", RetryAfter: time.Second}, 429, "1",
			status(429, "RESOURCE_EXHAUSTED", a2a.ErrCallerInFlight.Message, "TOO_MANY_IN_FLIGHT", `{"retryAfterMs":"1000","scope":"caller"}`),
			`"reason":"over_capacity","code":-32053`},
		{"server's in-flight cap", transport.Denial{Scope: "server", RetryAfter: time.Second}, 503, "1",
			status(503, "UNAVAILABLE", a2a.ErrServerInFlight.Message, "TOO_MANY_IN_FLIGHT", `{"retryAfterMs":"1000","scope":"server"}`),
			`"reason":"over_capacity","code":-32053`},
	}
	for _, tt := range tests {
		limits.Deny(&tt.deny)
		// A call that names no operation, or a version a2ad does not
		// speak, is admitted too, as JSON-RPC's are.
		for _, c := range []struct{ path, version string }{
			{"/tasks/t1", ""}, {"/tasks/t1:subscribe", ""}, {"/tasks/t1/artifacts", ""}, {"/tasks/t1", "0.3"},
		} {
			code, h, body := call(t, "GET", base+c.path, "", "", "X-API-Key", "k1", "A2A-Version", c.version)
			if code != tt.code || h.Get("Retry-After") != tt.retryAfter || h.Get("Content-Type") != "application/json" || body != tt.want {
				t.Errorf("%s, GET %s (A2A-Version %q): %d Retry-After %q %q\n got %s\nwant %d Retry-After %q\n     %s",
					tt.name, c.path, c.version, code, h.Get("Retry-After"), h.Get("Content-Type"), body, tt.code, tt.retryAfter, tt.want)
			}
		}
		if recs := auditLog.String(); !strings.Contains(recs, `"rpc_method":"SubscribeToTask"`) || !strings.Contains(recs, tt.audit) {
			t.Errorf("%s: audit records lack %s:\n%s", tt.name, tt.audit, recs)
		}
	}
	limits.Deny(nil)
	if code, _, body := call(t, "GET", base+"/tasks/t1", "", "", "X-API-Key", "k1"); code != 200 {
		t.Fatalf("admitted: %d %s", code, body)
	}

	// Two failed authentications, then the address is throttled, the
	// right key too.
	limits.MaxFails = 2
	for range 2 {
		if code, _, _ := call(t, "GET", base+"/tasks/t1", "", "", "X-API-Key", "k2"); code != 401 {
			t.Fatalf("a bad key: %d, want 401", code)
		}
	}
	code, h, body := call(t, "GET", base+"/tasks/t1", "", "", "X-API-Key", "k1")
	want := status(429, "RESOURCE_EXHAUSTED", a2a.ErrAuthThrottled.Message, "RATE_LIMITED", `{"retryAfterMs":"3000","scope":"auth"}`)
	if code != 429 || h.Get("Retry-After") != "3" || body != want {
		t.Errorf("throttled: %d Retry-After %q\n got %s\nwant %s", code, h.Get("Retry-After"), body, want)
	}

	transporttest.CheckThrottledAudit(t, auditLog.String(), "rest")
}

// TestUnavailableSaysWhenToRetry: a server that is busy or stopping
// answers 503 with Retry-After: 1.
func TestUnavailableSaysWhenToRetry(t *testing.T) {
	fake := &transporttest.Service{GetFn: func(id string, _ *int) (*a2a.Task, error) {
		if id == "busy" {
			return nil, tasks.ErrBusy
		}
		return nil, tasks.ErrClosed
	}}
	ts, _ := serve(t, fake)
	for _, id := range []string{"busy", "closed"} {
		if code, h, body := call(t, "GET", ts.URL+"/a2a/rest/tasks/"+id, "", ""); code != 503 || h.Get("Retry-After") != "1" || !strings.Contains(body, `"status":"UNAVAILABLE"`) {
			t.Errorf("GET /tasks/%s: %d Retry-After %q %s, want 503 UNAVAILABLE Retry-After 1", id, code, h.Get("Retry-After"), body)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
