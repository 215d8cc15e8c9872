package tasks

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2ad/a2ad/functions"
)

// The spans of a task's work, children of the span of the request that
// asked for it (Config.Tracer; none without one): each commit to the
// store, the wait of a call for its slots, and the backend's call. Their
// attributes are ids, names and outcomes: never a payload.
const (
	SpanStoreCommit = "a2ad.store.commit"
	SpanQueueWait   = "a2ad.queue.wait"
	SpanBackendCall = "a2ad.backend.call"
)

// The attributes of those spans.
const (
	AttrTaskID   = attribute.Key("a2a.task_id")
	AttrFunction = attribute.Key("a2a.function_id")
	// AttrStoreOp is "create" (a new task) or "update".
	AttrStoreOp = attribute.Key("a2ad.store.op")
	// AttrQueued is whether the call waited in the queue, rather than
	// taking a free slot at once.
	AttrQueued = attribute.Key("a2ad.queued")
	// AttrBackend is the backend's kind: http, exec, builtin.
	AttrBackend = attribute.Key("a2ad.backend")
	// AttrBackendOutcome is how the call ended: ok, error, timeout or
	// stopped (canceled, or shutdown).
	AttrBackendOutcome = attribute.Key("a2ad.backend.outcome")
)

// tracedStore traces the commits of a Store: Create and Update.
type tracedStore struct {
	Store
	tracer trace.Tracer
}

func (ts tracedStore) Create(ctx context.Context, key IdemKey, rec *Record, events []Event) (*Record, bool, error) {
	ctx, span := ts.tracer.Start(ctx, SpanStoreCommit, trace.WithAttributes(
		AttrStoreOp.String("create"), AttrTaskID.String(rec.Task.ID)))
	got, created, err := ts.Store.Create(ctx, key, rec, events)
	endCommit(span, err)
	return got, created, err
}

func (ts tracedStore) Update(ctx context.Context, owner, id string, key *IdemKey, sc Scope, fn UpdateFunc) (*Record, []Event, bool, error) {
	ctx, span := ts.tracer.Start(ctx, SpanStoreCommit, trace.WithAttributes(
		AttrStoreOp.String("update"), AttrTaskID.String(id)))
	rec, events, dup, err := ts.Store.Update(ctx, owner, id, key, sc, fn)
	endCommit(span, err)
	return rec, events, dup, err
}

// endCommit ends a commit's span; a step the state machine skipped is
// no error.
func endCommit(span trace.Span, err error) {
	if err != nil && !errors.Is(err, errSkip) {
		span.SetStatus(codes.Error, "commit failed")
	}
	span.End()
}

// acquireTraced takes fn's slots as acquire does; when traced (tracer
// not nil), the time it took is a queue wait span (when it waited, or
// took them).
func (ex *executor) acquireTraced(ctx context.Context, tracer trace.Tracer, fn *functions.Function, wait bool) (release func(), ok bool) {
	if tracer == nil {
		return ex.acquire(ctx, fn, wait)
	}
	begun := time.Now()
	release, ok = ex.acquire(ctx, fn, wait)
	if ok || wait {
		_, span := tracer.Start(ctx, SpanQueueWait, trace.WithTimestamp(begun), trace.WithAttributes(
			AttrFunction.String(fn.ID), AttrQueued.Bool(wait)))
		if !ok {
			span.SetStatus(codes.Error, "stopped while queued")
		}
		span.End()
	}
	return release, ok
}

// traceRun gives a run's context the span of the request that started
// it, from ctx, when traced (tracer not nil); the run's own context comes
// from the executor.
func traceRun(tracer trace.Tracer, ctx context.Context) func(context.Context) context.Context {
	if tracer == nil {
		return func(run context.Context) context.Context { return run }
	}
	parent := trace.SpanFromContext(ctx)
	return func(run context.Context) context.Context { return trace.ContextWithSpan(run, parent) }
}

// traceCall starts the span of the run's backend call; nil when tracing
// is off.
func (r *run) traceCall(ctx context.Context) (context.Context, trace.Span) {
	tracer := r.s.cfg.Tracer
	if tracer == nil {
		return ctx, nil
	}
	return tracer.Start(ctx, SpanBackendCall, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		AttrTaskID.String(r.c.TaskID), AttrFunction.String(r.fn.ID), AttrBackend.String(r.fn.Backend.Kind())))
}

// endCall ends a backend call's span with how it ended. The error's
// text is left out: a backend's message may hold what it was sent.
func endCall(span trace.Span, callErr error, timedOut, stopped bool) {
	if span == nil {
		return
	}
	outcome := "ok"
	switch {
	case stopped:
		outcome = "stopped"
	case timedOut:
		outcome = "timeout"
	case callErr != nil:
		outcome = "error"
	}
	span.SetAttributes(AttrBackendOutcome.String(outcome))
	if outcome == "timeout" || outcome == "error" {
		span.SetStatus(codes.Error, outcome)
	}
	span.End()
}
