package transport

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2ad/a2ad/audit"
)

// The attributes of a call's span. Ids, names and outcomes only: never
// a payload, a key or a token.
const (
	AttrMethod    = attribute.Key("a2a.method")
	AttrTransport = attribute.Key("a2a.transport")
	AttrCaller    = attribute.Key("a2a.caller")
	AttrTaskID    = attribute.Key("a2a.task_id")
	AttrOutcome   = attribute.Key("a2a.outcome")
	AttrReason    = attribute.Key("a2a.reason")
	AttrCode      = attribute.Key("a2a.error_code")
	AttrFunction  = attribute.Key("a2a.function_id")
)

// traceContext reads and writes the W3C traceparent and tracestate.
var traceContext = propagation.TraceContext{}

// Trace starts the call's span, a child of the W3C trace context the
// request carries (traceparent, tracestate) if any, and returns ctx with
// it: serve the call with that context, so that what the call does (the
// store's commits, the backend's call) is traced under it. Without a
// Tracer it returns ctx as it is, at no cost. End ends the span.
func (c *Core) Trace(ctx context.Context, cl *Call, carrier propagation.TextMapCarrier) context.Context {
	if c.cfg.Tracer == nil {
		return ctx
	}
	ctx = traceContext.Extract(ctx, carrier)
	ctx, cl.span = c.cfg.Tracer.Start(ctx, "a2a "+cl.transport, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(AttrTransport.String(cl.transport)))
	return ctx
}

// endSpan ends the call's span, if it has one, with what its audit
// record says.
func (ac *Call) endSpan(outcome audit.Outcome, reason audit.Reason) {
	if ac.span == nil {
		return
	}
	if ac.method != "" {
		ac.span.SetName(truncate(ac.method, maxAuditMethod))
	}
	attrs := []attribute.KeyValue{
		AttrMethod.String(truncate(ac.method, maxAuditMethod)),
		AttrCaller.String(ac.principal.Caller.ID),
		AttrOutcome.String(string(outcome)),
		AttrReason.String(string(reason)),
	}
	if ac.taskID != "" {
		attrs = append(attrs, AttrTaskID.String(truncate(ac.taskID, maxAuditTaskID)))
	}
	if ac.outcome.FunctionID != "" {
		attrs = append(attrs, AttrFunction.String(truncate(ac.outcome.FunctionID, maxAuditTaskID))) // as the caller named it
	}
	if ac.rpcErr != nil {
		attrs = append(attrs, AttrCode.Int(ac.rpcErr.Code))
	}
	ac.span.SetAttributes(attrs...)
	if outcome == audit.OutcomeServerError || outcome == audit.OutcomeFunctionError {
		ac.span.SetStatus(codes.Error, string(reason))
	}
	ac.span.End()
}

// TraceRequest is Trace for an HTTP request: r with the call's span in
// its context, or r itself when tracing is off.
func (c *Core) TraceRequest(cl *Call, r *http.Request) *http.Request {
	if c.cfg.Tracer == nil {
		return r
	}
	return r.WithContext(c.Trace(r.Context(), cl, propagation.HeaderCarrier(r.Header)))
}
