package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// spanBackend records the span context each call's context carries.
type spanBackend struct {
	mu      sync.Mutex
	seen    []trace.SpanContext
	release <-chan struct{} // nil: answer at once
}

func (b *spanBackend) backend() *Backend {
	return &Backend{Fn: func(ctx context.Context, in json.RawMessage) (functions.Result, error) {
		b.mu.Lock()
		b.seen = append(b.seen, trace.SpanContextFromContext(ctx))
		b.mu.Unlock()
		if b.release != nil {
			<-b.release
		}
		return functions.Result{Output: in}, nil
	}}
}

func (b *spanBackend) calls() []trace.SpanContext {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]trace.SpanContext(nil), b.seen...)
}

// traced is a recorder of ended spans and a tracer feeding it.
func traced() (*tracetest.SpanRecorder, trace.Tracer) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	return rec, tp.Tracer("test")
}

// childrenOf are the ended spans whose parent is span, by name.
func childrenOf(rec *tracetest.SpanRecorder, span trace.Span) map[string][]sdktrace.ReadOnlySpan {
	out := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() == span.SpanContext().SpanID() {
			out[s.Name()] = append(out[s.Name()], s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value.String()
		}
	}
	return ""
}

// waitSpans waits until n spans named name have ended.
func waitSpans(tb testing.TB, rec *tracetest.SpanRecorder, name string, n int) {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		got := 0
		for _, s := range rec.Ended() {
			if s.Name() == name {
				got++
			}
		}
		if got >= n {
			return
		}
	}
	tb.Fatalf("fewer than %d %s spans ended", n, name)
}

// TestTracesTheTaskUnderTheRequest: with a Tracer, a blocking send's
// store commits, its slot and its backend call are spans under the
// request's span (the one in Send's context), and the backend's context
// carries the backend call's span.
func TestTracesTheTaskUnderTheRequest(t *testing.T) {
	// The two commits of a send that takes a free slot: created working,
	// then the result; a retry-safe call runs before its task is stored,
	// which then takes one commit.
	for _, tc := range []struct {
		retrySafe bool
		commits   []string
	}{{false, []string{"create", "update"}}, {true, []string{"create"}}} {
		t.Run(fmt.Sprintf("retry_safe=%v", tc.retrySafe), func(t *testing.T) {
			testTracesTheTask(t, tc.retrySafe, tc.commits)
		})
	}
}

func testTracesTheTask(t *testing.T, retrySafe bool, commits []string) {
	rec, tracer := traced()
	be := &spanBackend{}
	e := newEnv(t, tasks.Config{Tracer: tracer}, fn(t, "demo::echo", be.backend(), func(f *functions.Function) { f.RetrySafe = retrySafe }))
	ctx, req := tracer.Start(context.Background(), "request")
	task, _, err := e.svc.Send(ctx, tasks.Caller{ID: "acme"}, send(dataMsg("m1", "demo::echo", `{"secret":"p"}`)))
	req.End()
	if err != nil || task.Status.State != a2a.StateCompleted {
		t.Fatalf("send: %v, %+v", err, task)
	}
	kids := childrenOf(rec, req)
	var ops []string
	for _, c := range kids[tasks.SpanStoreCommit] {
		ops = append(ops, attr(c, tasks.AttrStoreOp))
		if id := attr(c, tasks.AttrTaskID); id != task.ID {
			t.Errorf("commit of task %q, want %q", id, task.ID)
		}
	}
	if fmt.Sprint(ops) != fmt.Sprint(commits) {
		t.Errorf("commits under the request: %v, want %v", ops, commits)
	}
	if q := kids[tasks.SpanQueueWait]; len(q) != 1 || attr(q[0], tasks.AttrQueued) != "false" || attr(q[0], tasks.AttrFunction) != "demo::echo" {
		t.Errorf("queue waits under the request: %d, want 1 that took a free slot", len(q))
	}
	calls := kids[tasks.SpanBackendCall]
	if len(calls) != 1 {
		t.Fatalf("%d backend calls under the request, want 1", len(calls))
	}
	c := calls[0]
	if c.SpanKind() != trace.SpanKindClient || attr(c, tasks.AttrBackend) != "fake" || attr(c, tasks.AttrBackendOutcome) != "ok" {
		t.Errorf("backend call: kind %v, backend %q, outcome %q", c.SpanKind(), attr(c, tasks.AttrBackend), attr(c, tasks.AttrBackendOutcome))
	}
	if seen := be.calls(); len(seen) != 1 || seen[0].SpanID() != c.SpanContext().SpanID() || seen[0].TraceID() != req.SpanContext().TraceID() {
		t.Errorf("the backend's context carries %v, want the backend call's span %v", seen, c.SpanContext())
	}
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Value.String() == "p" || kv.Key == "secret" {
				t.Errorf("span %s holds the payload in %s", s.Name(), kv.Key)
			}
		}
	}
}

// TestTracesAQueuedCall: a call that waits for a slot has a queue wait
// span that says so, under the span of the request that sent it, and so
// has its backend call, though it runs after the request answered.
func TestTracesAQueuedCall(t *testing.T) {
	rec, tracer := traced()
	release := make(chan struct{})
	be := &spanBackend{release: release}
	e := newEnv(t, tasks.Config{Tracer: tracer, MaxConcurrent: 1}, fn(t, "demo::slow", be.backend()))
	caller := tasks.Caller{ID: "acme"}
	if _, _, err := e.svc.Send(context.Background(), caller, nonBlocking(dataMsg("m1", "demo::slow", `{}`))); err != nil {
		t.Fatal(err)
	}
	ctx, req := tracer.Start(context.Background(), "request")
	task, _, err := e.svc.Send(ctx, caller, nonBlocking(dataMsg("m2", "demo::slow", `{}`)))
	req.End()
	if err != nil || task.Status.State != a2a.StateSubmitted {
		t.Fatalf("second send: %v, %+v", err, task)
	}
	close(release)
	waitSpans(t, rec, tasks.SpanBackendCall, 2)
	kids := childrenOf(rec, req)
	if q := kids[tasks.SpanQueueWait]; len(q) != 1 || attr(q[0], tasks.AttrQueued) != "true" {
		t.Fatalf("queue waits under the request: %d, want 1 that waited", len(q))
	} else if q[0].EndTime().Sub(q[0].StartTime()) <= 0 {
		t.Errorf("queue wait lasted %v", q[0].EndTime().Sub(q[0].StartTime()))
	}
	if n := len(kids[tasks.SpanBackendCall]); n != 1 {
		t.Errorf("%d backend calls under the request, want 1", n)
	}
	// submitted; then working once the slot came, and the result, whose
	// commit span may end a moment after the backend call's.
	n := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if n = len(childrenOf(rec, req)[tasks.SpanStoreCommit]); n >= 3 {
			break
		}
	}
	if n != 3 {
		t.Errorf("%d commits under the request, want 3", n)
	}
}

// TestNoTracerNoSpans: without a Tracer nothing is traced, and a span
// in the request's context does not reach the backend: the run's context
// comes from the executor.
func TestNoTracerNoSpans(t *testing.T) {
	rec, tracer := traced()
	be := &spanBackend{}
	e := newEnv(t, tasks.Config{}, fn(t, "demo::echo", be.backend()))
	ctx, req := tracer.Start(context.Background(), "request")
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{}`))); err != nil {
		t.Fatal(err)
	}
	req.End()
	if n := len(rec.Ended()); n != 1 {
		t.Errorf("%d spans ended, want only the test's own", n)
	}
	if seen := be.calls(); len(seen) != 1 || seen[0].IsValid() {
		t.Errorf("backend's context carries %v, want no span", seen)
	}
}
