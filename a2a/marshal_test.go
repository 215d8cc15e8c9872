package a2a_test

import (
	"encoding/json"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
)

// TestMarshalJSONIsV03: encoding/json writes the core types as the 0.3
// encoder does, values and pointers alike, and the 0.3 part shape reads
// back.
func TestMarshalJSONIsV03(t *testing.T) {
	msg := a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("x"), a2a.DataPart(json.RawMessage(`{"a":1}`))}}
	art := a2a.Artifact{ArtifactID: "a", Parts: msg.Parts}
	task := a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking, Message: &msg},
		History: []a2a.Message{msg}, Artifacts: []a2a.Artifact{art}}
	status := a2a.StatusUpdateEvent{TaskID: "t", ContextID: "c", Status: task.Status, Final: true}
	update := a2a.ArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: art, LastChunk: true}
	check := func(name string, v, p any, enc func() ([]byte, error)) {
		want, err := enc()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, x := range []any{v, p} {
			if got, err := json.Marshal(x); err != nil || string(got) != string(want) {
				t.Errorf("json.Marshal(%s %T) = %s, %v; want %s", name, x, got, err, want)
			}
		}
	}
	check("part", msg.Parts[0], &msg.Parts[0], func() ([]byte, error) { return v03.AppendPart(nil, &msg.Parts[0]) })
	check("message", msg, &msg, func() ([]byte, error) { return v03.AppendMessage(nil, &msg) })
	check("status", task.Status, &task.Status, func() ([]byte, error) { return v03.AppendStatus(nil, &task.Status) })
	check("artifact", art, &art, func() ([]byte, error) { return v03.AppendArtifact(nil, &art) })
	check("task", task, &task, func() ([]byte, error) { return v03.AppendTask(nil, &task) })
	check("status update", status, &status, func() ([]byte, error) { return v03.AppendStatusUpdate(nil, &status) })
	check("artifact update", update, &update, func() ([]byte, error) { return v03.AppendArtifactUpdate(nil, &update) })

	b, _ := json.Marshal(task)
	var back a2a.Task
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(back); string(again) != string(b) {
		t.Errorf("round trip = %s, want %s", again, b)
	}
}
