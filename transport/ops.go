package transport

import (
	"context"
	"errors"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// The operations: each takes its decoded params, serves them through the
// task service, and returns the result or the A2A error to answer with,
// having noted both in the call's audit record. A binding spells the
// params and the results; the rules are here.

// Replier is a TaskService that may answer a send with a Message
// instead of a task (see tasks.Service.SendReply).
type Replier interface {
	SendReply(ctx context.Context, caller tasks.Caller, p a2a.SendParams) (*a2a.Task, *a2a.Message, tasks.Outcome, error)
}

// Send sends a message (message/send, SendMessage). It answers with the
// task, or with a Message (reply, task nil) from a Replier.
func (c *Core) Send(ctx context.Context, cl *Call, p a2a.SendParams) (task *a2a.Task, reply *a2a.Message, e *a2a.Error) {
	cl.NoteTask(p.Message.TaskID)
	cl.stampPush(p.PushConfig)
	var (
		out tasks.Outcome
		err error
	)
	if r, ok := c.cfg.Tasks.(Replier); ok {
		task, reply, out, err = r.SendReply(ctx, cl.Caller(), p)
	} else {
		task, out, err = c.cfg.Tasks.Send(ctx, cl.Caller(), p)
	}
	cl.outcome = out
	if err != nil {
		return nil, nil, c.Fail(ctx, cl, err)
	}
	if reply != nil {
		// The call completed: its task holds the reply.
		cl.taskID = reply.TaskID
		cl.NoteStatus(&a2a.TaskStatus{State: a2a.StateCompleted})
		return nil, reply, nil
	}
	cl.NoteResult(task)
	return task, nil, nil
}

// Get reads a task (tasks/get, GetTask); noteState puts the state it
// found into the audit record (0.3's tasks/get does, 1.0's GetTask does
// not).
func (c *Core) Get(ctx context.Context, cl *Call, q a2a.TaskQuery, noteState bool) (*a2a.Task, *a2a.Error) {
	cl.NoteTask(q.ID)
	reserved, e := c.reserveAnswer(ctx, cl)
	if e != nil {
		return nil, e
	}
	task, err := c.cfg.Tasks.Get(ctx, cl.Caller(), q.ID, q.HistoryLength)
	reserved()
	if err != nil {
		return nil, c.Fail(ctx, cl, err)
	}
	if noteState {
		cl.NoteResult(task)
	}
	if e := c.holdAnswer(ctx, cl, AnswerBytes(task)); e != nil {
		return nil, e
	}
	return task, nil
}

// Cancel cancels a task (tasks/cancel, CancelTask). idempotent: canceling
// a task canceled already answers the task as it stands (1.0); another
// terminal state is still an error.
func (c *Core) Cancel(ctx context.Context, cl *Call, id string, idempotent bool) (*a2a.Task, *a2a.Error) {
	cl.NoteTask(id)
	task, err := c.cfg.Tasks.Cancel(ctx, cl.Caller(), id)
	if idempotent && errors.Is(err, tasks.ErrNotCancelable) {
		if t, gerr := c.cfg.Tasks.Get(ctx, cl.Caller(), id, nil); gerr == nil && t.Status.State == a2a.StateCanceled {
			task, err = t, nil
		}
	}
	if err != nil {
		return nil, c.Fail(ctx, cl, err)
	}
	cl.NoteResult(task)
	return task, nil
}

// ListRefused is the error a list call gets before its params are read:
// -32601 without a Lister, as on a server that does not offer it; -32004 (ErrListNeedsKey)
// for a principal whose owner is shared with callers it cannot be told
// apart from (anonymous callers beside keyed ones would list each
// other's tasks). Nil: the call may go on.
func (c *Core) ListRefused(cl *Call) *a2a.Error {
	if c.cfg.Lister == nil {
		return a2a.MethodNotFound(cl.method)
	}
	if cl.principal.SharedOwner {
		return a2a.ErrListNeedsKey
	}
	return nil
}

// List lists the caller's tasks (tasks/list, ListTasks); a bad page token
// is -32602 naming tokenPath, the token's field in the caller's
// protocol. Call ListRefused first.
func (c *Core) List(ctx context.Context, cl *Call, p a2a.ListTasksParams, tokenPath string) (tasks.ListPage, *a2a.Error) {
	reserved, e := c.reserveAnswer(ctx, cl)
	if e != nil {
		return tasks.ListPage{}, e
	}
	page, err := c.cfg.Lister.List(ctx, cl.Caller(), listQuery(p))
	reserved()
	if err == nil {
		var n int64
		for i := range page.Tasks {
			n += AnswerBytes(&page.Tasks[i])
		}
		if e := c.holdAnswer(ctx, cl, n); e != nil {
			return tasks.ListPage{}, e
		}
		return page, nil
	}
	switch {
	case errors.Is(err, tasks.ErrPageToken):
		e = a2a.InvalidParams(a2a.Problem{Path: tokenPath, Message: a2a.PageTokenMalformed})
	case errors.Is(err, tasks.ErrPageTokenQuery):
		e = a2a.InvalidParams(a2a.Problem{Path: tokenPath, Message: a2a.PageTokenOtherQuery})
	default:
		return page, c.Fail(ctx, cl, err)
	}
	cl.NoteError(e, err)
	return page, e
}

// listQuery converts decoded list params, of either protocol version, to
// the service's query.
func listQuery(p a2a.ListTasksParams) tasks.ListQuery {
	q := tasks.ListQuery{
		ListFilter:       tasks.ListFilter{ContextID: p.ContextID, State: p.Status},
		PageSize:         p.PageSize,
		PageToken:        p.PageToken,
		HistoryLength:    p.HistoryLength,
		IncludeArtifacts: p.IncludeArtifacts,
	}
	if p.StatusTimestampAfter != nil {
		q.StatusAfter = *p.StatusTimestampAfter
	}
	return q
}

// PushRefused is -32003 when the server offers no push notifications,
// which every push config method answers before its params are read;
// nil when it does.
func (c *Core) PushRefused() *a2a.Error {
	if c.cfg.Push == nil {
		return a2a.ErrPushNotSupported
	}
	return nil
}

// stampPush marks a push config set by the call with the call's
// protocol version, the one its notifications are delivered in: one rule
// for every binding.
func (cl *Call) stampPush(pc *a2a.PushConfig) {
	if pc != nil {
		pc.Wire = cl.version
	}
}

// The push config operations; call PushRefused first. Each takes the
// decoded params (a2a.PushConfigParams) and notes the task.

// SetPush sets a task's push config.
func (c *Core) SetPush(ctx context.Context, cl *Call, p a2a.PushConfigParams) (*a2a.TaskPushConfig, *a2a.Error) {
	cl.NoteTask(p.TaskID)
	cl.stampPush(&p.Config)
	cfg, err := c.cfg.Push.SetPushConfig(ctx, cl.Caller(), p.TaskID, p.Config)
	if err != nil {
		return nil, c.Fail(ctx, cl, err)
	}
	return cfg, nil
}

// GetPush reads one of a task's push configs.
func (c *Core) GetPush(ctx context.Context, cl *Call, p a2a.PushConfigParams) (*a2a.TaskPushConfig, *a2a.Error) {
	cl.NoteTask(p.TaskID)
	cfg, err := c.cfg.Push.PushConfig(ctx, cl.Caller(), p.TaskID, p.ConfigID)
	if err != nil {
		return nil, c.Fail(ctx, cl, err)
	}
	return cfg, nil
}

// ListPush lists a task's push configs: all of them, on one page.
func (c *Core) ListPush(ctx context.Context, cl *Call, p a2a.PushConfigParams) ([]a2a.TaskPushConfig, *a2a.Error) {
	cl.NoteTask(p.TaskID)
	list, err := c.cfg.Push.PushConfigList(ctx, cl.Caller(), p.TaskID)
	if err != nil {
		return nil, c.Fail(ctx, cl, err)
	}
	return list, nil
}

// DeletePush deletes one of a task's push configs; deleting what is not
// there is no error.
func (c *Core) DeletePush(ctx context.Context, cl *Call, p a2a.PushConfigParams) *a2a.Error {
	cl.NoteTask(p.TaskID)
	if err := c.cfg.Push.DeletePushConfig(ctx, cl.Caller(), p.TaskID, p.ConfigID); err != nil {
		return c.Fail(ctx, cl, err)
	}
	return nil
}

// ExtendedCard is the card of the call's principal (call NeedsAuth
// first), in the shape of version v: the merged card for 0.3, the 1.0
// AgentCard for 1.0 (the merged one when the card has no 1.0 form);
// -32004 when none is configured.
func (c *Core) ExtendedCard(cl *Call, v a2a.Version) ([]byte, *a2a.Error) {
	if c.cfg.ExtendedCard == nil {
		return nil, a2a.ErrUnsupportedOp
	}
	card := c.cfg.ExtendedCard(cl.principal)
	if v == a2a.V10 && card.V1JSON != nil {
		return card.V1JSON, nil
	}
	return card.JSON, nil
}
