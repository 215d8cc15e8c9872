package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// sendWatched sends p as message/stream does, through the core's stream
// (its drain refusal, its revocation of the caller's key), and tells the
// client each progress note of the running call as notifications/progress
// for token, on the request's response stream: the progress counts the
// notes (1, 2, …; the total is unknown), the note is its message. The
// answer is the task as it ends (read once the stream ends) or the reply.
func (rq *request) sendWatched(ctx, sdkCtx context.Context, ss *sdk.ServerSession, token any, p a2a.SendParams) (*a2a.Task, *a2a.Message, *a2a.Error) {
	core := rq.s.cfg.Core
	sink := &progressSink{ctx: sdkCtx, ss: ss, token: token}
	open := func(context.Context) (transport.Opened, *a2a.Error) { return core.OpenSend(rq.cl, p, nil), nil }
	if e := core.Stream(ctx, rq.cl, open, sink); e != nil {
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
	if sink.taskID != "" && context.Cause(ctx) == errCancelled {
		// Cancelled: the task is cancelled next; no need to read it.
		return &a2a.Task{ID: sink.taskID, Status: a2a.TaskStatus{State: a2a.StateWorking}}, nil, nil
	}
	task, e := core.Get(rq.ctx, rq.cl, a2a.TaskQuery{ID: sink.taskID}, false)
	return task, nil, e
}

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
}

var _ transport.Sink = (*progressSink)(nil)

// Event notes the task, and tells the client of a progress note.
func (k *progressSink) Event(e tasks.StreamEvent) error {
	k.started = true
	switch {
	case e.Task != nil:
		k.taskID = e.Task.ID
	case e.Message != nil:
		k.reply = e.Message
	case e.Status != nil:
		k.taskID = e.Status.TaskID
		if e.Status.Status.State != a2a.StateWorking {
			return nil
		}
		if note := statusText(e.Status.Status.Message); note != "" {
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
