package grpc_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// rawCodec sends its []byte as the message, unchecked: a client of
// garbage.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)   { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(b []byte, v any) error { *(v.(*[]byte)) = b; return nil }
func (rawCodec) Name() string                    { return "proto" }

// TestRefusedByGRPC: what grpc-go refuses before a2ad's handler sees
// the call (an unknown method, a message that is not protobuf) is
// audited as over the other bindings, and a call its client cancels is
// audited client_canceled, not server_error.
func TestRefusedByGRPC(t *testing.T) {
	fake := &transporttest.Service{
		SendCtx: func(ctx context.Context) { <-ctx.Done() }, // waits for the client to give up
		SendFn: func(a2a.SendParams) (*a2a.Task, error) {
			return nil, context.Canceled // as the service answers a canceled call
		},
	}
	conn, auditLog := serveConn(t, fake)
	ctx := context.Background()
	in, out := []byte{}, []byte{}
	err := conn.Invoke(ctx, "/lf.a2a.v1.A2AService/NoSuchMethod", &in, &out, grpc.ForceCodec(rawCodec{}))
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("an unknown method: %v, want UNIMPLEMENTED", err)
	}
	garbage := []byte{0xff, 0xff, 0xff, 0xff}
	err = conn.Invoke(ctx, "/lf.a2a.v1.A2AService/GetTask", &garbage, &out, grpc.ForceCodec(rawCodec{}))
	if status.Code(err) != codes.Internal {
		t.Errorf("a message that is not protobuf: %v, want INTERNAL", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = a2apb.NewA2AServiceClient(conn).SendMessage(cctx, &a2apb.SendMessageRequest{Message: textMessage("m1")})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a canceled call: %v, want DEADLINE_EXCEEDED", err)
	}
	want := []string{
		`"rpc_method":"/lf.a2a.v1.A2AService/NoSuchMethod","task_id":"","function_id":"","decision":"","outcome":"client_error","reason":"invalid_request","code":-32601`,
		`"rpc_method":"GetTask","task_id":"","function_id":"","decision":"","outcome":"client_error","reason":"invalid_request","code":-32700`,
		`"rpc_method":"SendMessage","task_id":"","function_id":"","decision":"","outcome":"client_error","reason":"client_canceled"`,
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs := auditLog.String()
		missing := ""
		for _, w := range want {
			if !strings.Contains(recs, w) {
				missing = w
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit records lack %s:\n%s", missing, recs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(auditLog.String(), "server_error") {
		t.Errorf("a refusal audited server_error:\n%s", auditLog.String())
	}
}

// TestRefusedByGRPCInSummary: a flood of what grpc-go refuses itself
// (unknown methods, messages that are not protobuf) is audited in summary
// with Config.Refusals: per caller (here its address) and reason, the
// first refusal at once with "refused":1, the rest with the first refusal
// of the next window (issue 25 item 3: grpc-go's refusals were one record
// each).
func TestRefusedByGRPCInSummary(t *testing.T) {
	var clock atomic.Int64 // seconds; the handlers read it
	conn, auditLog := serveConn(t, &transporttest.Service{}, func(c *transport.Config) {
		c.Refusals = callers.NewReports(time.Hour, 0, func() time.Time { return time.Unix(clock.Load(), 0) })
	})
	ctx := context.Background()
	out := []byte{}
	refuse := func() {
		in := []byte{}
		_ = conn.Invoke(ctx, "/lf.a2a.v1.A2AService/NoSuchMethod", &in, &out, grpc.ForceCodec(rawCodec{}))
		garbage := []byte{0xff, 0xff, 0xff, 0xff}
		_ = conn.Invoke(ctx, "/lf.a2a.v1.A2AService/GetTask", &garbage, &out, grpc.ForceCodec(rawCodec{}))
	}
	for range 200 {
		refuse()
	}
	time.Sleep(200 * time.Millisecond) // the stats handler audits after the answer
	clock.Add(3600)
	refuse()
	time.Sleep(200 * time.Millisecond)
	recs := strings.Split(strings.TrimSpace(auditLog.String()), "\n")
	if len(recs) != 2 {
		t.Fatalf("%d audit records for 402 refusals, want 2 (one per window; the last refusal waits for the next):\n%s", len(recs), auditLog.String())
	}
	for i, w := range []string{`"refused":1,`, `"refused":400,`} { // then the 399 held and itself
		if !strings.Contains(recs[i], `"reason":"invalid_request"`) || !strings.Contains(recs[i], w) {
			t.Errorf("record %d: %s; want invalid_request, %s", i, recs[i], w)
		}
	}
}
