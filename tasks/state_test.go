package tasks

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

var (
	allStates = []a2a.TaskState{
		stateNew, a2a.StateSubmitted, a2a.StateWorking, a2a.StateInputRequired, a2a.StateAuthRequired,
		a2a.StateCompleted, a2a.StateCanceled, a2a.StateFailed, a2a.StateRejected, a2a.StateUnknown,
	}
	allTriggers = []trigger{onMessage, onStart, onProgress, onResult, onCancel, onRecover}
)

// errNoMove stands for the error of a move the table has no target for:
// a bug of the caller, not a refusal the service answers with.
var errNoMove = errors.New("no such move")

// wantTransition spells the rules of the state machine one by one,
// independently of the table.
func wantTransition(from, to a2a.TaskState, on trigger) error {
	in := func(s a2a.TaskState, set ...a2a.TaskState) bool { return slices.Contains(set, s) }
	target := func(ok bool) error {
		if ok {
			return nil
		}
		return errNoMove
	}
	switch {
	// Terminal is final.
	case from.Terminal() && on == onCancel:
		return ErrNotCancelable
	case from.Terminal() && on == onMessage:
		return ErrTaskTerminal
	case from.Terminal():
		return errSkip // a result after a cancel is discarded, and so on
	// Cancel wins over every other state.
	case on == onCancel:
		return target(to == a2a.StateCanceled)
	// Input-required (and auth-required) continues with a message, and so
	// does a task not stored yet; any other takes none.
	case on == onMessage && in(from, stateNew, a2a.StateInputRequired, a2a.StateAuthRequired):
		return target(in(to, a2a.StateSubmitted, a2a.StateRejected, a2a.StateInputRequired))
	case on == onMessage:
		return ErrTaskBusy
	case on == onStart && from == a2a.StateSubmitted:
		return target(to == a2a.StateWorking)
	case on == onProgress && from == a2a.StateWorking:
		return target(in(to, a2a.StateWorking, a2a.StateFailed))
	case on == onResult && from == a2a.StateWorking:
		return target(in(to, a2a.StateCompleted, a2a.StateFailed, a2a.StateInputRequired))
	case on == onRecover && in(from, a2a.StateSubmitted, a2a.StateWorking):
		return target(in(to, a2a.StateSubmitted, a2a.StateFailed))
	}
	return errSkip // a step of a call or of recovery that the task moved past
}

// TestTransitionTable covers every pair of states under every trigger.
func TestTransitionTable(t *testing.T) {
	n := 0
	for _, on := range allTriggers {
		for _, from := range allStates {
			for _, to := range allStates {
				n++
				got, want := transition(from, to, on), wantTransition(from, to, on)
				switch {
				case want == errNoMove:
					wantMsg := fmt.Sprintf("tasks: no %s leads from %q to %q", on, from, to)
					if got == nil || got.Error() != wantMsg {
						t.Errorf("transition(%q, %q, %s) = %v, want %q", from, to, on, got, wantMsg)
					}
				case got != want:
					t.Errorf("transition(%q, %q, %s) = %v, want %v", from, to, on, got, want)
				}
			}
		}
	}
	if n != 6*10*10 {
		t.Fatalf("checked %d moves, want %d", n, 6*10*10)
	}
}

// TestTransitionRules names the rules the service relies on.
func TestTransitionRules(t *testing.T) {
	for _, c := range []struct {
		rule     string
		from, to a2a.TaskState
		on       trigger
		want     error
	}{
		{"cancel wins over a running call", a2a.StateWorking, a2a.StateCanceled, onCancel, nil},
		{"cancel wins over a queued call", a2a.StateSubmitted, a2a.StateCanceled, onCancel, nil},
		{"cancel of a waiting task", a2a.StateInputRequired, a2a.StateCanceled, onCancel, nil},
		{"a result after a cancel is discarded", a2a.StateCanceled, a2a.StateCompleted, onResult, errSkip},
		{"progress after a cancel is discarded", a2a.StateCanceled, a2a.StateWorking, onProgress, errSkip},
		{"a start after a cancel is skipped", a2a.StateCanceled, a2a.StateWorking, onStart, errSkip},
		{"terminal is final: no second cancel", a2a.StateCompleted, a2a.StateCanceled, onCancel, ErrNotCancelable},
		{"terminal is final: no message", a2a.StateFailed, a2a.StateSubmitted, onMessage, ErrTaskTerminal},
		{"terminal is final: no recovery", a2a.StateRejected, a2a.StateFailed, onRecover, errSkip},
		{"input-required continues with a call", a2a.StateInputRequired, a2a.StateSubmitted, onMessage, nil},
		{"input-required continues without a skill", a2a.StateInputRequired, a2a.StateInputRequired, onMessage, nil},
		{"auth-required continues", a2a.StateAuthRequired, a2a.StateSubmitted, onMessage, nil},
		{"a running task takes no message", a2a.StateWorking, a2a.StateSubmitted, onMessage, ErrTaskBusy},
		{"a queued task takes no message", a2a.StateSubmitted, a2a.StateSubmitted, onMessage, ErrTaskBusy},
		{"a call that asks for input", a2a.StateWorking, a2a.StateInputRequired, onResult, nil},
		{"a chunk past the limit fails the task", a2a.StateWorking, a2a.StateFailed, onProgress, nil},
		{"a restart resubmits a running call", a2a.StateWorking, a2a.StateSubmitted, onRecover, nil},
		{"a restart leaves a waiting task alone", a2a.StateInputRequired, a2a.StateFailed, onRecover, errSkip},
	} {
		if got := transition(c.from, c.to, c.on); got != c.want {
			t.Errorf("%s: transition(%q, %q, %s) = %v, want %v", c.rule, c.from, c.to, c.on, got, c.want)
		}
	}
}

func TestTransitionUnknownTrigger(t *testing.T) {
	err := transition(a2a.StateWorking, a2a.StateCompleted, trigger(99))
	if err == nil || err.Error() != "tasks: unknown trigger(99)" {
		t.Fatalf("transition(working, completed, trigger(99)) = %v, want tasks: unknown trigger(99)", err)
	}
}

func TestAdvance(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	newRec := func(st a2a.TaskState) *Record {
		return &Record{
			Task: a2a.Task{
				ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: st},
				History: []a2a.Message{{MessageID: "m1", Role: a2a.RoleUser}},
			},
			UpdatedAt: t0,
		}
	}
	msg := func(text string) *a2a.Message {
		return &a2a.Message{MessageID: "a1", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
	}

	t.Run("an agent message goes into the history", func(t *testing.T) {
		r := newRec(a2a.StateWorking)
		st := a2a.TaskStatus{State: a2a.StateFailed, Message: msg("boom")}
		if err := advance(r, onResult, st, t1, ""); err != nil {
			t.Fatalf("advance(working, failed, result) = %v, want nil", err)
		}
		if r.State() != a2a.StateFailed || !r.UpdatedAt.Equal(t1) {
			t.Fatalf("state %q updated %v, want failed at %v", r.State(), r.UpdatedAt, t1)
		}
		if len(r.Task.History) != 2 || r.Task.History[1].MessageID != "a1" || r.Task.History[1].ContextID != "c1" {
			t.Fatalf("history = %+v, want the user message then a1 in context c1", r.Task.History)
		}
		if r.Task.Status.Message.ContextID != "c1" {
			t.Fatalf("status message context = %q, want c1", r.Task.Status.Message.ContextID)
		}
	})
	t.Run("a working note does not", func(t *testing.T) {
		r := newRec(a2a.StateWorking)
		st := a2a.TaskStatus{State: a2a.StateWorking, Message: msg("halfway")}
		if err := advance(r, onProgress, st, t1, ""); err != nil {
			t.Fatalf("advance(working, working, progress) = %v, want nil", err)
		}
		if len(r.Task.History) != 1 || r.Task.Status.Message == nil || r.Task.Status.Message.ContextID != "c1" {
			t.Fatalf("history %d messages, status %+v; want 1 and the note in context c1", len(r.Task.History), r.Task.Status)
		}
	})
	t.Run("a refusal leaves the record as it was", func(t *testing.T) {
		r := newRec(a2a.StateCanceled)
		st := a2a.TaskStatus{State: a2a.StateCompleted, Message: msg("late")}
		if err := advance(r, onResult, st, t1, ""); err != errSkip {
			t.Fatalf("advance(canceled, completed, result) = %v, want %v", err, errSkip)
		}
		if r.State() != a2a.StateCanceled || len(r.Task.History) != 1 || !r.UpdatedAt.Equal(t0) {
			t.Fatalf("record changed: state %q, %d messages, updated %v", r.State(), len(r.Task.History), r.UpdatedAt)
		}
	})
}
