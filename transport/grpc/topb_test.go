package grpc

import (
	"encoding/json"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/proto"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

// richTask has every member a task can carry.
func richTask() *a2a.Task {
	meta := map[string]any{"n": 1.5, "s": "x", "b": true, "nil": nil, "list": []any{1.0, "two", map[string]any{"k": []any{}}}, "obj": map[string]any{"a": map[string]any{}}}
	status := &a2a.Message{MessageID: "s1", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("done")}, Metadata: map[string]any{"a2ad.failure": "invoke_error"}}
	return &a2a.Task{ID: "t1", ContextID: "c1", Metadata: meta,
		Status: a2a.TaskStatus{State: a2a.StateInputRequired, Message: status, Timestamp: "2026-11-24T06:06:41.518Z"},
		Artifacts: []a2a.Artifact{{ArtifactID: "a1", Name: "n", Description: "d", Extensions: []string{"urn:x"}, Metadata: meta,
			Parts: []a2a.Part{
				{Kind: a2a.PartData, Data: json.RawMessage(`{"x": [1, 2.5, "3", null, {"y": true}], "big": 12345678901234567890}`)},
				{Kind: a2a.PartData},
				{Kind: a2a.PartFile, File: &a2a.FileContent{Bytes: "aGVsbG8=", MimeType: "text/plain", Name: "h.txt"}, Metadata: meta},
				{Kind: a2a.PartFile, File: &a2a.FileContent{URI: "https://x.example/f", MimeType: "image/png"}},
			}}},
		History: []a2a.Message{
			{MessageID: "m1", ContextID: "c1", TaskID: "t1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("héllo \u2028")},
				ReferenceTaskIDs: []string{"t0"}, Extensions: []string{"urn:e"}, Metadata: map[string]any{"k": "v"}},
			*status,
		}}
}

// TestPBMatchesProtoJSON: the direct writers give what the 1.0 encoder's
// JSON gives through protojson, for tasks and for each kind of event.
func TestPBMatchesProtoJSON(t *testing.T) {
	task := richTask()
	tasks := []*a2a.Task{task, {ID: "t2", ContextID: "c2", Status: a2a.TaskStatus{State: a2a.StateSubmitted}}}
	for _, tk := range tasks {
		got, err := pbTask(tk)
		if err != nil {
			t.Fatal(err)
		}
		want := &a2apb.Task{}
		if err := result(v1.TaskResult{Task: tk}, want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("pbTask(%s):\n got %v\nwant %v", tk.ID, got, want)
		}
	}
	events := []*v1.StreamResponse{
		{Task: task},
		{StatusUpdate: &a2a.StatusUpdateEvent{TaskID: "t1", ContextID: "c1", Status: task.Status, Metadata: map[string]any{"x": "y"}}},
		{ArtifactUpdate: &a2a.ArtifactUpdateEvent{TaskID: "t1", ContextID: "c1", Artifact: task.Artifacts[0], Append: true, LastChunk: true}},
	}
	for i, e := range events {
		got, err := pbEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		want := &a2apb.StreamResponse{}
		if err := result(e, want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("pbEvent #%d:\n got %v\nwant %v", i, got, want)
		}
	}
	// What the encoder refuses, the writers refuse.
	for _, bad := range []*a2a.Task{
		{ID: "x", Status: a2a.TaskStatus{State: "paused"}},
		{ID: "x", Status: a2a.TaskStatus{State: a2a.StateWorking}, History: []a2a.Message{{Role: "robot"}}},
		{ID: "x", Status: a2a.TaskStatus{State: a2a.StateWorking}, Artifacts: []a2a.Artifact{{Parts: []a2a.Part{{Kind: a2a.PartFile, File: &a2a.FileContent{}}}}}},
	} {
		if _, err := pbTask(bad); err == nil {
			t.Errorf("pbTask(%+v): no error", bad)
		}
		if _, err := v1.AppendTask(nil, bad); err == nil {
			t.Errorf("v1.AppendTask(%+v): no error", bad)
		}
	}
}

// BenchmarkPBTask is the direct crossing of a send's answer, against
// BenchmarkResult's ProtoJSON one.
func BenchmarkPBTask(b *testing.B) {
	task := echoTask()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pbTask(task); err != nil {
			b.Fatal(err)
		}
	}
}
