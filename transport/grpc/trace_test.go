package grpc_test

import (
	"context"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc/metadata"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// TestTracesEachCall: with a Tracer, a gRPC call is a server span, a
// child of the traceparent in its metadata, with what its audit record
// says; the service runs under it.
func TestTracesEachCall(t *testing.T) {
	tr := transporttest.NewTraces()
	fake := &transporttest.Service{
		SendFn:  func(a2a.SendParams) (*a2a.Task, error) { return task("t1", a2a.StateCompleted), nil },
		SendCtx: tr.SendCtx,
	}
	client, _ := serve(t, fake, func(c *transport.Config) { c.Tracer = tr.Tracer })
	ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", transporttest.Traceparent)
	if _, err := client.SendMessage(ctx, &a2apb.SendMessageRequest{Message: textMessage("m1")}); err != nil {
		t.Fatal(err)
	}
	tr.CheckCall(t, "SendMessage", map[string]string{
		"a2a.method": "SendMessage", "a2a.transport": "grpc", "a2a.task_id": "t1", "a2a.outcome": "ok", "a2a.reason": "completed",
	})
}
