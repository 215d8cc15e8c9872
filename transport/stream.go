package transport

import (
	"context"
	"errors"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// Opened is a streaming call ready to run (see OpenSend and OpenWatch).
type Opened struct {
	run func(ctx context.Context, emit func(tasks.StreamEvent) error) error
}

// Sink is where a binding writes a stream: SSE, or a gRPC server stream.
type Sink interface {
	// Event writes one event; an error means the client is gone.
	Event(e tasks.StreamEvent) error
	// Started reports whether anything was written: from then on, errors
	// are sent as the stream's last event.
	Started() bool
	// Start begins a stream that has no events (nothing came after the
	// client's last event id).
	Start()
	// Fail sends e as the last event of a started stream.
	Fail(e *a2a.Error)
	// Close stops whatever the sink runs beside the events
	// (keep-alives); it is called once, before Fail.
	Close()
}

// StreamsRefused is -32004 when the server offers no streaming; nil
// when it does.
func (c *Core) StreamsRefused() *a2a.Error {
	if c.cfg.Streams == nil {
		return a2a.ErrStreamingNotSupport
	}
	return nil
}

// OpenFunc opens a stream that run serves, for a binding whose stream is
// more than one task's watch (an MCP subscriptions/listen that also hears
// reloads): Stream serves it under the same drain, key revocation and
// audit record as a watch. run returns when the stream ends; it should
// return context.Cause(ctx) once ctx is done, so that Stream tells a
// revoked key from a drain.
func OpenFunc(run func(ctx context.Context, emit func(tasks.StreamEvent) error) error) Opened {
	return Opened{run: run}
}

// Run runs o with emit, for a run given to OpenFunc that serves o within
// its own stream.
func (o Opened) Run(ctx context.Context, emit func(tasks.StreamEvent) error) error {
	return o.run(ctx, emit)
}

// OpenSend opens the stream of a message (message/stream,
// SendStreamingMessage): it is sent, then its task watched. after is the
// client's last event id, nil for none.
func (c *Core) OpenSend(cl *Call, p a2a.SendParams, after *uint64) Opened {
	cl.NoteTask(p.Message.TaskID)
	cl.stampPush(p.PushConfig)
	return Opened{run: func(ctx context.Context, emit func(tasks.StreamEvent) error) error {
		out, err := c.cfg.Streams.Stream(ctx, cl.Caller(), p, after, emit)
		cl.outcome = out
		return err
	}}
}

// OpenWatch opens the stream of a task's events (tasks/resubscribe,
// SubscribeToTask). liveOnly (1.0's SubscribeToTask): a finished task has
// nothing to subscribe to (-32004), but a client resuming from an event
// id still gets what it missed (0.3's tasks/resubscribe leaves it to the
// stream); and the stream follows the task through input-required to its
// terminal state (tasks.Service.Subscribe says why), where 0.3's ends
// with final: true at input-required, as 0.3 says.
func (c *Core) OpenWatch(ctx context.Context, cl *Call, id string, after *uint64, liveOnly bool) (Opened, *a2a.Error) {
	cl.NoteTask(id)
	if liveOnly && after == nil {
		t, err := c.cfg.Tasks.Get(ctx, cl.Caller(), id, nil)
		if err != nil {
			return Opened{}, c.Fail(ctx, cl, err)
		}
		if t.Status.State.Terminal() {
			return Opened{}, a2a.ErrTaskTerminal
		}
	}
	return Opened{run: func(ctx context.Context, emit func(tasks.StreamEvent) error) error {
		if liveOnly {
			return c.cfg.Streams.Subscribe(ctx, cl.Caller(), id, after, emit)
		}
		return c.cfg.Streams.Watch(ctx, cl.Caller(), id, after, emit)
	}}, nil
}

// ErrWrite is what a Sink's Event returns when the client is gone.
var ErrWrite = errors.New("stream write failed")

// Stream serves a streaming call into sink: open decodes its params and
// opens it (with the stream's context, which shutdown and the revocation
// of the caller's key end). An error that comes before any event is
// returned for the binding to answer as it answers any error; one after
// is the stream's last event. Call StreamsRefused first.
func (c *Core) Stream(ctx context.Context, cl *Call, open func(ctx context.Context) (Opened, *a2a.Error), sink Sink) *a2a.Error {
	if c.streams.Err() != nil {
		// Draining for shutdown: a new stream is refused before anything
		// of it is written, with the drain's retryable -32051, which each
		// binding answers as an unavailable server (HTTP 503 and
		// Retry-After, gRPC UNAVAILABLE and RetryInfo), so that a balancer
		// or the client tries another replica.
		return a2a.ErrShuttingDown
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(c.streams, func() { cancel(nil) }) // shutdown ends open streams
	defer stop()
	defer c.track(cl.principal, cancel)()
	if errors.Is(context.Cause(ctx), errRevoked) {
		cl.revoked = true
		return a2a.ErrKeyRevoked
	}
	o, perr := open(ctx)
	if perr != nil {
		return perr
	}
	err := o.run(ctx, func(e tasks.StreamEvent) error {
		switch {
		case e.Task != nil:
			cl.NoteResult(e.Task)
		case e.Message != nil:
			cl.taskID = e.Message.TaskID
			cl.NoteStatus(&a2a.TaskStatus{State: a2a.StateCompleted})
		case e.Status != nil:
			cl.NoteStatus(&e.Status.Status)
		}
		return sink.Event(e)
	})
	// A stream that ended on its own before the revocation took effect
	// ends as it would have.
	revoked := err != nil && errors.Is(context.Cause(ctx), errRevoked)
	if err == nil && !sink.Started() && !revoked {
		sink.Start() // nothing after the client's last event id: an empty stream
	}
	sink.Close()
	if revoked {
		// The key was revoked: the stream ends with an error event (or
		// the error alone, if no event was sent yet).
		cl.revoked = true
		if !sink.Started() {
			return a2a.ErrKeyRevoked
		}
		cl.NoteError(a2a.ErrKeyRevoked, nil)
		sink.Fail(a2a.ErrKeyRevoked)
		return nil
	}
	if !sink.Started() {
		return c.Fail(ctx, cl, err)
	}
	switch {
	case err == nil, errors.Is(err, tasks.ErrSlowSubscriber), errors.Is(err, tasks.ErrClosed),
		errors.Is(err, context.Canceled), errors.Is(err, ErrWrite):
		// The stream ended: after its final event, or it is cut off and
		// the client resumes from its last event id.
		if err != nil {
			c.logFor(ctx, cl).Debug().Err(err).Str("rpc_method", cl.method).Msg("stream ended early")
		}
	default:
		sink.Fail(c.Fail(ctx, cl, err))
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

// track registers the stream of principal p and returns the func that
// forgets it. A stream whose principal is revoked already is ended at
// once: a reload that revoked the key before the stream was registered
// does not miss it.
func (c *Core) track(p Principal, cancel context.CancelCauseFunc) (forget func()) {
	if c.cfg.Revoked == nil {
		return func() {}
	}
	o := &openStream{p: p, cancel: cancel}
	c.openMu.Lock()
	c.open[o] = struct{}{}
	c.openMu.Unlock()
	if c.cfg.Revoked(p) {
		cancel(errRevoked)
	}
	return func() {
		c.openMu.Lock()
		delete(c.open, o)
		c.openMu.Unlock()
	}
}

// EndRevokedStreams ends the open streams, over every binding, of every
// principal that Config.Revoked says is revoked: each client gets a last
// event with the error -32054 "The API key was revoked: the stream is
// closed", and the stream closes. Call it after the credentials change (a
// reload of the keys). It returns how many streams it ended.
func (c *Core) EndRevokedStreams() int {
	if c.cfg.Revoked == nil {
		return 0
	}
	c.openMu.Lock()
	defer c.openMu.Unlock()
	n := 0
	for o := range c.open {
		if c.cfg.Revoked(o.p) {
			o.cancel(errRevoked)
			n++
		}
	}
	return n
}
