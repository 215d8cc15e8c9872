package tasks

import (
	"testing"

	"github.com/a2ad/a2ad/a2a"
)

// TestRecoveredCallFromHistory: the call recovery runs again is the one
// the last user message asked for, with its key, and its attempt counts
// the resubmissions after that message; an earlier call of the task (one
// that asked a question) has another key.
func TestRecoveredCallFromHistory(t *testing.T) {
	msg := func(id string, role a2a.Role) a2a.Message { return a2a.Message{MessageID: id, Role: role} }
	rec := func(h ...a2a.Message) *Record {
		return &Record{Task: a2a.Task{ID: "task-1", ContextID: "ctx-1", History: h}, Owner: "acme"}
	}
	first := callOf(rec(), "m1", 1)
	second := callOf(rec(), "m2", 1)
	if first.IdempotencyKey == second.IdempotencyKey || len(first.IdempotencyKey) != 32 {
		t.Fatalf("keys of two calls: %q, %q", first.IdempotencyKey, second.IdempotencyKey)
	}
	if other := callOf(&Record{Task: a2a.Task{ID: "task-2"}}, "m1", 1); other.IdempotencyKey == first.IdempotencyKey {
		t.Fatal("two tasks' calls of one message id share a key")
	}
	for _, tc := range []struct {
		name    string
		rec     *Record
		key     string
		attempt int
	}{
		{"first resubmission", rec(msg("m1", a2a.RoleUser), msg("r1", a2a.RoleAgent)), first.IdempotencyKey, 2},
		{"second resubmission", rec(msg("m1", a2a.RoleUser), msg("r1", a2a.RoleAgent), msg("r2", a2a.RoleAgent)), first.IdempotencyKey, 3},
		{"the second call's first resubmission", rec(msg("m1", a2a.RoleUser), msg("q", a2a.RoleAgent),
			msg("m2", a2a.RoleUser), msg("r1", a2a.RoleAgent)), second.IdempotencyKey, 2},
	} {
		got := recoveredCall(tc.rec)
		if got.IdempotencyKey != tc.key || got.Attempt != tc.attempt || got.TaskID != "task-1" || got.ContextID != "ctx-1" || got.Caller != "acme" {
			t.Errorf("%s: recoveredCall = %+v, want key %q, attempt %d", tc.name, got, tc.key, tc.attempt)
		}
	}
}
