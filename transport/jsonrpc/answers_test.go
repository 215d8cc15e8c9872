package jsonrpc_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/jsonrpc"
)

// answerGate is a transport.AnswerAdmitter that records what it is asked
// and refuses while refuse is set.
type answerGate struct {
	mu     sync.Mutex
	asked  []int64
	held   int64
	refuse bool
}

func (g *answerGate) AdmitAnswer(_ context.Context, _ transport.Principal, n int64) (func(), *transport.Denial) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, n)
	if g.refuse {
		return nil, &transport.Denial{Scope: "caller", RetryAfter: time.Second}
	}
	g.held += n
	return func() { g.mu.Lock(); g.held -= n; g.mu.Unlock() }, nil
}

// TestReadAnswersAdmittedByBytes: a get asks the answer bound for the
// bytes of its task's parts and gives them back once answered; a refused
// one is the in-flight error, -32053 with retryAfterMs and scope caller,
// and a send is never asked (it changed a task already). The answer's
// bytes are charged to the caller's budget of bytes (--rate-bytes).
func TestReadAnswersAdmittedByBytes(t *testing.T) {
	g := &answerGate{}
	fake := okService()
	fake.GetFn = func(_ context.Context, _ tasks.Caller, id string, _ *int) (*a2a.Task, error) {
		tk := task(id)
		tk.History = []a2a.Message{{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(strings.Repeat("x", 5000))}}}
		return tk, nil
	}
	m := &meter{}
	ts := MustServe(t, fake, func(c *jsonrpc.Config) { c.Answers, c.Bytes = g, m })
	if resp, body := testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(getT1))); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"result"`) {
		t.Fatalf("get: HTTP %d %.200s", resp.StatusCode, body)
	}
	g.mu.Lock()
	asked, held := append([]int64(nil), g.asked...), g.held
	g.refuse = true
	g.mu.Unlock()
	if len(asked) != 1 || asked[0] < 5000 || held != 0 {
		t.Fatalf("asked %v, held %d after the answer; want one ask of its 5000+ bytes, given back", asked, held)
	}
	// The caller's budget of bytes pays for the answer too.
	if taken, charged := m.calls(); len(taken) != 2 || taken[1] != asked[0] || len(charged) != 0 {
		t.Fatalf("took %v, charged %v of the byte budget; want the body's length, then the answer's %d bytes", taken, charged, asked[0])
	}
	resp, body := testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(getT1)))
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32053,"message":"Too many requests in flight for this caller; retry after data.retryAfterMs milliseconds","data":{"retryAfterMs":1000,"scope":"caller"}}}`
	if resp.StatusCode != http.StatusOK || string(body) != want {
		t.Fatalf("refused get: HTTP %d %s\nwant %s", resp.StatusCode, body, want)
	}
	// An answer that finds the budget of bytes in debt is -32052.
	g.mu.Lock()
	g.refuse = false
	g.mu.Unlock()
	m.mu.Lock()
	m.refuseAfter = 1
	m.mu.Unlock()
	resp, body = testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(getT1)))
	want = `{"jsonrpc":"2.0","id":1,"error":{"code":-32052,"message":"Request bytes rate exceeded; retry after data.retryAfterMs milliseconds","data":{"retryAfterMs":1500,"scope":"bytes"}}}`
	if resp.StatusCode != http.StatusOK || string(body) != want {
		t.Fatalf("get with the budget in debt: HTTP %d %s\nwant %s", resp.StatusCode, body, want)
	}
	m.mu.Lock()
	m.refuse = false
	m.mu.Unlock()
	send := `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
	if resp, body := testkit.RoundTrip(t, nil, newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(send))); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"result"`) {
		t.Fatalf("send while reads are refused: HTTP %d %.200s", resp.StatusCode, body)
	}
}
