package functions_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2ad/a2ad/functions"
)

// TestHTTPBackend_Traceparent: the span in the call's context goes to the
// backend as the W3C traceparent and tracestate, over a catalogue header
// of the same name; a call without a span sends none.
func TestHTTPBackend_Traceparent(t *testing.T) {
	var got http.Header
	srv := MustServe(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = w.Write([]byte(`{}`))
	})
	b := &functions.HTTPBackend{URL: srv.URL, Headers: map[string]string{"traceparent": "bogus"}}
	if _, err := b.Invoke(trace.ContextWithSpanContext(context.Background(), testSpan(t)), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if tp := got.Get("traceparent"); tp != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Errorf("traceparent %q", tp)
	}
	if st := got.Get("tracestate"); st != "vendor=opaque" {
		t.Errorf("tracestate %q", st)
	}

	b.Headers = nil
	if _, err := b.Invoke(context.Background(), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if v, ok := got["Traceparent"]; ok {
		t.Errorf("a call without a span sent traceparent %q", v)
	}
}

// TestExecBackend_Traceparent: an exec child gets the span's trace
// context as TRACEPARENT and TRACESTATE, over the catalogue's env; a call
// without a span leaves the catalogue's.
func TestExecBackend_Traceparent(t *testing.T) {
	b := &functions.ExecBackend{
		Argv: []string{"/bin/sh", "-c", `cat >/dev/null; printf '{"tp":"%s","ts":"%s"}' "$TRACEPARENT" "$TRACESTATE"`},
		Env:  []string{"TRACEPARENT=bogus"},
	}
	for _, tc := range []struct {
		ctx    context.Context
		tp, ts string
	}{
		{trace.ContextWithSpanContext(context.Background(), testSpan(t)), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=opaque"},
		{context.Background(), "bogus", ""},
	} {
		res, err := b.Invoke(tc.ctx, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ TP, TS string }
		if err := json.Unmarshal(res.Output, &got); err != nil {
			t.Fatal(err)
		}
		if got.TP != tc.tp || got.TS != tc.ts {
			t.Errorf("TRACEPARENT %q, TRACESTATE %q; want %q, %q", got.TP, got.TS, tc.tp, tc.ts)
		}
	}
}

func testSpan(tb testing.TB) trace.SpanContext {
	tb.Helper()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, err := trace.ParseTraceState("vendor=opaque")
	if err != nil {
		tb.Fatal(err)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
}
