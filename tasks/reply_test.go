package tasks_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// A function declared "reply: message" answers with a Message; a resend
// of the same messageId gets the same message without a second call.
func TestReplyMessage(t *testing.T) {
	b := outputBackend(`{"message":[{"text":"Direct message response"}]}`)
	f := fn(t, "r::msg", b, func(f *functions.Function) { f.Parts, f.ReplyMessage = true, true })
	plain := fn(t, "r::data", outputBackend(`{"a":1}`), func(f *functions.Function) { f.ReplyMessage = true })
	e := newEnv(t, tasks.Config{}, f, plain)
	m := dataMsg("m1", "r::msg", `{}`)
	m.ContextID = "c1"
	task, reply, _, err := e.svc.SendReply(ctx, tasks.Caller{}, send(m))
	if err != nil || task != nil || reply == nil {
		t.Fatalf("SendReply = %+v, %+v, %v", task, reply, err)
	}
	if reply.Role != a2a.RoleAgent || len(reply.Parts) != 1 || reply.Parts[0].Text != "Direct message response" ||
		reply.ContextID != "c1" || reply.TaskID == "" {
		t.Fatalf("reply %+v", reply)
	}
	again, _, _, err := e.svc.SendReply(ctx, tasks.Caller{}, send(m))
	_, reply2, _, err2 := e.svc.SendReply(ctx, tasks.Caller{}, send(m))
	if err != nil || err2 != nil || again != nil || !reflect.DeepEqual(reply2, reply) || b.calls.Load() != 1 {
		t.Fatalf("resend: %v %v %+v, calls %d", err, err2, reply2, b.calls.Load())
	}
	// The task that holds it is kept, completed.
	if got, err := e.svc.Get(ctx, tasks.Caller{}, reply.TaskID, nil); err != nil || got.Status.State != a2a.StateCompleted {
		t.Fatalf("task: %v %+v", err, got)
	}
	// Send (a binding that cannot answer with a message) gets the task.
	if got, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m)); err != nil || got.ID != reply.TaskID {
		t.Fatalf("Send: %v %+v", err, got)
	}
	// Without a parts envelope, the reply holds the output's part.
	_, r, _, err := e.svc.SendReply(ctx, tasks.Caller{}, send(dataMsg("m2", "r::data", `{}`)))
	if err != nil || r == nil || string(r.Parts[0].Data) != `{"a":1}` {
		t.Fatalf("data reply: %v %+v", err, r)
	}
}

// A reply function that fails, or a send that does not wait, gets the
// task; a stream of a reply is the message alone.
func TestReplyMessageOtherwiseTask(t *testing.T) {
	failing := &Backend{Fn: func(context.Context, json.RawMessage) (functions.Result, error) {
		return functions.Result{}, &functions.CallError{Reason: "no"}
	}}
	e := newEnv(t, tasks.Config{},
		fn(t, "r::fail", failing, func(f *functions.Function) { f.ReplyMessage = true }),
		fn(t, "r::ok", outputBackend(`{"message":[{"text":"hi"}]}`), func(f *functions.Function) { f.Parts, f.ReplyMessage = true, true }))
	task, reply, _, err := e.svc.SendReply(ctx, tasks.Caller{}, send(dataMsg("m1", "r::fail", `{}`)))
	if err != nil || reply != nil || task == nil || task.Status.State != a2a.StateFailed {
		t.Fatalf("failed call: %+v %+v %v", task, reply, err)
	}
	var events []tasks.StreamEvent
	_, err = e.svc.Stream(ctx, tasks.Caller{}, send(dataMsg("m2", "r::ok", `{}`)), nil, func(ev tasks.StreamEvent) error {
		events = append(events, ev)
		return nil
	})
	if err != nil || len(events) != 1 || events[0].Message == nil || events[0].Message.Parts[0].Text != "hi" {
		t.Fatalf("stream: %v %+v", err, events)
	}
}
