package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// The contracts of the non-terminal index and of retention.
var expiryContracts = []contract{
	{"ActiveIndexHoldsTheNonTerminalTasks", testActiveIndex},
	{"ExpireDeletesEverythingOfOldTerminalTasks", testExpireDeletesEverything},
	{"ExpireWithACutoffBefore1970", testExpireWithACutoffBefore1970},
}

// testActiveIndex: Active returns every task that is not terminal, with
// its input, and ActiveStates counts them; a task leaves both when it
// ends, and both read the same after a reopen.
func testActiveIndex(t *testing.T, sub *Subject) {
	s := sub.Store
	now := time.Now()
	for i, st := range []a2a.TaskState{a2a.StateSubmitted, a2a.StateWorking, a2a.StateInputRequired, a2a.StateAuthRequired, a2a.StateCompleted, a2a.StateRejected} {
		r := NewRecord(fmt.Sprintf("t%d", i), []string{"alice", "bob"}[i%2], st, now)
		r.Input = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
		Create(t, s, r)
	}
	MustUpdate(t, s, "alice", "t0", Flip(a2a.StateWorking))
	MustUpdate(t, s, "bob", "t1", Flip(a2a.StateFailed))
	MustUpdate(t, s, "alice", "t2", Flip(a2a.StateWorking))
	MustUpdate(t, s, "alice", "t2", Flip(a2a.StateInputRequired))
	want := map[a2a.TaskState]int{a2a.StateWorking: 1, a2a.StateInputRequired: 1, a2a.StateAuthRequired: 1}
	for round := range 2 {
		if round == 1 {
			sub = sub.Reopen(t)
			s = sub.Store
		}
		active, err := s.Active(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range active {
			ids = append(ids, r.Task.ID)
			if string(r.Input) != fmt.Sprintf(`{"n":%s}`, r.Task.ID[1:]) || r.State().Terminal() {
				t.Errorf("round %d: active %s: %s, input %s", round, r.Task.ID, r.State(), r.Input)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"t0", "t2", "t3"}) {
			t.Errorf("round %d: Active = %v, want [t0 t2 t3]", round, ids)
		}
		states, err := s.ActiveStates(ctx)
		if diff := cmp.Diff(want, states); err != nil || diff != "" {
			t.Errorf("round %d: ActiveStates: %v (-want +got):\n%s", round, err, diff)
		}
	}
}

func testExpireDeletesEverything(t *testing.T, sub *Subject) {
	s := sub.Store
	old := time.Now().Add(-48 * time.Hour)
	recent := time.Now()
	for i, c := range []struct {
		st a2a.TaskState
		at time.Time
	}{
		{a2a.StateCompleted, old}, {a2a.StateFailed, old}, {a2a.StateCanceled, old},
		{a2a.StateWorking, old},       // not terminal: kept
		{a2a.StateInputRequired, old}, // not terminal: kept
		{a2a.StateCompleted, recent},  // too young: kept
	} {
		id := fmt.Sprintf("t%d", i)
		rec := NewRecord(id, "o", c.st, c.at)
		rec.Task.History = []a2a.Message{UserMessage("m"+id, "hi")}
		rec.Task.Artifacts = []a2a.Artifact{{ArtifactID: "a" + id, Parts: []a2a.Part{a2a.TextPart("out")}}}
		rec.Input = json.RawMessage(`{}`)
		if _, _, err := s.Create(ctx, Key("o", "m"+id, id), rec, []tasks.Event{StatusEvent(c.st)}); err != nil {
			t.Fatal(err)
		}
	}
	cutoff := time.Now().Add(-24 * time.Hour)
	if n, err := s.Expire(ctx, cutoff, 2); err != nil || n != 2 {
		t.Fatalf("Expire(limit 2) = %d, %v; want 2", n, err)
	}
	if n, err := s.Expire(ctx, cutoff, 10); err != nil || n != 1 {
		t.Fatalf("second Expire = %d, %v; want 1", n, err)
	}
	for i := range 6 {
		id := fmt.Sprintf("t%d", i)
		_, err := s.Get(ctx, "o", id, tasks.Whole)
		gone := errors.Is(err, tasks.ErrNotFound)
		if want := i < 3; gone != want {
			t.Errorf("task %s gone = %v, want %v", id, gone, want)
		}
		evs, _ := s.Events(ctx, id, 0)
		_, _, inspected := sub.inspector().Task(ctx, id)
		if gone && (len(evs) != 0 || !errors.Is(inspected, tasks.ErrNotFound)) {
			t.Errorf("task %s: %d events left behind, the inspector says %v", id, len(evs), inspected)
		}
	}
	// Its idempotency key went with it: the message id is free again.
	if _, err := s.Lookup(ctx, Key("o", "mt0", "t0")); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("Lookup of an expired task's message = %v, want ErrNotFound", err)
	}
	if _, created, err := s.Create(ctx, Key("o", "mt0", "new"), NewRecord("t0b", "o", a2a.StateSubmitted, recent), nil); err != nil || !created {
		t.Fatalf("reusing an expired task's messageId: %v, created %v", err, created)
	}
	if got := ListIDs(t, s, "o", tasks.ListFilter{}, 10); len(got) != 4 {
		t.Fatalf("listed after expiry: %v, want 4 tasks", got)
	}
	sub.check(t)
}

// testExpireWithACutoffBefore1970 is a retention longer than the time
// since 1970 ("keep forever"): it must delete nothing.
func testExpireWithACutoffBefore1970(t *testing.T, sub *Subject) {
	s := sub.Store
	Create(t, s, NewRecord("t", "o", a2a.StateCompleted, time.Now()))
	for _, cutoff := range []time.Time{time.Now().Add(-100 * 365 * 24 * time.Hour), {}, time.Unix(-1, 0)} {
		n, err := s.Expire(ctx, cutoff, 10)
		if err != nil || n != 0 {
			t.Fatalf("Expire(%s) deleted %d (%v), want 0", cutoff, n, err)
		}
	}
}
