package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// testTaskIDsAreStoredOnce: a task's context id (up to a2a.MaxIDBytes,
// chosen by the caller) and id are stored with the task, not again with
// each message and event (record v2): twenty progress events, each with a
// status message that carries both, add less than one context id apiece
// to what the owner stores. Every read gives each message its ids back
// (Get, Events, after a reopen too), and a message whose ids are not the
// task's keeps its own.
func testTaskIDsAreStoredOnce(t *testing.T, sub *Subject) {
	s := sub.Store
	r := NewRecord("t1", "o", a2a.StateWorking, time.Now())
	r.Task.ContextID = strings.Repeat("c", a2a.MaxIDBytes)
	first := UserMessage("m0", "go")
	first.TaskID, first.ContextID = r.Task.ID, r.Task.ContextID
	other := UserMessage("m1", "elsewhere")
	other.ContextID, other.TaskID = "another context", "another task"
	r.Task.History = []a2a.Message{first, other}
	Create(t, s, r)
	used := func() int64 {
		probe := quotaKey("o", "probe", tasks.Quota{Bytes: 1})
		_, _, _, err := s.Update(ctx, "o", "t1", &probe, tasks.Head, message(10))
		return refused(t, "a probe under a 1-byte quota", err).Used
	}
	before := used()
	const n = 20
	var want []a2a.Message // the status messages, as reads give them back
	for i := range n {
		msg := a2a.Message{MessageID: fmt.Sprintf("p%02d", i), TaskID: r.Task.ID, ContextID: r.Task.ContextID,
			Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("step")}}
		want = append(want, msg)
		if _, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Head, func(rec *tasks.Record) ([]tasks.Event, error) {
			rec.Task.Status = a2a.TaskStatus{State: a2a.StateWorking, Message: &msg}
			return []tasks.Event{{Status: &a2a.TaskStatus{State: a2a.StateWorking, Message: &msg}}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	grew := (used() - before) / n
	t.Logf("each progress event took %d bytes", grew)
	if grew >= a2a.MaxIDBytes {
		t.Errorf("each progress event took %d bytes: its %d-byte context id is stored with it", grew, a2a.MaxIDBytes)
	}
	check := func(s Store, when string) {
		got, err := s.Get(ctx, "o", "t1", tasks.Whole)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]a2a.Message{first, other}, got.Task.History); diff != "" {
			t.Errorf("%s: history (-want +got):\n%s", when, diff)
		}
		if diff := cmp.Diff(&want[n-1], got.Task.Status.Message); diff != "" {
			t.Errorf("%s: status message (-want +got):\n%s", when, diff)
		}
		evs, err := s.Events(ctx, "t1", 1)
		if err != nil || len(evs) != n {
			t.Fatalf("%s: Events = %d events, %v; want %d", when, len(evs), err, n)
		}
		for i, e := range evs {
			if diff := cmp.Diff(&want[i], e.Status.Message); diff != "" {
				t.Errorf("%s: event %d's message (-want +got):\n%s", when, e.Seq, diff)
			}
		}
	}
	check(s, "read")
	check(sub.Reopen(t).Store, "after a reopen")
}
