package v1_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

// spillTo is an a2a.Spill that writes out to w what reaches min bytes,
// and counts its writes.
func spillTo(w *bytes.Buffer, min int, writes *int) a2a.Spill {
	return func(dst []byte) []byte {
		if len(dst) < min {
			return dst
		}
		w.Write(dst)
		*writes++
		return dst[:0]
	}
}

// largeTask is fullTask with many messages and artifacts of large parts.
func largeTask(id string) a2a.Task {
	t := fullTask()
	t.ID = id
	big := strings.Repeat("x", 10_000)
	for i := range 20 {
		m := fullMessage()
		m.Parts = append(m.Parts, a2a.TextPart(big))
		t.History = append(t.History, m)
		t.Artifacts = append(t.Artifacts, a2a.Artifact{ArtifactID: "big", Parts: []a2a.Part{a2a.TextPart(big), a2a.TextPart(strings.Repeat("y", i))}})
	}
	return t
}

// TestSpillingWritesTheSameBytes: a task, SendMessage's task and a page of
// tasks written while they are made (the spill taking what reaches 0, 1,
// 4 KiB, 64 KiB and 16 MiB) are, written out and then the rest, byte for
// byte what AppendJSON makes whole, after the same prefix, in writes of
// about the bound each, and none when the answer is below it.
func TestSpillingWritesTheSameBytes(t *testing.T) {
	a, b := largeTask("t-1"), largeTask("t-2")
	results := map[string]v1.Spilling{
		"task":           v1.TaskResult{Task: &a},
		"stream task":    &v1.StreamResponse{Task: &a},
		"task list":      &v1.TaskList[a2a.Task]{Tasks: []a2a.Task{a, b}, NextPageToken: "n", PageSize: 2, TotalSize: 9},
		"empty list":     &v1.TaskList[a2a.Task]{},
		"small task":     v1.TaskResult{Task: &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateSubmitted}}},
		"stream message": &v1.StreamResponse{Message: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("hi")}}},
	}
	for name, r := range results {
		whole, err := r.AppendJSON([]byte("prefix:"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, min := range []int{0, 1, 4 << 10, 64 << 10, 16 << 20} {
			var w bytes.Buffer
			writes := 0
			rest, err := r.AppendJSONSpilling([]byte("prefix:"), spillTo(&w, min, &writes))
			if err != nil {
				t.Fatalf("%s, %d: %v", name, min, err)
			}
			w.Write(rest)
			if !bytes.Equal(w.Bytes(), whole) {
				t.Errorf("%s, spilling from %d bytes: %d bytes differ from the whole answer's %d", name, min, w.Len(), len(whole))
			}
			if len(whole) < min && writes != 0 {
				t.Errorf("%s: %d writes of an answer of %d bytes, below %d", name, writes, len(whole), min)
			}
			// Each write is at least min bytes, and at most min and a part
			// (10 KB and its frame) more.
			if lo, hi := len(whole)/(min+11_000)-1, len(whole)/max(min, 1); min >= 4<<10 && len(whole) > min && (writes < lo || writes > hi) {
				t.Errorf("%s of %d bytes spilled from %d bytes in %d writes, want %d-%d", name, len(whole), min, writes, lo, hi)
			}
		}
	}
}

// TestSpillingErrors: a value the 1.0 JSON cannot express is the same
// error spilled as whole.
func TestSpillingErrors(t *testing.T) {
	bad := largeTask("t-bad")
	bad.Artifacts = append(bad.Artifacts, a2a.Artifact{Parts: []a2a.Part{{}}})
	for name, r := range map[string]v1.Spilling{
		"task":      v1.TaskResult{Task: &bad},
		"task list": &v1.TaskList[*a2a.Task]{Tasks: []*a2a.Task{&bad}},
		"nil task":  &v1.TaskList[*a2a.Task]{Tasks: []*a2a.Task{nil}},
		"state":     &v1.StreamResponse{Task: &a2a.Task{Status: a2a.TaskStatus{State: "x"}}},
	} {
		_, werr := r.AppendJSON(nil)
		var w bytes.Buffer
		n := 0
		_, serr := r.AppendJSONSpilling(nil, spillTo(&w, 1, &n))
		if werr == nil || serr == nil || werr.Error() != serr.Error() {
			t.Errorf("%s: spilled error %v, whole %v", name, serr, werr)
		}
	}
}
