package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// A message naming no skill calls the default skill with the documented
// mapping of its parts and ids.
func TestDefaultSkillTakesUnnamedMessages(t *testing.T) {
	var got []string
	b := &Backend{Fn: func(_ context.Context, in json.RawMessage) (functions.Result, error) {
		got = append(got, string(in))
		return functions.Result{Output: json.RawMessage(`"an answer"`)}, nil
	}}
	e := newEnv(t, tasks.Config{}, fn(t, "chat::reply", b), fn(t, "demo::echo", echoBackend()))
	e.cat.Default = "chat::reply"
	m := a2a.Message{MessageID: "m1", ContextID: "c1", Role: a2a.RoleUser, Parts: []a2a.Part{
		a2a.TextPart("hello"), a2a.DataPart(json.RawMessage(`{"k":1}`)), a2a.TextPart("there"),
		{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "a.txt", MimeType: "text/plain", Bytes: "aGk="}},
		{Kind: a2a.PartFile, File: &a2a.FileContent{URI: "https://example.com/b"}},
	}}
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m))
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.StateCompleted || task.Artifacts[0].Parts[0].Text != "an answer" {
		t.Fatalf("task %s, artifacts %+v", task.Status.State, task.Artifacts)
	}
	want := `{"text":"hello\nthere","data":[{"k":1}],"files":[{"name":"a.txt","mediaType":"text/plain","bytes":"aGk="},` +
		`{"uri":"https://example.com/b"}],"messageId":"m1","contextId":"c1","taskId":"` + task.ID + `"}`
	if len(got) != 1 || got[0] != want {
		t.Fatalf("input\n%v\nwant\n%s", got, want)
	}
	// A message naming a skill still goes to that skill.
	named, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m2", "demo::echo", `{"x":1}`)))
	if err != nil || string(named.Artifacts[0].Parts[0].Data) != `{"x":1}` || len(got) != 1 {
		t.Fatalf("named: %v %+v, default calls %d", err, named, len(got))
	}
}

// The default skill's input is checked against its schema like any
// other; a follow-up naming nothing calls it again with the mapping.
func TestDefaultSkillInputSchemaAndFollowUp(t *testing.T) {
	b := &Backend{Fn: func(_ context.Context, in json.RawMessage) (functions.Result, error) {
		var v struct{ Text string }
		_ = json.Unmarshal(in, &v)
		if v.Text != "yes" {
			return functions.Result{InputRequired: "Say yes"}, nil
		}
		return functions.Result{Output: json.RawMessage(`{"ok":true}`)}, nil
	}}
	strict := fn(t, "chat::strict", b, func(f *functions.Function) {
		f.Input = mustSchema(t, `{"type":"object","properties":{"text":{"type":"string","minLength":1}}}`)
	})
	e := newEnv(t, tasks.Config{}, strict)
	e.cat.Default = "chat::strict"
	var ie *tasks.InputError
	empty := a2a.Message{MessageID: "m0", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"a":1}`))}}
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(empty)); !errors.As(err, &ie) || ie.Skill != "chat::strict" ||
		len(ie.Problems) != 1 || ie.Problems[0].Path != "/text" {
		t.Fatalf("input against the schema: %v %+v", err, ie)
	}
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(textMsg("m1", "hi")))
	if err != nil || task.Status.State != a2a.StateInputRequired || statusText(task) != "Say yes" {
		t.Fatalf("first: %v %+v", err, task)
	}
	m := textMsg("m2", "yes")
	m.TaskID = task.ID
	done, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m))
	if err != nil || done.Status.State != a2a.StateCompleted || b.calls.Load() != 2 {
		t.Fatalf("follow-up: %v %+v, calls %d", err, done, b.calls.Load())
	}
}

// A default skill the caller may not see leaves today's guidance.
func TestDefaultSkillHiddenFromCallerGuides(t *testing.T) {
	partner := fn(t, "chat::partner", echoBackend(), func(f *functions.Function) {
		f.Metadata = map[string]any{"a2a.expose": true, "a2a.tier": "partner"}
	})
	e := newEnv(t, tasks.Config{}, partner, fn(t, "demo::echo", echoBackend()))
	e.cat.Default = "chat::partner"
	task, _, err := e.svc.Send(ctx, tasks.Caller{ID: "g", Tiers: []string{"gold"}}, send(textMsg("m1", "hello")))
	if err != nil || task.Status.State != a2a.StateInputRequired || len(task.Artifacts) != 0 {
		t.Fatalf("caller of another tier: %v %+v", err, task)
	}
	task, _, err = e.svc.Send(ctx, tasks.Caller{ID: "p", Tiers: []string{"partner"}}, send(textMsg("m1", "hello")))
	if err != nil || task.Status.State != a2a.StateCompleted {
		t.Fatalf("partner: %v %+v", err, task)
	}
}
