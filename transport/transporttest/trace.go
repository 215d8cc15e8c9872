package transporttest

import (
	"context"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The W3C trace context a traced test call carries: the caller's span.
const (
	TraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	ParentID    = "00f067aa0ba902b7"
	Traceparent = "00-" + TraceID + "-" + ParentID + "-01"
)

// Traces records the spans of a core's Tracer, and the span in the
// context of each Send (set SendCtx to its SendCtx).
type Traces struct {
	Tracer trace.Tracer
	rec    *tracetest.SpanRecorder

	mu   sync.Mutex
	sent []trace.SpanContext
}

// NewTraces returns a recorder and a tracer feeding it.
func NewTraces() *Traces {
	rec := tracetest.NewSpanRecorder()
	return &Traces{Tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test"), rec: rec}
}

// SendCtx notes the span in ctx.
func (t *Traces) SendCtx(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent = append(t.sent, trace.SpanContextFromContext(ctx))
}

// CheckCall checks that the one span ended is a server span named
// method, a child of the caller's span (Traceparent), with attrs, and
// that the service's Send ran under it.
func (t *Traces) CheckCall(tb testing.TB, method string, attrs map[string]string) {
	tb.Helper()
	ended := t.rec.Ended()
	if len(ended) != 1 {
		tb.Fatalf("%d spans ended, want 1", len(ended))
	}
	s := ended[0]
	if s.Name() != method || s.SpanKind() != trace.SpanKindServer {
		tb.Errorf("span %q of kind %v, want a server span %q", s.Name(), s.SpanKind(), method)
	}
	if s.Parent().TraceID().String() != TraceID || s.Parent().SpanID().String() != ParentID || !s.Parent().IsRemote() {
		tb.Errorf("span's parent %v, want the caller's %s", s.Parent(), Traceparent)
	}
	got := map[string]string{}
	for _, kv := range s.Attributes() {
		got[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range attrs {
		if got[k] != v {
			tb.Errorf("span attribute %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.sent) != 1 || t.sent[0].SpanID() != s.SpanContext().SpanID() {
		tb.Errorf("Send ran under %v, want the call's span %v", t.sent, s.SpanContext())
	}
}

// Sent is the span contexts Send ran under.
func (t *Traces) Sent() []trace.SpanContext {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]trace.SpanContext(nil), t.sent...)
}
