package grpc_test

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/rs/zerolog"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	a2agrpc "github.com/a2ad/a2ad/transport/grpc"
	"github.com/a2ad/a2ad/transport/transporttest"
)

const testMaxBody = 1024

// serve runs the binding on a loopback port over a core with fake as the
// task service, and returns a client of it; the audit records go to the
// buffer.
func serve(tb testing.TB, fake *transporttest.Service, opts ...func(*transport.Config)) (a2apb.A2AServiceClient, *testkit.SyncBuffer) {
	tb.Helper()
	conn, auditLog := serveConn(tb, fake, opts...)
	return a2apb.NewA2AServiceClient(conn), auditLog
}

// serveConn is serve's, giving the client's connection.
func serveConn(tb testing.TB, fake *transporttest.Service, opts ...func(*transport.Config)) (*grpc.ClientConn, *testkit.SyncBuffer) {
	tb.Helper()
	fake.TB = tb
	auditLog := &testkit.SyncBuffer{}
	cfg := transport.Config{Tasks: fake, Lister: fake, Streams: fake, Push: fake, MaxBodyBytes: testMaxBody,
		Audit: audit.Logger(zerolog.New(auditLog)), KeepAlive: -1}
	for _, o := range opts {
		o(&cfg)
	}
	srv := a2agrpc.New(transport.New(cfg), a2agrpc.Limits{}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		<-done
	})
	return conn, auditLog
}

func task(id string, state a2a.TaskState) *a2a.Task {
	return &a2a.Task{ID: id, ContextID: "c-" + id, Status: a2a.TaskStatus{State: state, Timestamp: "2026-01-02T03:04:05.006Z"}}
}

// checkStatus checks that err is a status of code with message and the
// ErrorInfo reason and domain, and returns its details.
func checkStatus(tb testing.TB, what string, err error, code codes.Code, msg, reason, domain string) []any {
	tb.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != code || st.Message() != msg {
		tb.Errorf("%s: %v, want %s %q", what, err, code, msg)
		return nil
	}
	details := st.Details()
	info, ok := details[0].(*errdetails.ErrorInfo)
	if !ok || info.Reason != reason || info.Domain != domain {
		tb.Errorf("%s: details %v, want ErrorInfo %s %s first", what, details, reason, domain)
	}
	return details
}

func textMessage(id string) *a2apb.Message {
	return &a2apb.Message{MessageId: id, Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "hi"}}}}
}

// TestCalls: a send and a get answer their tasks; another caller's task
// is NOT_FOUND exactly as a missing one; invalid params are
// INVALID_ARGUMENT with a BadRequest; 0.3 is refused; each call is
// audited as a gRPC call.
func TestCalls(t *testing.T) {
	var sent a2a.SendParams
	fake := &transporttest.Service{
		SendFn: func(p a2a.SendParams) (*a2a.Task, error) { sent = p; return task("t1", a2a.StateCompleted), nil },
		GetFn: func(id string, h *int) (*a2a.Task, error) {
			switch id {
			case "t1":
				return task("t1", a2a.StateCompleted), nil
			case "theirs":
				return nil, tasks.ErrNotOwner
			}
			return nil, tasks.ErrNotFound
		},
	}
	client, auditLog := serve(t, fake)
	ctx := context.Background()
	res, err := client.SendMessage(ctx, &a2apb.SendMessageRequest{Message: textMessage("m1"),
		Configuration: &a2apb.SendMessageConfiguration{ReturnImmediately: true}})
	if err != nil || res.GetTask().GetId() != "t1" || res.GetTask().GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("SendMessage = %v, %v", res, err)
	}
	if sent.Message.MessageID != "m1" || sent.Blocking == nil || *sent.Blocking || sent.Message.Parts[0].Text != "hi" {
		t.Errorf("Send got %+v", sent)
	}
	got, err := client.GetTask(ctx, &a2apb.GetTaskRequest{Id: "t1"})
	if err != nil || got.GetId() != "t1" || got.GetContextId() != "c-t1" {
		t.Errorf("GetTask = %v, %v", got, err)
	}
	_, missing := client.GetTask(ctx, &a2apb.GetTaskRequest{Id: "nope"})
	_, theirs := client.GetTask(ctx, &a2apb.GetTaskRequest{Id: "theirs"})
	checkStatus(t, "GetTask(missing)", missing, codes.NotFound, "Task not found", "TASK_NOT_FOUND", "a2a-protocol.org")
	if a, b := status.Convert(missing).Proto(), status.Convert(theirs).Proto(); !proto.Equal(a, b) {
		t.Errorf("another caller's task: %v; a missing one: %v", b, a)
	}

	_, err = client.SendMessage(ctx, &a2apb.SendMessageRequest{})
	details := checkStatus(t, "SendMessage without a message", err, codes.InvalidArgument,
		"Invalid parameters: /message: is required", "INVALID_PARAMS", "github.com/a2ad/a2ad")
	if len(details) != 2 || details[1].(*errdetails.BadRequest).GetFieldViolations()[0].GetField() != "message" {
		t.Errorf("details %v, want a BadRequest on message", details)
	}

	// The binding names what it speaks (1.0), not what a2ad does.
	for _, v := range []string{"0.3", "9.9"} {
		_, err = client.GetTask(metadata.AppendToOutgoingContext(ctx, "a2a-version", v), &a2apb.GetTaskRequest{Id: "t1"})
		details := checkStatus(t, "a2a-version "+v, err, codes.FailedPrecondition, "Version not supported", "VERSION_NOT_SUPPORTED", "a2a-protocol.org")
		if len(details) > 0 {
			if md := details[0].(*errdetails.ErrorInfo).GetMetadata(); len(md) != 2 || md["supported"] != "1.0" || md["version"] != v {
				t.Errorf("a2a-version %s: metadata %v, want supported 1.0, version %s", v, md, v)
			}
		}
	}

	recs := auditLog.String()
	for _, want := range []string{`"transport":"grpc","client_addr":"127.0.0.1"`, `"rpc_method":"GetTask","task_id":"theirs"`, `"reason":"denied_owner"`,
		`"outcome":"client_error","reason":"unsupported","code":-32009`} {
		if !strings.Contains(recs, want) {
			t.Errorf("audit records lack %s:\n%s", want, recs)
		}
	}
}

// TestLimits: a message over the size cap is RESOURCE_EXHAUSTED, and
// keys are read from the authorization and x-api-key metadata.
func TestLimits(t *testing.T) {
	fake := &transporttest.Service{GetFn: func(string, *int) (*a2a.Task, error) { return task("t1", a2a.StateCompleted), nil }}
	client, _ := serve(t, fake, func(c *transport.Config) { c.Auth = transporttest.OneKey("k1") })
	ctx := context.Background()
	big := textMessage("m1")
	big.Parts[0].Content = &a2apb.Part_Text{Text: strings.Repeat("a", testMaxBody)}
	keyed := metadata.AppendToOutgoingContext(ctx, "x-api-key", "k1")
	if _, err := client.SendMessage(keyed, &a2apb.SendMessageRequest{Message: big}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a message over the cap: %v, want RESOURCE_EXHAUSTED", err)
	}
	// Without a key, the call is refused from its headers, its message
	// unread.
	_, err := client.SendMessage(ctx, &a2apb.SendMessageRequest{Message: big})
	checkStatus(t, "a message over the cap, no key", err, codes.Unauthenticated, a2a.ErrNoCredentials.Message, "UNAUTHENTICATED", "github.com/a2ad/a2ad")
	_, err = client.GetTask(ctx, &a2apb.GetTaskRequest{Id: "t1"})
	checkStatus(t, "no key", err, codes.Unauthenticated, a2a.ErrNoCredentials.Message, "UNAUTHENTICATED", "github.com/a2ad/a2ad")
	for _, md := range [][]string{{"x-api-key", "k1"}, {"authorization", "Bearer k1"}} {
		if _, err := client.GetTask(metadata.AppendToOutgoingContext(ctx, md...), &a2apb.GetTaskRequest{Id: "t1"}); err != nil {
			t.Errorf("key in %s: %v", md[0], err)
		}
	}
	_, err = client.GetTask(metadata.AppendToOutgoingContext(ctx, "x-api-key", "k2"), &a2apb.GetTaskRequest{Id: "t1"})
	checkStatus(t, "a bad key", err, codes.Unauthenticated, a2a.ErrBadCredentials.Message, "UNAUTHENTICATED", "github.com/a2ad/a2ad")
}

// TestSubscribe: events carry their sequence in their metadata, a
// client resumes with last-event-id, and a stream the client abandons
// ends and gives back its in-flight slot.
func TestSubscribe(t *testing.T) {
	var gotAfter atomic.Pointer[uint64]
	block := make(chan struct{})
	fake := &transporttest.Service{
		GetFn: func(id string, _ *int) (*a2a.Task, error) { return task(id, a2a.StateWorking), nil },
		WatchFn: func(id string, after *uint64, emit func(tasks.StreamEvent) error) error {
			gotAfter.Store(after)
			if err := emit(tasks.StreamEvent{Seq: 7, Task: task(id, a2a.StateWorking)}); err != nil {
				return err
			}
			if id == "hang" {
				<-block
				return context.Canceled
			}
			return emit(tasks.StreamEvent{Seq: 8, Status: &a2a.StatusUpdateEvent{TaskID: id, ContextID: "c-" + id, Status: task(id, a2a.StateCompleted).Status}})
		},
	}
	var inFlight atomic.Int64
	client, _ := serve(t, fake, func(c *transport.Config) { c.Admit = counter{&inFlight} })
	ctx := context.Background()
	stream, err := client.SubscribeToTask(metadata.AppendToOutgoingContext(ctx, "last-event-id", "5"), &a2apb.SubscribeToTaskRequest{Id: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for {
		ev, err := stream.Recv()
		if err != nil {
			break
		}
		var meta *structpb.Struct
		if ev.GetTask() != nil {
			meta = ev.GetTask().GetMetadata()
		} else {
			meta = ev.GetStatusUpdate().GetMetadata()
		}
		ids = append(ids, meta.GetFields()[a2agrpc.EventIDKey].GetStringValue())
	}
	if strings.Join(ids, ",") != "7,8" || gotAfter.Load() == nil || *gotAfter.Load() != 5 {
		t.Errorf("event ids %q, resumed after %v; want 7,8 after 5", ids, gotAfter.Load())
	}

	cctx, cancel := context.WithCancel(ctx)
	stream, err = client.SubscribeToTask(cctx, &a2apb.SubscribeToTaskRequest{Id: "hang"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	if n := inFlight.Load(); n != 1 {
		t.Fatalf("%d in flight during the stream, want 1", n)
	}
	cancel()
	close(block)
	deadline := time.Now().Add(5 * time.Second)
	for inFlight.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := inFlight.Load(); n != 0 {
		t.Errorf("%d in flight after the client left, want 0", n)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("abandoned stream: %v, want CANCELED", err)
	}
}

// counter admits every call and counts those in flight.
type counter struct{ n *atomic.Int64 }

func (c counter) Admit(transport.Principal) (func(), *transport.Denial) {
	c.n.Add(1)
	return func() { c.n.Add(-1) }, nil
}
