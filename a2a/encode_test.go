package a2a_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/a2ad/a2ad/a2a"
)

// TestAppendJSONMatchesReflection encodes a task with every field set both
// ways: through the hand-written encoder and through encoding/json on
// plain mirror types.
func TestAppendJSONMatchesReflection(t *testing.T) {
	msg := a2a.Message{
		MessageID: "m", ContextID: "c", TaskID: "t", Role: a2a.RoleUser,
		Parts: []a2a.Part{
			a2a.TextPart("hi <there>"),
			{Kind: a2a.PartData, Data: json.RawMessage(`{ "a" : [1, 2] }`), Metadata: map[string]any{"k": "v"}},
			{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "f.txt", MimeType: "text/plain", URI: "https://x/f"}},
		},
		ReferenceTaskIDs: []string{"r1"}, Extensions: []string{"urn:x"}, Metadata: map[string]any{"n": 1.5},
	}
	task := a2a.Task{
		ID: "t", ContextID: "c",
		Status:    a2a.TaskStatus{State: a2a.StateCompleted, Message: &msg, Timestamp: "2026-11-22T00:00:00.000Z"},
		History:   []a2a.Message{msg, msg},
		Artifacts: []a2a.Artifact{{ArtifactID: "a", Name: "n", Description: "d", Parts: msg.Parts, Metadata: map[string]any{"x": true}}},
		Metadata:  map[string]any{"m": []any{"v"}},
	}
	got, err := task.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	var back a2a.Task
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := back.AppendJSON(nil)
	if !bytes.Equal(got, again) {
		t.Fatalf("round trip changed the task:\n%s\n%s", got, again)
	}
	if !json.Valid(got) || !bytes.Contains(got, []byte(`"data":{"a":[1,2]}`)) || !bytes.Contains(got, []byte(`hi \u003cthere\u003e`)) {
		t.Fatalf("encoding: %s", got)
	}
	// An invalid data part is an error, not broken JSON.
	bad := a2a.Task{ID: "t", Artifacts: []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`{`)}}}}}
	if _, err := bad.AppendJSON(nil); err == nil {
		t.Fatal("invalid raw data encoded without error")
	}
}
