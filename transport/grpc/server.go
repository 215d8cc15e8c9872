package grpc

import (
	"context"
	"net"
	"net/http"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/transport"
)

// transportName names the binding in audit records and metrics.
const transportName = "grpc"

// The metadata keys the binding reads.
const (
	// ResumeMetadata is the metadata key of a stream's resume point: the
	// last event id (EventIDKey) the client saw.
	ResumeMetadata  = "last-event-id"
	versionMetadata = "a2a-version"
)

// EventIDKey is the key, in the metadata of each streamed event (the
// task's, or the status or artifact update's), of the event's sequence.
const EventIDKey = "a2ad.eventId"

// Server is the gRPC server of the binding. Build it with New.
type Server struct {
	a2apb.UnimplementedA2AServiceServer
	core    *transport.Core
	srv     *grpc.Server
	limits  Limits
	methods map[string]string // full method name -> name
	// penalties: addresses whose connections are refused for a while
	// (see Limits.ResetPenalty)
	penalties penalties
}

var _ a2apb.A2AServiceServer = (*Server)(nil)

// New builds the server, serving every call through core, guarded by
// lim (see Limits), over the listener's credentials creds (TLS; nil for
// plaintext). Messages larger than the core's body cap are refused with
// RESOURCE_EXHAUSTED.
func New(core *transport.Core, lim Limits, creds credentials.TransportCredentials, opts ...grpc.ServerOption) *Server {
	s := &Server{core: core, limits: lim.withDefaults(), methods: methodNames()}
	opts = append(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(int(core.MaxBodyBytes())),
		grpc.ChainUnaryInterceptor(s.unaryRequest), grpc.ChainStreamInterceptor(s.streamRequest),
		grpc.ForceServerCodecV2(newWireCodec())},
		s.options(s.limits, creds)...), opts...)
	s.srv = grpc.NewServer(opts...)
	a2apb.RegisterA2AServiceServer(s.srv, s)
	return s
}

// Serve serves ln until Stop or GracefulStop.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// GracefulStop stops accepting calls and waits for the running ones.
func (s *Server) GracefulStop() { s.srv.GracefulStop() }

// Stop ends every call and connection at once.
func (s *Server) Stop() { s.srv.Stop() }

// call is one call's passage: the core's record of it, the admission it
// holds, and the request its credentials were read from.
type call struct {
	cl      *transport.Call
	release func()
	reqID   string
	req     *http.Request
	ctx     context.Context // the call's, once begun: fail reads whether it ended
}

// begin admits a call to method with request req, its message read (the
// tap authenticated it from its headers), and starts its audit record
// (and its span, a child of the traceparent in the call's metadata, in
// the context returned: serve the call with it); end (always to be
// called) writes it. A refused call's error is returned.
func (s *Server) begin(ctx context.Context, method string, stateful bool, req proto.Message) (context.Context, *call, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	g := guardOf(ctx)
	var c *call
	if g != nil {
		g.hand()
		c = g.c
	} else { // no tap ran (a server built without New's options)
		c = s.open(ctx, md)
	}
	c.reqID = requestID(ctx)
	c.cl.SetMethod(method, a2a.V10, stateful)
	ctx = s.core.Trace(ctx, c.cl, mdCarrier(md))
	c.ctx = ctx
	if g == nil {
		if ref := s.core.Authenticate(c.cl, c.req); ref != nil {
			return ctx, c, refusalError(ref)
		}
	}
	// Every call is admitted, one in a version a2ad does not speak too,
	// as over the other bindings.
	release, ref := s.core.Admit(c.cl, int64(proto.Size(req)))
	c.release = release
	if ref != nil {
		return ctx, c, refusalError(ref)
	}
	if e := checkVersion(md.Get(versionMetadata)); e != nil {
		c.cl.NoteError(e, nil)
		return ctx, c, statusError(e)
	}
	return ctx, c, nil
}

// end frees the call's admission and writes its audit record.
func (s *Server) end(c *call) {
	c.release()
	s.core.End(c.cl, c.reqID)
}

// fail is the gRPC error of e, noted in the call's record. A call whose
// client canceled it or whose deadline passed ends as gRPC says such a
// call ends (CANCELLED, DEADLINE_EXCEEDED), whichever end sees it first:
// not as an internal error that a2ad did not have.
func (s *Server) fail(c *call, e *a2a.Error) error {
	c.cl.NoteError(e, nil)
	if c.ctx != nil && c.cl.ClientGone() {
		if err := c.ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
	}
	return statusError(e)
}

// checkVersion checks the a2a-version metadata: the binding speaks 1.0.
func checkVersion(vals []string) *a2a.Error {
	if len(vals) == 0 || vals[0] == "" {
		return nil
	}
	// What the binding speaks, not what a2ad does (0.3 too, over JSON-RPC).
	if ver, e := a2a.ParseVersion(vals[0]); e != nil || ver != a2a.V10 {
		return a2a.UnsupportedVersion(vals[0], "1.0")
	}
	return nil
}

// resumePoint reads the stream's resume point from the call's metadata
// (and, for a send, from the request's metadata, as over the other
// bindings).
func resumePoint(ctx context.Context, meta map[string]any) (*uint64, *a2a.Error) {
	md, _ := metadata.FromIncomingContext(ctx)
	h := ""
	if v := md.Get(ResumeMetadata); len(v) > 0 {
		h = v[0]
	}
	return transport.ResumePoint(h, ResumeMetadata, meta)
}

func formatSeq(n uint64) string { return strconv.FormatUint(n, 10) }

// mdCarrier reads the W3C trace context from a call's metadata, whose
// keys are lower-case (as traceparent and tracestate are).
type mdCarrier metadata.MD

func (m mdCarrier) Get(key string) string {
	if v := metadata.MD(m).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (m mdCarrier) Set(key, value string) { metadata.MD(m).Set(key, value) }

func (m mdCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
