package grpc

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2ad/a2ad/a2a"
)

// Limits are the binding's guards on connections and calls, the
// counterparts of the HTTP listener's. The zero value of a field means
// its default.
type Limits struct {
	// MaxStreams caps the calls open at once on one connection; more
	// are refused (RST_STREAM REFUSED_STREAM), and grpc-go stops reading
	// the connection while MaxStreams handlers run, which bounds what a
	// flood of reset streams can cost. Default DefaultMaxStreams.
	MaxStreams uint32
	// Handshake bounds the time a new connection has for its TLS
	// handshake and HTTP/2 preface; a silent connection is closed then.
	// Default DefaultHandshake.
	Handshake time.Duration
	// Idle closes a connection that has had no call open for that long
	// (its first call included). Default DefaultIdle.
	Idle time.Duration
	// RecvTimeout bounds the time a call's request message may take to
	// arrive once its headers are in (--read-timeout over HTTP); a late
	// call is canceled (the client sees CANCELLED), audited body_timeout. Default
	// DefaultRecvTimeout.
	RecvTimeout time.Duration
	// WriteTimeout bounds one event's write to a stream (the SSE
	// writer's deadline over HTTP): a client that stops reading has its
	// stream ended, and its connection closed: grpc-go frees what it
	// buffered for a stream only with its connection. Default
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// ResetRate and ResetBurst are the budget of the streams a client
	// may reset (RST_STREAM) on one connection: ResetRate a second, in
	// bursts of up to ResetBurst; past it the connection is closed (the
	// HTTP/2 "rapid reset" attack). Defaults DefaultResetRate and
	// DefaultResetBurst. The address of a connection so closed has its
	// new connections closed at once for ResetPenalty (default
	// DefaultResetPenalty), or the flood would go on over new
	// connections.
	ResetRate    int
	ResetBurst   int
	ResetPenalty time.Duration
}

// The defaults of Limits.
const (
	DefaultMaxStreams   = 100
	DefaultHandshake    = 5 * time.Second
	DefaultIdle         = time.Minute
	DefaultRecvTimeout  = 30 * time.Second
	DefaultWriteTimeout = 30 * time.Second
	DefaultResetRate    = 100
	DefaultResetBurst   = 200
	DefaultResetPenalty = 10 * time.Second
)

// keepalivePolicy refuses pings more often than every 10 s, or while no
// call is open (a connection that pings too often gets GOAWAY
// too_many_pings and is closed).
var keepalivePolicy = keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: false}

func (l Limits) withDefaults() Limits {
	if l.MaxStreams == 0 {
		l.MaxStreams = DefaultMaxStreams
	}
	if l.Handshake <= 0 {
		l.Handshake = DefaultHandshake
	}
	if l.Idle <= 0 {
		l.Idle = DefaultIdle
	}
	if l.RecvTimeout <= 0 {
		l.RecvTimeout = DefaultRecvTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	if l.ResetRate <= 0 {
		l.ResetRate = DefaultResetRate
	}
	if l.ResetBurst <= 0 {
		l.ResetBurst = DefaultResetBurst
	}
	if l.ResetPenalty <= 0 {
		l.ResetPenalty = DefaultResetPenalty
	}
	return l
}

// options are the server options that apply l, over the listener's
// credentials creds (nil for plaintext).
func (s *Server) options(l Limits, creds credentials.TransportCredentials) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.Creds(newGuardedCreds(creds, s)),
		grpc.MaxConcurrentStreams(l.MaxStreams),
		grpc.ConnectionTimeout(l.Handshake),
		grpc.KeepaliveEnforcementPolicy(keepalivePolicy),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: l.Idle}),
		grpc.InTapHandle(s.tap),
		grpc.StatsHandler(guardStats{s}),
	}
}

// The causes of a guard's cancel.
var (
	errRecvTimeout  = errors.New("request message not received in time")
	errWriteTimeout = errors.New("stream write timed out")
)

// guard is a call from its headers on: the core's call, authenticated
// from the metadata before the message is read, and the cancel of its
// context that the read and write deadlines use.
type guard struct {
	c      *call
	conn   *conn // nil on a server built without New's options
	ctx    context.Context
	cancel context.CancelCauseFunc
	recv   *time.Timer
	write  *time.Timer // armed around each stream write; nil until one
	handed atomic.Bool // a handler took the call (begin), and ends it
}

type guardKey struct{}

// guardOf is the guard of the call of ctx; nil for none.
func guardOf(ctx context.Context) *guard {
	g, _ := ctx.Value(guardKey{}).(*guard)
	return g
}

// tap sees a call's headers before its message is read (on the
// connection's reading goroutine, so it must be quick): an unknown
// method, or a caller the core refuses (credentials, the throttle of
// failed authentications), is answered at once and audited, having cost
// no message read and no handler. An accepted call gets its guard.
func (s *Server) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	c := s.open(ctx, metadata.MD(info.Header))
	name, ok := s.methods[info.FullMethodName]
	if !ok {
		c.cl.SetMethod(info.FullMethodName, a2a.V10, false)
		e := a2a.ErrMethodNotFound
		c.cl.NoteError(e, nil)
		c.cl.NoteSummarised()
		s.end(c)
		return ctx, status.Error(codes.Unimplemented, e.Message)
	}
	c.cl.SetMethod(name, a2a.V10, false)
	if ref := s.core.Authenticate(c.cl, c.req); ref != nil {
		s.end(c)
		return ctx, refusalError(ref)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	g := &guard{c: c, conn: connOf(ctx), ctx: ctx, cancel: cancel}
	g.recv = time.AfterFunc(s.limits.RecvTimeout, func() { cancel(errRecvTimeout) })
	return context.WithValue(ctx, guardKey{}, g), nil
}

// open starts the core's call of a call whose context (with its peer)
// is ctx and whose metadata is md.
func (s *Server) open(ctx context.Context, md metadata.MD) *call {
	addr := ""
	r := &http.Request{Header: http.Header{}, Method: http.MethodPost}
	if p, ok := peer.FromContext(ctx); ok {
		if p.Addr != nil {
			addr = p.Addr.String()
			if host, _, err := net.SplitHostPort(addr); err == nil {
				addr = host
			}
		}
		// Over TLS, the client's certificate identifies it as over HTTPS.
		if info, ok := authInfo(p).(credentials.TLSInfo); ok {
			r.TLS = &info.State
		}
	}
	for _, k := range []string{"authorization", "x-api-key"} {
		for _, v := range md.Get(k) {
			r.Header.Add(k, v)
		}
	}
	return &call{cl: s.core.Begin(transportName, addr), release: func() {}, req: r}
}

// hand gives the call of g to its handler, its message read: the read
// deadline no longer applies, and the handler ends the call.
func (g *guard) hand() {
	g.recv.Stop()
	g.handed.Store(true)
}

// send writes one event of a stream (size bytes) within the write
// deadline d: a client that does not read has its stream's context
// canceled, which ends the stream, and its connection closed, which
// frees what grpc-go buffered for the stream (it keeps a stream's unsent
// data until the client grants window or the connection ends). grpc-go
// takes an event without blocking while the stream's send quota lasts,
// so the deadline is of the bytes on the wire: it passes once the
// connection has written size bytes since the send began, or the call
// has ended (its client reset it, say).
func (g *guard) send(d time.Duration, size int, write func() error) error {
	var mark int64
	if g.conn != nil {
		mark = g.conn.written.Load()
	}
	if g.write != nil {
		g.write.Stop()
	}
	g.write = time.AfterFunc(d, func() {
		if g.ctx.Err() != nil || (g.conn != nil && g.conn.written.Load()-mark >= int64(size)) {
			return
		}
		g.cancel(errWriteTimeout)
		if g.conn != nil {
			g.conn.close("write_timeout")
		}
	})
	err := write()
	if g.conn == nil { // the wire unseen: only a blocked write is bounded
		g.write.Stop()
	}
	return err
}

// guardStats is the stats handler that audits the calls grpc-go ends
// before a handler takes them: a message over the size cap, one that is
// not protobuf, one that came too late, a call its client canceled
// first.
type guardStats struct{ s *Server }

func (guardStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (guardStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (guardStats) HandleConn(context.Context, stats.ConnStats)                       {}

func (h guardStats) HandleRPC(ctx context.Context, st stats.RPCStats) {
	end, ok := st.(*stats.End)
	if !ok {
		return
	}
	g := guardOf(ctx)
	if g == nil {
		return
	}
	g.recv.Stop()
	if g.write != nil {
		g.write.Stop()
	}
	if g.handed.Load() {
		return
	}
	cl := g.c.cl
	cl.NoteSummarised()
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errRecvTimeout):
		cl.NoteBodyLate()
	case status.Code(end.Error) == codes.Canceled:
		cl.NoteClientCanceled()
	case status.Code(end.Error) == codes.ResourceExhausted:
		cl.NoteError(a2a.ErrInvalidRequest.WithData(map[string]any{"reason": "message larger than the size cap"}), nil)
	default:
		cl.NoteError(a2a.ErrParse, nil)
	}
	h.s.end(g.c)
}

// methodNames maps the full names of the service's methods to their
// names.
func methodNames() map[string]string {
	d := a2apb.A2AService_ServiceDesc
	m := map[string]string{}
	for _, md := range d.Methods {
		m["/"+d.ServiceName+"/"+md.MethodName] = md.MethodName
	}
	for _, sd := range d.Streams {
		m["/"+d.ServiceName+"/"+sd.StreamName] = sd.StreamName
	}
	return m
}

var _ stats.Handler = guardStats{}
