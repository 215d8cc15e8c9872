package jsonrpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/jsonrpc"
)

// keyAuth is a fake transport.Authenticator: every request is the caller
// "acme" with a key.
type keyAuth struct{}

func (keyAuth) Authenticate(_ *http.Request, addr string) (transport.Principal, transport.AuthResult) {
	return transport.Principal{Caller: tasks.Caller{ID: "acme"}, LimitKey: "key:acme", KeyHash: [32]byte{1}}, transport.Authenticated
}

// watcher is a fake transport.StreamService whose Watch sends the task, then
// waits for its context to end.
type watcher struct{ started chan struct{} }

func (w watcher) Stream(ctx context.Context, _ tasks.Caller, _ a2a.SendParams, _ *uint64, _ func(tasks.StreamEvent) error) (tasks.Outcome, error) {
	return tasks.Outcome{}, nil
}

func (w watcher) Watch(ctx context.Context, _ tasks.Caller, id string, _ *uint64, emit func(tasks.StreamEvent) error) error {
	if err := emit(tasks.StreamEvent{Seq: 1, Task: &a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking}}}); err != nil {
		return err
	}
	close(w.started)
	<-ctx.Done()
	return ctx.Err()
}

func (w watcher) Subscribe(ctx context.Context, c tasks.Caller, id string, after *uint64, emit func(tasks.StreamEvent) error) error {
	return w.Watch(ctx, c, id, after, emit)
}

func resubscribe(tb testing.TB, url string) *http.Response {
	tb.Helper()
	req, _ := http.NewRequest("POST", url+"/a2a", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tasks/resubscribe","params":{"id":"t1"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestEndRevokedStreams: a stream whose key is revoked ends with the
// -32054 event, whether the revocation comes while it streams
// (EndRevokedStreams) or just before it starts.
func TestEndRevokedStreams(t *testing.T) {
	var revoked atomic.Bool
	w := watcher{started: make(chan struct{})}
	auditLog := &syncBuffer{}
	srv := jsonrpc.New(jsonrpc.Config{
		Config: transport.Config{
			Tasks: &TaskService{tb: t}, Auth: keyAuth{}, Streams: w, KeepAlive: -1,
			Revoked: func(p transport.Principal) bool { return p.KeyHash == [32]byte{1} && revoked.Load() },
			Audit:   audit.Logger(zerolog.New(auditLog)),
		},
		Card: func() transport.Card { return testCard },
	})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	resp := resubscribe(t, ts.URL)
	<-w.started
	if n := srv.EndRevokedStreams(); n != 0 {
		t.Fatalf("EndRevokedStreams() = %d before the revocation, want 0", n)
	}
	revoked.Store(true)
	if n := srv.EndRevokedStreams(); n != 1 {
		t.Fatalf("EndRevokedStreams() = %d, want 1", n)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			lines = append(lines, l)
		}
	}
	want := []string{"id: 1", "data: ", `data: {"jsonrpc":"2.0","id":9,"error":{"code":-32054,"message":"The API key was revoked: the stream is closed"}}`}
	if len(lines) != 3 || lines[0] != want[0] || !strings.HasPrefix(lines[1], want[1]) || lines[2] != want[2] {
		t.Errorf("stream:\n%s\nwant the task event, then\n%s", strings.Join(lines, "\n"), want[2])
	}

	// Revoked before the stream starts: the error alone.
	resp = resubscribe(t, ts.URL)
	sc = bufio.NewScanner(resp.Body)
	var got []string
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			got = append(got, l)
		}
	}
	if len(got) != 1 || got[0] != want[2] {
		t.Errorf("a stream of a revoked key: %q, want only %q", got, want[2])
	}
	recs := strings.Count(auditLog.String(), `"reason":"key_revoked"`)
	if recs != 2 {
		t.Errorf("%d key_revoked audit records, want 2:\n%s", recs, auditLog.String())
	}
}

// throttle is a fake transport.AuthThrottle.
type throttle struct {
	report int
	fails  atomic.Int64
	addr   atomic.Value
}

func (th *throttle) Check(addr string) (time.Duration, int, bool) {
	th.addr.Store(addr)
	if th.report < 0 {
		return 0, 0, true
	}
	return 1500 * time.Millisecond, th.report, false
}

func (th *throttle) Fail(string) { th.fails.Add(1) }

type badAuth struct{ res transport.AuthResult }

func (a badAuth) Authenticate(*http.Request, string) (transport.Principal, transport.AuthResult) {
	return transport.Principal{}, a.res
}

// TestThrottleAudit: a throttled request is answered 429 without being
// authenticated; it is observed, and audited only when the throttle says a
// summary is due; failures are told to the throttle; every record names
// the client address.
func TestThrottleAudit(t *testing.T) {
	for _, tt := range []struct {
		name       string
		report     int
		res        transport.AuthResult
		status     int
		audited    string // a fragment of the one record, "" for none
		fails      int64
		challenge  string
		observed   audit.Reason
		retryAfter string
	}{
		{"refused, no record due", 0, transport.BadCredentials, 429, "", 0, "", audit.ReasonAuthThrottled, "2"},
		{"refused, a summary of 7", 7, transport.BadCredentials, 429, `"reason":"auth_throttled","code":-32052,"refused":7`, 0, "", audit.ReasonAuthThrottled, "2"},
		{"checked, bad key", -1, transport.BadCredentials, 401, `"client_addr":"127.0.0.1","caller":""`, 1, `Bearer realm="a2ad", error="invalid_token"`, audit.ReasonUnauthenticated, ""},
		{"checked, conflicting keys", -1, transport.ConflictingCredentials, 401, `"reason":"unauthenticated","code":-32054`, 1, `Bearer realm="a2ad", error="invalid_request"`, audit.ReasonUnauthenticated, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			th := &throttle{report: tt.report}
			auditLog := &syncBuffer{}
			var observed audit.Reason
			ts := MustServe(t, &TaskService{}, func(c *jsonrpc.Config) {
				c.Auth = badAuth{tt.res}
				c.Throttle = th
				c.Audit = audit.Logger(zerolog.New(auditLog))
				c.Observe = func(_, _ string, _ audit.Outcome, r audit.Reason, _ time.Duration) { observed = r }
			})
			req, _ := http.NewRequest("POST", ts.URL+"/a2a", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`))
			req.Header.Set("Content-Type", "application/json")
			resp, body := testkit.RoundTrip(t, nil, req)
			if resp.StatusCode != tt.status || resp.Header.Get("WWW-Authenticate") != tt.challenge || resp.Header.Get("Retry-After") != tt.retryAfter {
				t.Errorf("HTTP %d WWW-Authenticate %q Retry-After %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header.Get("Retry-After"), body)
			}
			if tt.status == 429 {
				want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32052,"message":"Too many failed authentications from this address; retry after data.retryAfterMs milliseconds","data":{"retryAfterMs":1500,"scope":"auth"}}}`
				if string(body) != want {
					t.Errorf("body %s\nwant %s", body, want)
				}
			}
			if got := th.fails.Load(); got != tt.fails {
				t.Errorf("%d failures told to the throttle, want %d", got, tt.fails)
			}
			if observed != tt.observed {
				t.Errorf("observed %q, want %q", observed, tt.observed)
			}
			if th.addr.Load() != "127.0.0.1" {
				t.Errorf("throttle checked %v, want the peer 127.0.0.1", th.addr.Load())
			}
			log := auditLog.String()
			switch {
			case tt.audited == "" && log != "":
				t.Errorf("audited %s, want nothing", log)
			case tt.audited != "":
				var rec map[string]any
				if err := json.Unmarshal([]byte(log), &rec); err != nil || strings.Count(log, "\n") != 1 {
					t.Fatalf("want one record: %v %s", err, log)
				}
				if rec["client_addr"] != "127.0.0.1" {
					t.Errorf("record client_addr = %v", rec["client_addr"])
				}
				if !strings.Contains(log, tt.audited) {
					t.Errorf("record %s\nwant it to hold %s", log, tt.audited)
				}
			}
		})
	}
}
