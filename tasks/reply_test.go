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
	f := fn(t, "r::msg", b, func(f *functions.Function) { f.Parts, f.Reply = true, functions.ReplyMessage })
	plain := fn(t, "r::data", outputBackend(`{"a":1}`), func(f *functions.Function) { f.Reply = functions.ReplyMessage })
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
		fn(t, "r::fail", failing, func(f *functions.Function) { f.Reply = functions.ReplyMessage }),
		fn(t, "r::ok", outputBackend(`{"message":[{"text":"hi"}]}`), func(f *functions.Function) { f.Parts, f.Reply = true, functions.ReplyMessage }))
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

// A function declared "reply: either" chooses at each call.
func TestReplyEither(t *testing.T) {
	var out string
	b := &Backend{Fn: func(context.Context, json.RawMessage) (functions.Result, error) {
		return functions.Result{Output: json.RawMessage(out)}, nil
	}}
	e := newEnv(t, tasks.Config{}, fn(t, "r::either", b, func(f *functions.Function) { f.Parts, f.Reply = true, functions.ReplyEither }))
	out = `{"message":[{"text":"as a message"}],"reply":"message"}`
	task, reply, _, err := e.svc.SendReply(ctx, tasks.Caller{}, send(dataMsg("m1", "r::either", `{}`)))
	if err != nil || task != nil || reply == nil || reply.Parts[0].Text != "as a message" {
		t.Fatalf("message: %+v %+v %v", task, reply, err)
	}
	out = `{"message":[{"text":"Hello from TCK"}]}`
	task, reply, _, err = e.svc.SendReply(ctx, tasks.Caller{}, send(dataMsg("m2", "r::either", `{}`)))
	if err != nil || reply != nil || task == nil || statusText(task) != "Hello from TCK" {
		t.Fatalf("task: %+v %+v %v", task, reply, err)
	}
	// The choice is kept with the task: a resend gets the message again.
	out = `{"message":[{"text":"changed"}]}`
	_, reply, _, err = e.svc.SendReply(ctx, tasks.Caller{}, send(dataMsg("m1", "r::either", `{}`)))
	if err != nil || reply == nil || reply.Parts[0].Text != "as a message" || b.calls.Load() != 2 {
		t.Fatalf("resend: %+v %v, calls %d", reply, err, b.calls.Load())
	}
	out = `{"reply":"message"}`
	task, _, _, err = e.svc.SendReply(ctx, tasks.Caller{}, send(dataMsg("m3", "r::either", `{}`)))
	if err != nil || task.Status.State != a2a.StateFailed ||
		statusText(task) != "Function returned output that is not a parts envelope: /reply: a message reply needs the message's parts in message" {
		t.Fatalf("no message: %v %q", err, statusText(task))
	}
}

// A stream of a "reply: either" function: the message alone when the call
// chose one, the task's events otherwise.
func TestReplyEitherStream(t *testing.T) {
	var out string
	b := &Backend{Fn: func(context.Context, json.RawMessage) (functions.Result, error) {
		return functions.Result{Output: json.RawMessage(out)}, nil
	}}
	e := newEnv(t, tasks.Config{}, fn(t, "r::either", b, func(f *functions.Function) { f.Parts, f.Reply = true, functions.ReplyEither }))
	stream := func(id string) []tasks.StreamEvent {
		var events []tasks.StreamEvent
		if _, err := e.svc.Stream(ctx, tasks.Caller{}, send(dataMsg(id, "r::either", `{}`)), nil, func(ev tasks.StreamEvent) error {
			events = append(events, ev)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return events
	}
	out = `{"message":[{"text":"as a message"}],"reply":"message"}`
	if evs := stream("m1"); len(evs) != 1 || evs[0].Message == nil || evs[0].Message.Parts[0].Text != "as a message" {
		t.Fatalf("message: %+v", evs)
	}
	out = `{"artifacts":[{"parts":[{"text":"x"}]}]}`
	evs := stream("m2")
	if len(evs) < 2 || evs[0].Task == nil || !evs[len(evs)-1].Final() || evs[len(evs)-1].Status.Status.State != a2a.StateCompleted {
		t.Fatalf("task: %+v", evs)
	}
}
