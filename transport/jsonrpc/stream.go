package jsonrpc

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// LastEventIDKey is the params.metadata key a client may resume a stream
// with instead of the Last-Event-ID header (see transport.ResumeKey).
const LastEventIDKey = transport.ResumeKey

// opened is a streaming call ready to run.
type opened = transport.Opened

// The streaming methods: each decodes its params and opens its stream.

// stream serves message/stream and SendStreamingMessage.
func (c *codec) stream(s *Server, cl *call) (opened, *a2a.Error) {
	p, perr := c.sendParams(cl)
	if perr != nil {
		return opened{}, perr
	}
	after, perr := resumePoint(cl.r, p.Metadata)
	if perr != nil {
		return opened{}, perr
	}
	return s.core.OpenSend(cl.cl, p, after), nil
}

// subscribe serves tasks/resubscribe and SubscribeToTask.
func (c *codec) subscribe(s *Server, cl *call) (opened, *a2a.Error) {
	p, perr := c.decodeTaskID(cl.req.Params)
	if perr != nil {
		return opened{}, perr
	}
	after, perr := resumePoint(cl.r, p.Metadata)
	if perr != nil {
		return opened{}, perr
	}
	return s.core.OpenWatch(cl.ctx, cl.cl, p.ID, after, c.subscribeLiveOnly)
}

// resumePoint is where a resuming client left off: the Last-Event-ID
// header, else params.metadata[LastEventIDKey].
func resumePoint(r *http.Request, meta map[string]any) (*uint64, *a2a.Error) {
	return transport.ResumePoint(r.Header.Get("Last-Event-ID"), "Last-Event-ID", meta)
}

// stream serves a streaming method as server-sent events: each data line
// is one JSON-RPC response carrying the request id, each SSE id the
// task's event sequence. Errors before the first event are answered as
// ordinary JSON-RPC errors: as a single SSE event to a client that accepts
// text/event-stream, else as application/json.
func (s *Server) stream(c echo.Context, cl *transport.Call, req *a2a.Request, m *method) error {
	r := c.Request()
	wire := m.version
	open := func(ctx context.Context) (transport.Opened, *a2a.Error) {
		return m.open(s, &call{ctx: ctx, r: r, req: req, cl: cl})
	}
	sw := newSSE(c.Response(), req.ID, wire, s.core.KeepAlive())
	if e := s.core.Stream(r.Context(), cl, open, sw); e != nil {
		return s.streamError(c, cl, req, wire, e)
	}
	return nil
}

// newSSE is a stream of JSON-RPC responses carrying id, in the shapes of
// wire.
func newSSE(w http.ResponseWriter, id []byte, wire a2a.Version, keepAlive time.Duration) *transport.SSE {
	return &transport.SSE{
		W: w, KeepAlive: keepAlive,
		Data: func(b []byte, e tasks.StreamEvent) ([]byte, error) {
			b = a2a.AppendResultStart(b, id)
			var err error
			switch {
			case wire == a2a.V10:
				// A StreamResponse; the stream's end marks the last event.
				r := v1.StreamResponse{Task: e.Task, Message: e.Message, StatusUpdate: e.Status, ArtifactUpdate: e.Artifact}
				b, err = r.AppendJSON(b)
			case e.Task != nil:
				b, err = v03.AppendTask(b, e.Task)
			case e.Message != nil:
				b, err = v03.AppendMessage(b, e.Message)
			case e.Status != nil:
				b, err = v03.AppendStatusUpdate(b, e.Status)
			case e.Artifact != nil:
				b, err = v03.AppendArtifactUpdate(b, e.Artifact)
			}
			return append(b, '}'), err
		},
		ErrorData: func(b []byte, e *a2a.Error) []byte { return appendErrorFor(b, wire, id, e) },
	}
}

// streamError answers an error that came before any event.
func (s *Server) streamError(c echo.Context, cl *transport.Call, req *a2a.Request, wire a2a.Version, e *a2a.Error) error {
	if cl.Err() == nil {
		cl.NoteError(e, nil)
	}
	// An error that says to retry elsewhere (a drain, an unreachable
	// store) keeps its HTTP status (503, Retry-After) even for a client
	// that asked for events: an SSE answer would be a 200, which no
	// balancer retries.
	if st := httpStatus(c, e); st != http.StatusOK || !strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream") {
		return blobJSON(c, st, appendErrorFor(nil, wire, req.ID, e))
	}
	newSSE(c.Response(), req.ID, wire, 0).Fail(e)
	return nil
}
