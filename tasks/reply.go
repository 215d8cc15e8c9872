package tasks

import (
	"context"

	"github.com/a2ad/a2ad/a2a"
)

// A reply that is a message. A function declared "reply: message" answers
// a message with a Message instead of a task, as A2A allows. Its call is
// a task all the same, stored as any other: its durability, limits, audit
// and idempotency are a task's. What changes is the answer: when the call
// completed within the request, the send answers with the reply (a
// stream, with the reply as its one event); otherwise (it failed, asks for
// input, or outlasted a blocking send, or the send did not block) with the
// task, as for any function. A resend of the same messageId finds the
// same task and answers with the same reply, without running the call
// again: the task is what remembers it, for as long as tasks are kept.
// A stream of a "reply: message" function waits for the call and is its
// Message alone; one of a "reply: either" function goes as the task's
// events come, unless the call chose a Message before any event but the
// task (replyHold).

// SendReply is Send for a binding that can answer with a Message: reply
// is the Message a "reply: message" function answered with, and then
// the binding answers with it instead of the task; nil otherwise.
func (s *Service) SendReply(ctx context.Context, caller Caller, p a2a.SendParams) (task *a2a.Task, reply *a2a.Message, out Outcome, err error) {
	blocking, window := s.ans.window(p)
	rec, err := s.send(ctx, caller, p, blocking, window, &out)
	if err != nil {
		return nil, nil, out, err
	}
	if m := s.ans.reply(rec); m != nil {
		return nil, m, out, nil
	}
	t := s.ans.task(rec, p.HistoryLength)
	return &t, nil, out, nil
}

// chosenReply is the reply of a call of a "reply: either" function that
// chose a Message, from st, its task's completed status; nil if it chose
// the task.
func chosenReply(taskID, contextID string, st *a2a.TaskStatus) *a2a.Message {
	sm := st.Message
	if st.State != a2a.StateCompleted || sm == nil || sm.Metadata[ReplyKey] != "message" {
		return nil
	}
	return &a2a.Message{MessageID: sm.MessageID, TaskID: taskID, ContextID: contextID, Role: a2a.RoleAgent, Parts: sm.Parts}
}

// replyHold is the stream of a "reply: either" function's task: it holds
// the first event, the task, until the next; if that is the completed
// status of a call that chose a Message, the stream is the Message alone
// (as a send's answer would be), else the events go as they came.
type replyHold struct {
	emit func(StreamEvent) error
	task *StreamEvent // the held first event
	done bool         // the first event was held, and let go
}

func (h *replyHold) event(e StreamEvent) error {
	switch {
	case h.done:
		return h.emit(e)
	case h.task == nil && e.Task != nil:
		h.task = &e
		return nil
	}
	h.done = true
	if e.Status != nil && h.task != nil {
		if m := chosenReply(e.Status.TaskID, e.Status.ContextID, &e.Status.Status); m != nil {
			return h.emit(StreamEvent{Seq: e.Seq, Message: m})
		}
	}
	if h.task != nil {
		if err := h.emit(*h.task); err != nil {
			return err
		}
	}
	return h.emit(e)
}
