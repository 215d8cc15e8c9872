package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/internal/tick"
	"github.com/a2ad/a2ad/tasks"
)

// StreamService is what the streaming methods need of the task service.
type StreamService interface {
	Stream(ctx context.Context, caller tasks.Caller, p a2a.SendParams, after *uint64, emit func(tasks.StreamEvent) error) (tasks.Outcome, error)
	Watch(ctx context.Context, caller tasks.Caller, id string, after *uint64, emit func(tasks.StreamEvent) error) error
}

// LastEventIDKey is the params.metadata key a client may resume a stream
// with instead of the Last-Event-ID header: the last event id (sequence
// number) it saw, as a number or a string.
const LastEventIDKey = "a2ad.lastEventId"

// DefaultKeepAlive is the interval of SSE comment keep-alives.
const DefaultKeepAlive = 15 * time.Second

// opened is a streaming call ready to run: what runs it, and the
// metadata of its params (a client may resume from an event id there).
type opened struct {
	meta map[string]any
	run  func(emit func(tasks.StreamEvent) error) error
}

// The streaming methods: each decodes its params and opens its stream.

// stream serves message/stream and SendStreamingMessage.
func (c *codec) stream(s *Server, cl *call) (opened, *a2a.Error) {
	p, perr := c.sendParams(cl)
	if perr != nil {
		return opened{}, perr
	}
	return s.openSend(cl, p), nil
}

// subscribe serves tasks/resubscribe and SubscribeToTask.
func (c *codec) subscribe(s *Server, cl *call) (opened, *a2a.Error) {
	p, perr := c.decodeTaskID(cl.req.Params)
	if perr != nil {
		return opened{}, perr
	}
	cl.ac.noteTask(p.ID)
	if c.subscribeLiveOnly && lastEventID(cl.r, p.Metadata) == nil {
		t, err := s.cfg.Tasks.Get(cl.ctx, cl.caller, p.ID, nil)
		if err != nil {
			return opened{}, s.fail(cl, err)
		}
		if t.Status.State.Terminal() {
			return opened{}, a2a.ErrTaskTerminal
		}
	}
	return s.openWatch(cl, p), nil
}

// openSend opens the stream of a message: it is sent, then its task
// watched.
func (s *Server) openSend(cl *call, p a2a.SendParams) opened {
	cl.ac.noteTask(p.Message.TaskID)
	return opened{meta: p.Metadata, run: func(emit func(tasks.StreamEvent) error) error {
		out, err := s.cfg.Streams.Stream(cl.ctx, cl.caller, p, lastEventID(cl.r, p.Metadata), emit)
		cl.ac.outcome = out
		return err
	}}
}

// openWatch opens the stream of a task's events.
func (s *Server) openWatch(cl *call, p a2a.TaskIDParams) opened {
	return opened{meta: p.Metadata, run: func(emit func(tasks.StreamEvent) error) error {
		return s.cfg.Streams.Watch(cl.ctx, cl.caller, p.ID, lastEventID(cl.r, p.Metadata), emit)
	}}
}

// stream serves a streaming method as server-sent events: each data line
// is one JSON-RPC response carrying the request id, each SSE id the
// task's event sequence. Errors before the first event are answered as
// ordinary JSON-RPC errors: as a single SSE event to a client that accepts
// text/event-stream, else as application/json.
func (s *Server) stream(c echo.Context, ac *auditCall, req *a2a.Request, m *method) error {
	r := c.Request()
	wire := m.version
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	stop := context.AfterFunc(s.streams, func() { cancel(nil) }) // shutdown ends open streams
	defer stop()
	defer s.track(ctx, cancel)()
	if errors.Is(context.Cause(ctx), errRevoked) {
		ac.revoked = true
		return s.streamError(c, ac, req, wire, a2a.ErrKeyRevoked)
	}
	o, perr := m.open(s, &call{ctx: ctx, r: r, req: req, version: wire, caller: s.callerOf(r), p: ac.principal, ac: ac})
	if perr != nil {
		return s.streamError(c, ac, req, wire, perr)
	}
	meta := o.meta
	if v, ok := meta[LastEventIDKey]; ok && lastEventIDValue(v) == nil {
		return s.streamError(c, ac, req, wire, a2a.InvalidParams(a2a.Problem{
			Path: "/metadata/" + LastEventIDKey, Message: "must be a non-negative integer"}))
	}
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		if _, err := strconv.ParseUint(strings.TrimSpace(h), 10, 64); err != nil {
			return s.streamError(c, ac, req, wire, a2a.InvalidParams(a2a.Problem{
				Path: "Last-Event-ID", Message: "must be a non-negative integer"}))
		}
	}

	sw := &sseWriter{w: c.Response(), id: req.ID, keepAlive: s.cfg.KeepAlive, v1: wire == a2a.V10}
	err := o.run(func(e tasks.StreamEvent) error {
		switch {
		case e.Task != nil:
			ac.noteResult(e.Task)
		case e.Status != nil:
			ac.noteStatus(&e.Status.Status)
		}
		return sw.event(e)
	})
	// A stream that ended on its own before the revocation took effect
	// ends as it would have.
	revoked := err != nil && errors.Is(context.Cause(ctx), errRevoked)
	if err == nil && !sw.started && !revoked {
		sw.start() // nothing after the client's last event id: an empty stream
	}
	sw.close()
	if revoked {
		// The key was revoked: the stream ends with an error event (or
		// the error alone, if no event was sent yet).
		ac.revoked = true
		if !sw.started {
			return s.streamError(c, ac, req, wire, a2a.ErrKeyRevoked)
		}
		ac.noteError(a2a.ErrKeyRevoked, nil)
		sw.error(a2a.ErrKeyRevoked)
		return nil
	}
	if !sw.started {
		return s.streamError(c, ac, req, wire, s.rpcError(ctx, ac, req.Method, wire, err))
	}
	switch {
	case err == nil, errors.Is(err, tasks.ErrSlowSubscriber), errors.Is(err, tasks.ErrClosed),
		errors.Is(err, context.Canceled), errors.Is(err, errWrite):
		// The stream ended: after its final event, or it is cut off and
		// the client resumes from its last event id.
		if err != nil {
			zerolog.Ctx(ctx).Debug().Err(err).Str("rpc_method", req.Method).Msg("stream ended early")
		}
	default:
		sw.error(s.rpcError(ctx, ac, req.Method, wire, err))
	}
	return nil
}

// errRevoked is the cause of a stream's end when its key is revoked.
var errRevoked = errors.New("the stream's key was revoked")

// openStream is a stream being served, for EndRevokedStreams.
type openStream struct {
	p      Principal
	cancel context.CancelCauseFunc
}

// track registers the stream of the request whose context is ctx and
// returns the func that forgets it. A stream whose principal is revoked
// already is ended at once: a reload that revoked the key before the
// stream was registered does not miss it.
func (s *Server) track(ctx context.Context, cancel context.CancelCauseFunc) (forget func()) {
	p, ok := principalFrom(ctx)
	if !ok || s.cfg.Revoked == nil {
		return func() {}
	}
	o := &openStream{p: p, cancel: cancel}
	s.openMu.Lock()
	s.open[o] = struct{}{}
	s.openMu.Unlock()
	if s.cfg.Revoked(p) {
		cancel(errRevoked)
	}
	return func() {
		s.openMu.Lock()
		delete(s.open, o)
		s.openMu.Unlock()
	}
}

// EndRevokedStreams ends the open streams of every principal that
// Config.Revoked says is revoked: each client gets a last event with the
// error -32054 "The API key was revoked: the stream is closed", and the
// stream closes. Call it after the credentials change (a reload of the
// keys). It returns how many streams it ended.
func (s *Server) EndRevokedStreams() int {
	if s.cfg.Revoked == nil {
		return 0
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	n := 0
	for o := range s.open {
		if s.cfg.Revoked(o.p) {
			o.cancel(errRevoked)
			n++
		}
	}
	return n
}

// lastEventID is where a resuming client left off: the Last-Event-ID
// header, else params.metadata[LastEventIDKey]; nil when neither is set.
func lastEventID(r *http.Request, meta map[string]any) *uint64 {
	if h := strings.TrimSpace(r.Header.Get("Last-Event-ID")); h != "" {
		if n, err := strconv.ParseUint(h, 10, 64); err == nil {
			return &n
		}
	}
	if v, ok := meta[LastEventIDKey]; ok {
		return lastEventIDValue(v)
	}
	return nil
}

func lastEventIDValue(v any) *uint64 {
	switch x := v.(type) {
	case float64:
		if x >= 0 && x == float64(uint64(x)) {
			n := uint64(x)
			return &n
		}
	case string:
		if n, err := strconv.ParseUint(strings.TrimSpace(x), 10, 64); err == nil {
			return &n
		}
	}
	return nil
}

// streamError answers an error that came before any event.
func (s *Server) streamError(c echo.Context, ac *auditCall, req *a2a.Request, wire a2a.Version, e *a2a.Error) error {
	if ac.rpcErr == nil {
		ac.rpcErr = e
	}
	out := appendErrorFor(nil, wire, req.ID, e)
	if !strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream") {
		return c.Blob(httpStatus(c, e), echo.MIMEApplicationJSON, out)
	}
	sw := &sseWriter{w: c.Response(), id: req.ID, v1: wire == a2a.V10}
	sw.start()
	sw.write(append(append([]byte("data: "), out...), '\n', '\n'))
	return nil
}

var errWrite = errors.New("stream write failed")

// sseWriter writes one stream. Events and keep-alives come from two
// goroutines, so writes are serialised.
type sseWriter struct {
	w         http.ResponseWriter
	id        json.RawMessage
	keepAlive time.Duration
	v1        bool // events and errors in the 1.0 shapes

	mu      sync.Mutex
	started bool
	failed  bool
	buf     []byte
	stop    chan struct{}
	wg      sync.WaitGroup
}

// start writes the headers, once, and starts the keep-alives.
func (sw *sseWriter) start() {
	if sw.started {
		return
	}
	sw.started = true
	h := sw.w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // proxies must not buffer the stream
	sw.w.WriteHeader(http.StatusOK)
	if sw.keepAlive > 0 {
		stop := make(chan struct{})
		sw.stop = stop
		sw.wg.Add(1)
		go func() {
			defer sw.wg.Done()
			tick.Every(stop, sw.keepAlive, func() {
				sw.mu.Lock()
				sw.write([]byte(": keep-alive\n\n"))
				sw.mu.Unlock()
			})
		}()
	}
}

// sseWriteTimeout bounds one write to a stream: a client that keeps the
// connection open but stops reading is cut off, rather than holding its
// handler, keep-alive goroutine and in-flight slot until shutdown.
const sseWriteTimeout = 30 * time.Second

// write writes and flushes; the caller holds mu (or owns sw alone).
func (sw *sseWriter) write(b []byte) {
	if sw.failed {
		return
	}
	// Not every ResponseWriter supports deadlines (a test recorder does
	// not); the stream works without one.
	_ = http.NewResponseController(sw.w).SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := sw.w.Write(b); err != nil {
		sw.failed = true
		return
	}
	if err := http.NewResponseController(sw.w).Flush(); err != nil {
		sw.failed = true
	}
}

// event writes one event: its sequence as the SSE id, and the JSON-RPC
// response that carries it as one data line.
func (sw *sseWriter) event(e tasks.StreamEvent) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.start()
	b := append(sw.buf[:0], "id: "...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, "\ndata: "...)
	b = a2a.AppendResultStart(b, sw.id)
	var err error
	switch {
	case sw.v1:
		// A StreamResponse; the stream's end marks the last event.
		r := v1.StreamResponse{Task: e.Task, StatusUpdate: e.Status, ArtifactUpdate: e.Artifact}
		b, err = r.AppendJSON(b)
	case e.Task != nil:
		b, err = v03.AppendTask(b, e.Task)
	case e.Status != nil:
		b, err = v03.AppendStatusUpdate(b, e.Status)
	case e.Artifact != nil:
		b, err = v03.AppendArtifactUpdate(b, e.Artifact)
	}
	if err != nil {
		return err
	}
	b = append(b, "}\n\n"...)
	sw.buf = b
	sw.write(b)
	if sw.failed {
		return errWrite
	}
	return nil
}

// error writes a JSON-RPC error as the stream's last event.
func (sw *sseWriter) error(e *a2a.Error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	var out []byte
	if sw.v1 {
		out = v1.AppendError(nil, sw.id, e)
	} else {
		out = a2a.AppendError(nil, sw.id, e)
	}
	sw.write(append(append([]byte("data: "), out...), '\n', '\n'))
}

// close stops the keep-alives and waits for them.
func (sw *sseWriter) close() {
	sw.mu.Lock()
	stop := sw.stop
	sw.stop = nil
	sw.mu.Unlock()
	if stop != nil {
		close(stop)
		sw.wg.Wait()
	}
}
