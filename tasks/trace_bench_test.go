package tasks_test

import (
	"strconv"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// BenchmarkSendEchoSerial is one blocking send after another (two commits
// each), with tracing off (no Tracer: what a2ad runs without
// --otel-endpoint) and on (spans made and ended, not exported, under a
// request span, as the bindings start one); serial, so that the
// allocations of a send are exact.
func BenchmarkSendEchoSerial(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run("tracing="+strconv.FormatBool(on), func(b *testing.B) {
			var tracer trace.Tracer
			if on {
				tracer = sdktrace.NewTracerProvider().Tracer("bench")
			}
			e := newEnv(b, tasks.Config{Tracer: tracer}, fn(b, "demo::echo", echoBackend()))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				c := ctx
				var req trace.Span
				if on {
					c, req = tracer.Start(ctx, "request")
				}
				task, _, err := e.svc.Send(c, tasks.Caller{}, send(dataMsg("m"+strconv.Itoa(i), "demo::echo", `{"message":"hello"}`)))
				if req != nil {
					req.End()
				}
				if err != nil || task.Status.State != a2a.StateCompleted {
					b.Fatalf("send: %v %v", err, task)
				}
			}
		})
	}
}
