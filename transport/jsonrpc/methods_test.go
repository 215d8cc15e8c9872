package jsonrpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport/jsonrpc"
)

type emptyLister struct{}

func (emptyLister) List(context.Context, tasks.Caller, tasks.ListQuery) (tasks.ListPage, error) {
	return tasks.ListPage{PageSize: 50}, nil
}

// TestMethodsAreTheKnownOnes pins Methods to the dispatcher: each listed
// method is answered (by a result or an error of its own), and a method
// not listed is "method not found".
func TestMethodsAreTheKnownOnes(t *testing.T) {
	ts := MustServe(t, okService(), func(c *jsonrpc.Config) { c.Lister = emptyLister{} })
	methods := jsonrpc.Methods()
	if len(methods) != 22 {
		t.Errorf("Methods() has %d names, want 22 (11 of 0.3, 11 of 1.0)", len(methods))
	}
	seen := map[string]bool{}
	for _, m := range methods {
		if seen[m] {
			t.Errorf("Methods() lists %q twice", m)
		}
		seen[m] = true
		out := rpc(t, ts, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{}}`, m))
		var resp struct {
			Error *struct{ Code int } `json:"error"`
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Error != nil && resp.Error.Code == a2a.CodeMethodNotFound {
			t.Errorf("%s: answered %s, want a method a2ad knows", m, out)
		}
	}
	// Methods returns a copy: changing it changes nothing.
	methods[0] = "x"
	if jsonrpc.Methods()[0] != "message/send" {
		t.Errorf("Methods()[0] = %q after the caller changed its copy", jsonrpc.Methods()[0])
	}
	out := rpc(t, ts, `{"jsonrpc":"2.0","id":1,"method":"tasks/Get","params":{}}`)
	if want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: tasks/Get","data":{"method":"tasks/Get"}}}`; string(out) != want {
		t.Errorf("unknown method: %s, want %s", out, want)
	}
}

type observed struct {
	method  string
	outcome audit.Outcome
	reason  audit.Reason
	d       time.Duration
}

// TestObserve gets one observation per call, with the audit record's
// classification, also when no audit log is kept.
func TestObserve(t *testing.T) {
	var (
		mu  sync.Mutex
		got []observed
	)
	fake := okService()
	fake.GetFn = func(_ context.Context, _ tasks.Caller, id string, _ *int) (*a2a.Task, error) {
		if id == "missing" {
			return nil, tasks.ErrNotFound
		}
		time.Sleep(5 * time.Millisecond)
		return task(id), nil
	}
	ts := MustServe(t, fake, func(c *jsonrpc.Config) {
		c.Observe = func(_, method string, outcome audit.Outcome, reason audit.Reason, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, observed{method, outcome, reason, d})
		}
	})
	rpc(t, ts, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`)
	rpc(t, ts, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"t1"}}`)
	rpc(t, ts, `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"missing"}}`)
	rpc(t, ts, `{"jsonrpc":"2.0","id":4,"method":"x-evil-1234","params":{}}`)
	rpc(t, ts, `{"jsonrpc":"2.0","id":5,"method":"tasks/get"`)

	want := []observed{
		{"message/send", audit.OutcomeOK, audit.ReasonCompleted, 0},
		{"tasks/get", audit.OutcomeOK, audit.ReasonOK, 5 * time.Millisecond},
		{"GetTask", audit.OutcomeClientError, audit.ReasonNotFound, 0},
		{"x-evil-1234", audit.OutcomeClientError, audit.ReasonInvalid, 0},
		{"", audit.OutcomeClientError, audit.ReasonInvalid, 0},
	}
	// The observation follows the answer: wait for the last one.
	waitForCount(&mu, func() int { return len(got) }, len(want))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("got %d observations, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.method != w.method || g.outcome != w.outcome || g.reason != w.reason {
			t.Errorf("observation %d = (%q, %s, %s), want (%q, %s, %s)", i, g.method, g.outcome, g.reason, w.method, w.outcome, w.reason)
		}
		if g.d < w.d || g.d > 5*time.Second {
			t.Errorf("observation %d: duration %v, want at least %v", i, g.d, w.d)
		}
	}
}

// waitForCount waits, 5 s at the most, until count (read under mu) is at
// least n.
func waitForCount(mu *sync.Mutex, count func() int, n int) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		mu.Lock()
		c := count()
		mu.Unlock()
		if c >= n {
			return
		}
	}
}
