package mcp

import (
	"context"
	"errors"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// sendWatched sends p as message/stream does, through the core's stream
// (its drain refusal, its revocation of the caller's key), and tells the
// client each progress note of the running call as notifications/progress
// for token (nil: none), on the request's response stream: the progress
// counts the notes (1, 2, …; the total is unknown), the note is its
// message. after, when not 0, is how long the call may run before it
// answers with its task as it stands (a handle): the watch ends then, but
// never before the task is stored (the stream's first event), so that a
// handle always names a task the store holds. The answer is the task as
// it ends or the watch ends (read from the store then), or the reply.
func (rq *request) sendWatched(ctx, sdkCtx context.Context, ss *sdk.ServerSession, token any, after time.Duration, p a2a.SendParams) (*a2a.Task, *a2a.Message, *a2a.Error) {
	core := rq.s.cfg.Core
	wctx, cut := context.WithCancelCause(ctx)
	defer cut(nil)
	sink := &progressSink{ctx: sdkCtx, ss: ss, token: token, after: after, cut: cut, start: time.Now()}
	defer sink.stop()
	open := func(context.Context) (transport.Opened, *a2a.Error) { return core.OpenSend(rq.cl, p, nil), nil }
	if e := core.Stream(wctx, rq.cl, open, sink); e != nil {
		return nil, nil, e
	}
	switch {
	case sink.failed != nil:
		return nil, nil, sink.failed
	case sink.reply != nil:
		return nil, sink.reply, nil
	case sink.taskID == "":
		return nil, nil, a2a.ErrInternal
	}
	if context.Cause(ctx) == errCancelled {
		// Cancelled: the task is cancelled next; no need to read it.
		return &a2a.Task{ID: sink.taskID, Status: a2a.TaskStatus{State: a2a.StateWorking}}, nil, nil
	}
	task, e := core.Get(rq.ctx, rq.cl, a2a.TaskQuery{ID: sink.taskID}, false)
	return task, nil, e
}

// errHandle ends the watch of a call that answers with a handle.
var errHandle = errors.New("the call answers with a task handle")

// progressSink is the transport.Sink of a call watched for its progress.
type progressSink struct {
	ctx     context.Context
	ss      *sdk.ServerSession
	token   any
	notes   int
	started bool
	taskID  string
	reply   *a2a.Message
	failed  *a2a.Error
	// after is how long the call may run before it answers with a handle
	// (0: until it ends); cut ends the watch, timer calls it.
	after time.Duration
	cut   context.CancelCauseFunc
	start time.Time
	mu    sync.Mutex
	timer *time.Timer
}

// bound starts the timer that ends the watch at start+after, once the
// task is stored (its first event); an answer past the bound goes at once.
func (k *progressSink) bound() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.after <= 0 || k.timer != nil {
		return
	}
	k.timer = time.AfterFunc(max(time.Until(k.start.Add(k.after)), 0), func() { k.cut(errHandle) })
}

// stop stops the timer, if it started.
func (k *progressSink) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.timer != nil {
		k.timer.Stop()
	}
}

var _ transport.Sink = (*progressSink)(nil)

// Event notes the task, and tells the client of a progress note.
func (k *progressSink) Event(e tasks.StreamEvent) error {
	k.started = true
	switch {
	case e.Task != nil:
		k.taskID = e.Task.ID
		k.bound()
	case e.Message != nil:
		k.reply = e.Message
	case e.Status != nil:
		k.taskID = e.Status.TaskID
		k.bound()
		if e.Status.Status.State != a2a.StateWorking {
			return nil
		}
		if note := statusText(e.Status.Status.Message); note != "" && k.token != nil {
			k.notes++
			// A client gone is the request's end: its context says so.
			_ = k.ss.NotifyProgress(k.ctx, &sdk.ProgressNotificationParams{ProgressToken: k.token, Progress: float64(k.notes), Message: note})
		}
	}
	return nil
}

func (k *progressSink) Started() bool     { return k.started }
func (k *progressSink) Start()            { k.started = true }
func (k *progressSink) Fail(e *a2a.Error) { k.failed = e }
func (k *progressSink) Close()            {}

// progressToken is the request's progress token and session, when the
// client asked for progress and the server may stream; nil otherwise.
func progressToken(req *sdk.CallToolRequest) (any, *sdk.ServerSession) {
	if req.Session == nil || req.Params == nil {
		return nil, nil
	}
	return req.Params.GetProgressToken(), req.Session
}
