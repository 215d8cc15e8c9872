package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/metrics"
)

// fakeOutbox is a metrics.Outbox with fixed answers.
type fakeOutbox struct {
	depth, dead int
	err         error
}

func (o fakeOutbox) OutboxDepth(context.Context) (int, error)     { return o.depth, o.err }
func (o fakeOutbox) DeadLetterCount(context.Context) (int, error) { return o.dead, o.err }

func newMetrics(tb testing.TB, log io.Writer) *metrics.Metrics {
	tb.Helper()
	l := zerolog.Nop()
	if log != nil {
		l = zerolog.New(log)
	}
	return metrics.New(metrics.Options{Methods: []string{"message/send", "tasks/get"}, Version: "v1.2.3", Logger: l})
}

// get serves one scrape and returns its body.
func get(tb testing.TB, m *metrics.Metrics) string {
	tb.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		tb.Fatalf("scrape: HTTP %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// want fails unless the scrape has each line.
func want(tb testing.TB, body string, lines ...string) {
	tb.Helper()
	for _, l := range lines {
		if !strings.Contains(body, "\n"+l+"\n") {
			tb.Errorf("scrape lacks %q", l)
		}
	}
}

func TestRequestsAreLabelledFromFixedSets(t *testing.T) {
	m := newMetrics(t, nil)
	m.Request("jsonrpc", "message/send", "ok", "completed", 3*time.Millisecond)
	m.Request("jsonrpc", "message/send", "ok", "completed", 7*time.Millisecond)
	m.Request("jsonrpc", "tasks/get", "client_error", "not_found", time.Millisecond)
	m.Request("jsonrpc", "x-evil-7f3a", "client_error", "invalid_request", time.Millisecond)
	m.Request("jsonrpc", "", "transport_denied", "unauthenticated", time.Millisecond)
	m.Request("grpc", "message/send", "ok", "completed", time.Millisecond)
	m.Request("x-evil-transport", "tasks/get", "ok", "ok", time.Millisecond)
	body := get(t, m)
	want(t, body,
		`a2ad_requests_total{method="message/send",outcome="ok",reason="completed",transport="jsonrpc"} 2`,
		`a2ad_requests_total{method="message/send",outcome="ok",reason="completed",transport="grpc"} 1`,
		`a2ad_requests_total{method="tasks/get",outcome="client_error",reason="not_found",transport="jsonrpc"} 1`,
		`a2ad_requests_total{method="other",outcome="client_error",reason="invalid_request",transport="jsonrpc"} 1`,
		`a2ad_requests_total{method="other",outcome="transport_denied",reason="unauthenticated",transport="jsonrpc"} 1`,
		`a2ad_requests_total{method="tasks/get",outcome="ok",reason="ok",transport="other"} 1`,
		`a2ad_request_duration_seconds_bucket{method="message/send",outcome="ok",transport="jsonrpc",le="0.005"} 1`,
		`a2ad_request_duration_seconds_bucket{method="message/send",outcome="ok",transport="jsonrpc",le="0.01"} 2`,
		`a2ad_request_duration_seconds_sum{method="message/send",outcome="ok",transport="jsonrpc"} 0.01`,
		`a2ad_request_duration_seconds_count{method="other",outcome="client_error",transport="jsonrpc"} 1`,
		`a2ad_build_info{version="v1.2.3"} 1`,
	)
	if strings.Contains(body, "x-evil") {
		t.Error("a made-up method is a label value")
	}
}

func TestTasksByState(t *testing.T) {
	m := newMetrics(t, nil)
	// What the store holds at start, then a task's life.
	m.AddTasks(map[a2a.TaskState]int{a2a.StateInputRequired: 3, a2a.StateWorking: 1, a2a.StateCompleted: 9})
	m.Transition("", a2a.StateSubmitted)
	m.Transition(a2a.StateSubmitted, a2a.StateWorking)
	m.Transition(a2a.StateWorking, a2a.StateCompleted)
	m.Transition(a2a.StateInputRequired, a2a.StateCanceled)
	m.Transition("", a2a.StateRejected)
	m.Transition("", "made-up")
	body := get(t, m)
	want(t, body,
		`a2ad_tasks{state="submitted"} 0`,
		`a2ad_tasks{state="working"} 1`,
		`a2ad_tasks{state="input-required"} 2`,
		`a2ad_tasks{state="auth-required"} 0`,
		`a2ad_task_transitions_total{state="submitted"} 2`, // the new rejected task was born submitted
		`a2ad_task_transitions_total{state="working"} 1`,
		`a2ad_task_transitions_total{state="completed"} 1`,
		`a2ad_task_transitions_total{state="canceled"} 1`,
		`a2ad_task_transitions_total{state="rejected"} 1`,
		`a2ad_task_transitions_total{state="failed"} 0`,
	)
	if strings.Contains(body, `state="completed"} 9`) || strings.Contains(body, "made-up") || strings.Contains(body, `a2ad_tasks{state="completed"}`) {
		t.Errorf("a terminal or unknown state is counted:\n%s", body)
	}
}

func TestServiceStoreAndPushMetrics(t *testing.T) {
	m := newMetrics(t, nil)
	m.WatchOutbox(fakeOutbox{depth: 4, dead: 2})
	m.CallRunning("demo::echo", 1)
	m.CallRunning("demo::echo", 1)
	m.CallRunning("demo::echo", -1)
	m.CallQueued("demo::sleep", 1)
	m.IdempotentReplay()
	m.Subscribers(1)
	m.Subscribers(1)
	m.Subscribers(-1)
	m.ReplayedEvents(5)
	m.ReplayedEvents(0)
	m.SlowSubscriberDropped()
	m.Commit(3, 2*time.Millisecond)
	m.Commit(1, time.Millisecond)
	m.PushAttempt("delivered", false, 10*time.Millisecond)
	m.PushAttempt("transient_error", false, time.Second)
	m.PushAttempt("permanent_error", true, time.Millisecond)
	m.Rejected(true, false)
	m.Rejected(true, true) // a rate limit is a rate limit
	m.Rejected(false, false)
	m.Rejected(false, true)
	m.Rejected(false, true)
	m.RejectedBytes()
	want(t, get(t, m),
		`a2ad_calls_running{function="demo::echo"} 1`,
		`a2ad_calls_queued{function="demo::echo"} 0`,
		`a2ad_calls_queued{function="demo::sleep"} 1`,
		`a2ad_idempotent_replays_total 1`,
		`a2ad_stream_subscribers 1`,
		`a2ad_stream_replayed_events_total 5`,
		`a2ad_stream_slow_subscribers_dropped_total 1`,
		`a2ad_store_commit_duration_seconds_count 2`,
		`a2ad_store_commit_duration_seconds_sum 0.003`,
		`a2ad_store_writes_per_commit_sum 4`,
		`a2ad_store_writes_per_commit_bucket{le="2"} 1`,
		`a2ad_push_attempts_total{outcome="delivered"} 1`,
		`a2ad_push_attempts_total{outcome="transient_error"} 1`,
		`a2ad_push_attempts_total{outcome="permanent_error"} 1`,
		`a2ad_push_attempt_duration_seconds_count 3`,
		`a2ad_push_dead_lettered_total 1`,
		`a2ad_push_outbox_depth 4`,
		`a2ad_push_dead_letters 2`,
		`a2ad_rate_limit_rejections_total{limit="rate"} 2`,
		`a2ad_rate_limit_rejections_total{limit="caller_in_flight"} 1`,
		`a2ad_rate_limit_rejections_total{limit="server_in_flight"} 2`,
		`a2ad_rate_limit_rejections_total{limit="bytes"} 1`,
	)
}

// TestOutboxErrorLeavesTheRest: an outbox that cannot be read (a closed
// store) costs its two gauges, not the scrape.
func TestOutboxErrorLeavesTheRest(t *testing.T) {
	var log testkit.SyncBuffer
	m := newMetrics(t, &log)
	m.WatchOutbox(fakeOutbox{err: errors.New("database not open")})
	m.IdempotentReplay()
	body := get(t, m)
	want(t, body, `a2ad_idempotent_replays_total 1`)
	if strings.Contains(body, "a2ad_push_outbox_depth") || strings.Contains(body, "a2ad_push_dead_letters ") {
		t.Errorf("the unreadable gauges are served:\n%s", body)
	}
	if !strings.Contains(log.String(), "database not open") {
		t.Errorf("the error is not logged: %q", log.String())
	}
}

// TestMetricsLint checks every metric against Prometheus' naming and help
// rules (promlint): units in names, _total on counters, help text.
func TestMetricsLint(t *testing.T) {
	m := newMetrics(t, nil)
	m.WatchOutbox(fakeOutbox{})
	m.Request("jsonrpc", "message/send", "ok", "completed", time.Millisecond)
	m.CallRunning("demo::echo", 1)
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "a2ad_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "a2ad_") {
			n++
			if f.GetHelp() == "" {
				t.Errorf("%s has no help text", f.GetName())
			}
		}
	}
	if n != 22 {
		t.Errorf("%d a2ad_ metric families, want 22", n)
	}
}

// TestHooksAllocateNothing: once a label set is seen, the hooks on hot
// paths allocate nothing.
func TestHooksAllocateNothing(t *testing.T) {
	m := newMetrics(t, nil)
	hooks := map[string]func(){
		"Request":     func() { m.Request("jsonrpc", "message/send", "ok", "completed", time.Millisecond) },
		"Other":       func() { m.Request("jsonrpc", "x-unknown", "client_error", "invalid_request", time.Millisecond) },
		"Transition":  func() { m.Transition(a2a.StateWorking, a2a.StateCompleted) },
		"Commit":      func() { m.Commit(4, time.Millisecond) },
		"CallRunning": func() { m.CallRunning("demo::echo", 1); m.CallRunning("demo::echo", -1) },
		"CallQueued":  func() { m.CallQueued("demo::echo", 1); m.CallQueued("demo::echo", -1) },
		"Replay":      m.IdempotentReplay,
		"Subscribers": func() { m.Subscribers(1); m.Subscribers(-1) },
		"PushAttempt": func() { m.PushAttempt("delivered", false, time.Millisecond) },
		"Rejected":    func() { m.Rejected(true, false) },
		"Bytes":       m.RejectedBytes,
	}
	for name, f := range hooks {
		f() // the first call resolves the labels
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations a call, want 0", name, n)
		}
	}
}

// TestConcurrentHooks runs the hooks from many goroutines (run with
// -race) and checks nothing is lost.
func TestConcurrentHooks(t *testing.T) {
	m := newMetrics(t, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			fn := []string{"a::x", "b::y"}[g%2]
			for range 500 {
				m.Request("jsonrpc", "message/send", "ok", []string{"completed", "accepted"}[g%2], time.Millisecond)
				m.CallRunning(fn, 1)
				m.CallRunning(fn, -1)
			}
		})
	}
	wg.Wait()
	want(t, get(t, m),
		`a2ad_requests_total{method="message/send",outcome="ok",reason="completed",transport="jsonrpc"} 2000`,
		`a2ad_requests_total{method="message/send",outcome="ok",reason="accepted",transport="jsonrpc"} 2000`,
		`a2ad_request_duration_seconds_count{method="message/send",outcome="ok",transport="jsonrpc"} 4000`,
		`a2ad_calls_running{function="a::x"} 0`,
		`a2ad_calls_running{function="b::y"} 0`,
	)
}

// BenchmarkHooksOfOneSend is what one blocking message/send of a quick
// function costs in metrics: the request, the call, the task's one
// transition and a share of a commit.
func BenchmarkHooksOfOneSend(b *testing.B) {
	m := newMetrics(b, nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.CallRunning("demo::echo", 1)
			m.CallRunning("demo::echo", -1)
			m.Transition("", a2a.StateCompleted)
			m.Commit(6, time.Millisecond)
			m.Request("jsonrpc", "message/send", "ok", "completed", time.Millisecond)
		}
	})
}
