package tasks

import (
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// answers shapes what a request is answered with: the scope of a read
// whose task goes to the client, a send's task, the Message a function
// answers with instead of it, and how long a blocking send's call may run
// before its task is stored.
type answers struct {
	historyBytes    int64         // Config.HistoryReadBytes
	blockingTimeout time.Duration // Config.BlockingTimeout
	catalog         func() *functions.Catalog
}

// scope is the scope of a read whose task goes to the client: the
// last historyLength messages (nil: all), within the history byte cap,
// and the artifacts if artifacts.
func (a *answers) scope(historyLength *int, artifacts bool) Scope {
	sc := ScopeOf(historyLength, artifacts)
	sc.HistoryBytes = a.historyBytes
	return sc
}

// task is rec's task as a send answers it: the history the client
// asked for, within the history byte cap (a record from the broker was
// read with another scope).
func (a *answers) task(rec *Record, historyLength *int) a2a.Task {
	sc := a.scope(historyLength, true)
	t := rec.Task.WithHistoryLength(sc.History)
	t.History = LastFitting(t.History, t.ID, t.ContextID, sc.HistoryBytes)
	return t
}

// window says whether p's send blocks and how long its call may run
// before its task is stored (see speculationWindow): 0 if it does not.
func (a *answers) window(p a2a.SendParams) (blocking bool, window time.Duration) {
	if blocking = p.Blocking == nil || *p.Blocking; blocking {
		window = min(speculationWindow, a.blockingTimeout)
	}
	return blocking, window
}

// replyOf is how rec's function answers, as the catalogue in force says.
func (a *answers) replyOf(rec *Record) functions.Reply {
	cat := a.catalog()
	if cat == nil || rec.FunctionID == "" {
		return functions.ReplyTask
	}
	if f, ok := cat.Lookup(rec.FunctionID); ok {
		return f.Reply
	}
	return functions.ReplyTask
}

// reply is the Message rec's call answered with, if its function answers
// with one and the task completed; nil otherwise. It is the completed
// status's message (a parts envelope's "message") or, without one, the
// parts of the task's artifacts, in order; its id is the status message's,
// or the task's, so a resend gets the same message. It names the task that
// holds it (taskId), which GetTask reads.
func (a *answers) reply(rec *Record) *a2a.Message {
	if rec.State() != a2a.StateCompleted {
		return nil
	}
	t := &rec.Task
	switch a.replyOf(rec) {
	case functions.ReplyTask:
		return nil
	case functions.ReplyEither:
		// This call chose (its parts envelope's "reply").
		return chosenReply(t.ID, t.ContextID, &t.Status)
	}
	m := &a2a.Message{MessageID: t.ID, TaskID: t.ID, ContextID: t.ContextID, Role: a2a.RoleAgent}
	if sm := t.Status.Message; sm != nil && len(sm.Parts) > 0 {
		m.MessageID, m.Parts = sm.MessageID, sm.Parts
		return m
	}
	for _, a := range t.Artifacts {
		m.Parts = append(m.Parts, a.Parts...)
	}
	if len(m.Parts) == 0 {
		return nil // nothing to say: the task is the answer
	}
	return m
}
