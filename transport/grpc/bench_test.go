package grpc

import (
	"encoding/json"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

// echoTask is the task of a completed echo, as a send answers it.
func echoTask() *a2a.Task {
	msg := a2a.Message{MessageID: "m1", ContextID: "c1", TaskID: "t1", Role: a2a.RoleUser,
		Parts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`{"skill":"demo::echo","input":{"message":"hello"}}`)}}}
	return &a2a.Task{ID: "01a20c29-e36e-7983-94cb-623eda66ea21", ContextID: "01a20c29-e36e-7fbe-8b36-2e530636c652",
		Status:    a2a.TaskStatus{State: a2a.StateCompleted, Timestamp: "2026-11-24T06:06:41.518Z"},
		Artifacts: []a2a.Artifact{{ArtifactID: "a1", Name: "demo::echo", Parts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`{"message":"hello"}`)}}}},
		History:   []a2a.Message{msg}}
}

// BenchmarkResult is the crossing of a send's answer to the generated
// type through ProtoJSON.
func BenchmarkResult(b *testing.B) {
	task := echoTask()
	b.ReportAllocs()
	for b.Loop() {
		out := &a2apb.SendMessageResponse{}
		if err := result(&v1.StreamResponse{Task: task}, out); err != nil {
			b.Fatal(err)
		}
	}
}
