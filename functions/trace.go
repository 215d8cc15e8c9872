package functions

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext writes the W3C trace context of the span in a call's
// context: the backend's call span, when a2ad traces (see tasks).
var traceContext = propagation.TraceContext{}

// traceHeader sets the traceparent (and tracestate, if any) of the span
// in ctx on h, over a catalogue header of the same name; without a span
// it sets nothing.
func traceHeader(ctx context.Context, h http.Header) {
	traceContext.Inject(ctx, propagation.HeaderCarrier(h))
}

// traceEnv appends the W3C trace context of the span in ctx to env, as
// TRACEPARENT and TRACESTATE (the names the OpenTelemetry SDKs read for a
// child process); without a span it appends nothing. They come last, over
// a catalogue variable of the same name.
func traceEnv(ctx context.Context, env []string) []string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return env
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	env = append(env, "TRACEPARENT="+c["traceparent"])
	if ts := c["tracestate"]; ts != "" {
		env = append(env, "TRACESTATE="+ts)
	}
	return env
}
