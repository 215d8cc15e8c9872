package v03_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
)

// spilledTask is a task of many messages and artifacts with large parts
// of every kind.
func spilledTask(id string) *a2a.Task {
	big := strings.Repeat("x", 10_000)
	t := &a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted,
		Message: &a2a.Message{MessageID: "s", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(big)}}}}
	for i := range 20 {
		t.History = append(t.History, a2a.Message{MessageID: "m", ContextID: "c", Role: a2a.RoleUser, Parts: []a2a.Part{
			a2a.TextPart(big), a2a.DataPart(json.RawMessage(`{"n":1}`)),
			{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "a.txt", MimeType: "text/plain", Bytes: "aGk="}},
		}})
		t.Artifacts = append(t.Artifacts, a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart(big), a2a.TextPart(strings.Repeat("y", i))}})
	}
	return t
}

// TestSpillingWritesTheSameBytes: a task and a tasks/list page written
// while they are made (what reaches 0, 4 KiB or 64 KiB written out each
// time) are, written out and then the rest, byte for byte what the whole
// encoders make after the same prefix; an answer below the bound is not
// written out at all, one with parts above it is.
func TestSpillingWritesTheSameBytes(t *testing.T) {
	a, b := spilledTask("t-1"), spilledTask("t-2")
	page := &a2a.ListTasksResult{Tasks: []a2a.Task{*a, *b}, TotalSize: 7, PageSize: 2, NextPageToken: "n"}
	type enc struct {
		whole func([]byte) ([]byte, error)
		spill func([]byte, a2a.Spill) ([]byte, error)
	}
	for name, e := range map[string]enc{
		"task": {func(d []byte) ([]byte, error) { return v03.AppendTask(d, a) },
			func(d []byte, s a2a.Spill) ([]byte, error) { return v03.AppendTaskSpilling(d, a, s) }},
		"list": {func(d []byte) ([]byte, error) { return v03.AppendListTasksResult(d, page) },
			func(d []byte, s a2a.Spill) ([]byte, error) { return v03.AppendListTasksResultSpilling(d, page, s) }},
		"empty list": {func(d []byte) ([]byte, error) { return v03.AppendListTasksResult(d, &a2a.ListTasksResult{}) },
			func(d []byte, s a2a.Spill) ([]byte, error) {
				return v03.AppendListTasksResultSpilling(d, &a2a.ListTasksResult{}, s)
			}},
	} {
		whole, err := e.whole([]byte("prefix:"))
		if err != nil {
			t.Fatal(err)
		}
		for _, min := range []int{0, 4 << 10, 64 << 10, 16 << 20} {
			var w bytes.Buffer
			writes := 0
			rest, err := e.spill([]byte("prefix:"), func(dst []byte) []byte {
				if len(dst) < min {
					return dst
				}
				w.Write(dst)
				writes++
				return dst[:0]
			})
			if err != nil {
				t.Fatalf("%s, %d: %v", name, min, err)
			}
			w.Write(rest)
			if !bytes.Equal(w.Bytes(), whole) {
				t.Errorf("%s, spilling from %d bytes: %d bytes differ from the whole answer's %d", name, min, w.Len(), len(whole))
			}
			if len(whole) < min && writes != 0 || name != "empty list" && len(whole) >= min && writes == 0 {
				t.Errorf("%s: %d writes of an answer of %d bytes, spilling from %d", name, writes, len(whole), min)
			}
		}
	}
}
