package jsonrpc_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/jsonrpc"
)

// meter is a transport.ByteMeter that records what it is told, and refuses
// while refuse is set.
type meter struct {
	mu      sync.Mutex
	taken   []int64
	charged []int64
	refuse  bool
	// refuseAfter, when above 0, refuses every take after that many
	// more (counting down).
	refuseAfter int
}

var _ transport.ByteMeter = (*meter)(nil)

func (m *meter) TakeBytes(_ transport.Principal, n int64) *transport.Denial {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refuseAfter > 0 {
		if m.refuseAfter--; m.refuseAfter == 0 {
			m.refuse = true
		}
	} else if m.refuse {
		return &transport.Denial{Scope: "bytes", RateLimited: true, RetryAfter: 1500 * time.Millisecond}
	}
	m.taken = append(m.taken, n)
	return nil
}

func (m *meter) ChargeBytes(_ transport.Principal, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.charged = append(m.charged, n)
}

func (m *meter) calls() (taken, charged []int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int64(nil), m.taken...), append([]int64(nil), m.charged...)
}

// TestRequestBytesMetered: a body is charged as declared before it is
// read, and the difference once it is read (a chunked one has no declared
// length); a caller whose budget is in debt is refused with 429, -32052
// scope "bytes", Retry-After, before its body is read, and the in-flight
// slot it was given is handed back.
func TestRequestBytesMetered(t *testing.T) {
	m := &meter{}
	var mu sync.Mutex
	active := 0
	var reasons []audit.Reason
	ts := MustServe(t, okService(), func(c *jsonrpc.Config) {
		c.Bytes = m
		c.Admit = admitFn(func(transport.Principal) (func(), *transport.Denial) {
			mu.Lock()
			active++
			mu.Unlock()
			return func() { mu.Lock(); active--; mu.Unlock() }, nil
		})
		c.Observe = func(_, _ string, _ audit.Outcome, r audit.Reason, _ time.Duration) {
			mu.Lock()
			reasons = append(reasons, r)
			mu.Unlock()
		}
	})

	// Content-Length: charged ahead, nothing to settle.
	if resp, _ := testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(getT1))); resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	// Chunked: nothing ahead, all of it once read.
	resp, err := http.Post(ts.URL+"/a2a", "application/json", onlyReader{strings.NewReader(getT1)})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chunked: HTTP %d", resp.StatusCode)
	}
	n := int64(len(getT1))
	taken, charged := m.calls()
	if len(taken) != 2 || taken[0] != n || taken[1] != 0 || len(charged) != 1 || charged[0] != n {
		t.Fatalf("taken %v, charged %v; want [%d 0], [%d]", taken, charged, n, n)
	}

	// In debt: refused unread, in the version the header asks for.
	m.mu.Lock()
	m.refuse = true
	m.mu.Unlock()
	for _, tc := range []struct {
		header, want string
	}{
		{"A2A-Version: 0.3", `{"jsonrpc":"2.0","id":null,"error":{"code":-32052,"message":"Request bytes rate exceeded; retry after data.retryAfterMs milliseconds","data":{"retryAfterMs":1500,"scope":"bytes"}}}`},
		{"A2A-Version: 1.0", `{"jsonrpc":"2.0","id":null,"error":{"code":-32052,"message":"Request bytes rate exceeded; retry after data.retryAfterMs milliseconds","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMITED","domain":"github.com/a2ad/a2ad","metadata":{"retryAfterMs":"1500","scope":"bytes"}}]}}`},
	} {
		c := dialRaw(t, ts)
		c.head(t, len(getT1), tc.header)
		status, _, body := c.answer(t, 5*time.Second)
		if status != http.StatusTooManyRequests || body != tc.want {
			t.Errorf("%s: in debt: HTTP %d %s\nwant 429 %s", tc.header, status, body, tc.want)
		}
	}
	// With Retry-After in whole seconds, rounded up.
	resp, _ = testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(getT1)))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("in debt: HTTP %d Retry-After %q, want 429 2", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// The audit is written once the answer is: wait for the last one.
	want := []audit.Reason{audit.ReasonOK, audit.ReasonOK, audit.ReasonBytesLimited, audit.ReasonBytesLimited, audit.ReasonBytesLimited}
	waitForCount(&mu, func() int { return len(reasons) }, len(want))
	mu.Lock()
	defer mu.Unlock()
	if active != 0 {
		t.Errorf("%d in-flight slots held after the refusals, want 0", active)
	}
	if taken2, charged2 := m.calls(); len(taken2) != 2 || len(charged2) != 1 {
		t.Errorf("a refused request was charged: taken %v, charged %v", taken2, charged2)
	}
	if len(reasons) != len(want) {
		t.Fatalf("reasons %v, want %v", reasons, want)
	}
	for i := range want {
		if reasons[i] != want[i] {
			t.Errorf("reason %d = %s, want %s", i, reasons[i], want[i])
		}
	}
}
