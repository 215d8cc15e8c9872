package grpc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/rs/zerolog"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	a2agrpc "github.com/a2ad/a2ad/transport/grpc"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// TestLimitRefusals: the limits refuse gRPC calls as they refuse the
// other bindings' — a caller's rate, bytes or in-flight cap with
// RESOURCE_EXHAUSTED, the server's cap with UNAVAILABLE (HTTP 429 and
// 503), the throttle of failed authentications with RESOURCE_EXHAUSTED —
// each with its ErrorInfo and a RetryInfo saying when to come back, a
// stream's call as any other; and each refusal is audited under the
// "grpc" transport with its reason.
func TestLimitRefusals(t *testing.T) {
	fake := &transporttest.Service{GetFn: func(id string, _ *int) (*a2a.Task, error) { return task(id, a2a.StateWorking), nil }}
	limits := &transporttest.Limits{Retry: 3 * time.Second}
	client, auditLog := serve(t, fake, func(c *transport.Config) {
		c.Auth, c.Admit, c.Throttle = transporttest.OneKey("k1"), limits, limits
	})
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "k1")
	get := func(ctx context.Context) error {
		_, err := client.GetTask(ctx, &a2apb.GetTaskRequest{Id: "t1"})
		return err
	}
	subscribe := func(ctx context.Context) error {
		s, err := client.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: "t1"})
		if err == nil {
			_, err = s.Recv()
		}
		return err
	}
	tests := []struct {
		name   string
		deny   transport.Denial
		code   codes.Code
		msg    string
		reason string // ErrorInfo's
		delay  time.Duration
		audit  string
	}{
		{"caller's rate", transport.Denial{Scope: "caller", RateLimited: true, RetryAfter: 1500 * time.Millisecond},
			codes.ResourceExhausted, a2a.ErrRateLimited.Message, "RATE_LIMITED", 1500 * time.Millisecond, `"reason":"rate_limited","code":-32052`},
		{"caller's bytes", transport.Denial{Scope: "bytes", RateLimited: true, RetryAfter: 250 * time.Millisecond},
			codes.ResourceExhausted, a2a.ErrBytesRateLimited.Message, "RATE_LIMITED", 250 * time.Millisecond, `"reason":"bytes_rate_limited","code":-32052`},
		{"caller's in-flight cap", transport.Denial{Scope: "caller", RetryAfter: time.Second},
			codes.ResourceExhausted, a2a.ErrCallerInFlight.Message, "TOO_MANY_IN_FLIGHT", time.Second, `"reason":"over_capacity","code":-32053`},
		{"server's in-flight cap", transport.Denial{Scope: "server", RetryAfter: time.Second},
			codes.Unavailable, a2a.ErrServerInFlight.Message, "TOO_MANY_IN_FLIGHT", time.Second, `"reason":"over_capacity","code":-32053`},
	}
	for _, tt := range tests {
		limits.Deny(&tt.deny)
		for _, call := range []struct {
			method string
			do     func(context.Context) error
		}{{"GetTask", get}, {"SubscribeToTask", subscribe}, {"GetTask", func(ctx context.Context) error {
			// A version a2ad does not speak is admitted too.
			return get(metadata.AppendToOutgoingContext(ctx, "a2a-version", "0.3"))
		}}} {
			checkRefusal(t, tt.name+", "+call.method, call.do(ctx), tt.code, tt.msg, tt.reason, tt.delay)
			if recs := auditLog.String(); !strings.Contains(recs, `"rpc_method":"`+call.method+`"`) || !strings.Contains(recs, tt.audit) {
				t.Errorf("%s, %s: audit records lack %s:\n%s", tt.name, call.method, tt.audit, recs)
			}
		}
	}
	limits.Deny(nil)
	if err := get(ctx); err != nil {
		t.Fatalf("admitted: %v", err)
	}

	// Two failed authentications, then the address is throttled, the
	// right key too.
	limits.MaxFails = 2
	bad := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "k2")
	for range 2 {
		if err := get(bad); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("a bad key: %v, want UNAUTHENTICATED", err)
		}
	}
	checkRefusal(t, "throttled", get(ctx), codes.ResourceExhausted, a2a.ErrAuthThrottled.Message, "RATE_LIMITED", 3*time.Second)

	transporttest.CheckThrottledAudit(t, auditLog.String(), "grpc")
}

// checkRefusal checks that err is a limit's refusal: code, msg, the
// ErrorInfo reason in a2ad's domain, and a RetryInfo of delay last.
func checkRefusal(t *testing.T, what string, err error, code codes.Code, msg, reason string, delay time.Duration) {
	t.Helper()
	details := checkStatus(t, what, err, code, msg, reason, "github.com/a2ad/a2ad")
	if len(details) != 2 {
		t.Errorf("%s: details %v, want ErrorInfo and RetryInfo", what, details)
		return
	}
	if ri, ok := details[1].(*errdetails.RetryInfo); !ok || ri.GetRetryDelay().AsDuration() != delay {
		t.Errorf("%s: %v, want RetryInfo of %v", what, details[1], delay)
	}
}

// TestUnavailableSaysWhenToRetry: a server that is busy or stopping
// answers UNAVAILABLE with a RetryInfo of a second (HTTP+JSON's
// Retry-After: 1); an error that waiting does not cure has none.
func TestUnavailableSaysWhenToRetry(t *testing.T) {
	fake := &transporttest.Service{GetFn: func(id string, _ *int) (*a2a.Task, error) {
		switch id {
		case "busy":
			return nil, tasks.ErrBusy
		case "closed":
			return nil, tasks.ErrClosed
		}
		return nil, tasks.ErrNotFound
	}}
	client, _ := serve(t, fake)
	ctx := context.Background()
	for _, id := range []string{"busy", "closed"} {
		_, err := client.GetTask(ctx, &a2apb.GetTaskRequest{Id: id})
		st := status.Convert(err)
		details := st.Details()
		if st.Code() != codes.Unavailable || len(details) != 2 {
			t.Errorf("GetTask(%s): %v %v, want UNAVAILABLE with ErrorInfo and RetryInfo", id, err, details)
			continue
		}
		if ri, ok := details[1].(*errdetails.RetryInfo); !ok || ri.GetRetryDelay().AsDuration() != time.Second {
			t.Errorf("GetTask(%s): %v, want RetryInfo of 1s", id, details[1])
		}
	}
	_, err := client.GetTask(ctx, &a2apb.GetTaskRequest{Id: "nope"})
	if details := status.Convert(err).Details(); len(details) != 1 {
		t.Errorf("NOT_FOUND: details %v, want the ErrorInfo alone", details)
	}
}

// TestRequestID: each call has a request id, sent in its header metadata
// and carried by its audit record; an internal error is logged once under
// it, and the client gets "Internal error" alone.
func TestRequestID(t *testing.T) {
	fake := &transporttest.Service{GetFn: func(string, *int) (*a2a.Task, error) { return nil, errors.New("disk on fire") }}
	oplog := &testkit.SyncBuffer{}
	client, auditLog := serve(t, fake, func(c *transport.Config) { c.Logger = zerolog.New(oplog) })
	var header metadata.MD
	_, err := client.GetTask(context.Background(), &a2apb.GetTaskRequest{Id: "t1"}, grpc.Header(&header))
	if st := status.Convert(err); st.Code() != codes.Internal || st.Message() != "Internal error" {
		t.Errorf("GetTask: %v, want INTERNAL Internal error", err)
	}
	ids := header.Get(a2agrpc.RequestIDMetadata)
	if len(ids) != 1 || len(ids[0]) < 20 {
		t.Fatalf("header metadata %v: want one request id", header)
	}
	if rec := auditLog.String(); !strings.Contains(rec, `"req_id":"`+ids[0]+`"`) {
		t.Errorf("audit record lacks req_id %s: %s", ids[0], rec)
	}
	logs := strings.Split(strings.TrimSpace(oplog.String()), "\n")
	if len(logs) != 1 || !strings.Contains(logs[0], `"level":"error"`) || !strings.Contains(logs[0], `"error":"disk on fire"`) ||
		!strings.Contains(logs[0], `"req_id":"`+ids[0]+`"`) || !strings.Contains(logs[0], `"message":"internal error"`) {
		t.Errorf("log: %s, want one internal error line under the request id", oplog.String())
	}
	// Another call, another id.
	_, _ = client.GetTask(context.Background(), &a2apb.GetTaskRequest{Id: "t1"}, grpc.Header(&header))
	if next := header.Get(a2agrpc.RequestIDMetadata); len(next) != 1 || next[0] == ids[0] {
		t.Errorf("request ids %v then %v, want two", ids, next)
	}
}
