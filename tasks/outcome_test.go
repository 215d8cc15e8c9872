package tasks_test

import (
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// TestSendOutcome: Send and Stream return what the policy decided on the
// function a message names; an id no function has is not repeated, and a
// message that names no function asks the policy nothing.
func TestSendOutcome(t *testing.T) {
	partner := fn(t, "demo::partner", echoBackend(), func(f *functions.Function) {
		f.Metadata = map[string]any{"a2a.expose": true, "a2a.tier": "partner"}
	})
	echo := fn(t, "demo::echo", echoBackend(), func(f *functions.Function) {
		f.Metadata = map[string]any{"a2a.expose": true, "a2a.tier": "internal"}
	})
	e := newEnv(t, tasks.Config{Policy: exposure.Policy{Tier: "internal"}}, echo, partner, fn(t, "engine::status", echoBackend()))
	long := "demo::" + strings.Repeat("x", 300)
	for _, tt := range []struct {
		msg  a2a.Message
		want tasks.Outcome
	}{
		{dataMsg("m1", "demo::echo", `{}`), tasks.Outcome{FunctionID: "demo::echo", Decision: exposure.Exposed}},
		{dataMsg("m2", "demo::partner", `{}`), tasks.Outcome{FunctionID: "demo::partner", Decision: exposure.TierMismatch}},
		{dataMsg("m3", "engine::status", `{}`), tasks.Outcome{FunctionID: "engine::status", Decision: exposure.HiddenPrefix}},
		{dataMsg("m4", "demo::missing", `{}`), tasks.Outcome{Decision: exposure.UnknownFunction}},
		{dataMsg("m5", long, `{}`), tasks.Outcome{Decision: exposure.UnknownFunction}},
		{textMsg("m6", "hello"), tasks.Outcome{}},
	} {
		_, got, err := e.svc.Send(ctx, tasks.Caller{}, send(tt.msg))
		if err != nil || got != tt.want {
			t.Errorf("Send(%s): %+v, %v; want %+v", tt.msg.MessageID, got, err, tt.want)
		}
	}
	got, err := e.svc.Stream(ctx, tasks.Caller{}, send(dataMsg("m7", "demo::echo", `{}`)), nil, func(tasks.StreamEvent) error { return nil })
	if want := (tasks.Outcome{FunctionID: "demo::echo", Decision: exposure.Exposed}); err != nil || got != want {
		t.Errorf("Stream: %+v, %v; want %+v", got, err, want)
	}
}
