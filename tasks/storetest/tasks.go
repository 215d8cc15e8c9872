package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// The contracts of a task's life: Create, Lookup, Get, Update, Events
// and PushConfigs, one task at a time.

func testCreateGetAndIdempotency(t *testing.T, sub *Subject) {
	s := sub.Store
	now := time.Now()
	rec, created, err := s.Create(ctx, Key("alice", "m1", "a"), NewRecord("t1", "alice", a2a.StateSubmitted, now),
		[]tasks.Event{StatusEvent(a2a.StateSubmitted)})
	if err != nil || !created {
		t.Fatalf("Create = %v, created %v", err, created)
	}
	if rec.Seq != 1 || len(rec.MessageIDs) != 1 || rec.MessageIDs[0] != "m1" {
		t.Fatalf("created record: seq %d, messageIds %v", rec.Seq, rec.MessageIDs)
	}

	// The same key returns the same task and writes nothing.
	again, created, err := s.Create(ctx, Key("alice", "m1", "a"), NewRecord("t2", "alice", a2a.StateSubmitted, now), nil)
	if err != nil || created || again.Task.ID != "t1" {
		t.Fatalf("duplicate Create = %v, created %v, task %s; want t1, not created", err, created, again.Task.ID)
	}
	if _, err := s.Get(ctx, "alice", "t2", tasks.Whole); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("duplicate Create stored t2: %v", err)
	}
	// The same id with another message is refused.
	if _, _, err := s.Create(ctx, Key("alice", "m1", "b"), NewRecord("t3", "alice", a2a.StateSubmitted, now), nil); !errors.Is(err, tasks.ErrMessageIDReused) {
		t.Fatalf("reused messageId: err = %v, want ErrMessageIDReused", err)
	}
	// Keys are per caller: bob may use m1 too.
	if _, created, err := s.Create(ctx, Key("bob", "m1", "a"), NewRecord("t4", "bob", a2a.StateSubmitted, now), nil); err != nil || !created {
		t.Fatalf("bob's m1: %v, created %v", err, created)
	}
	// Ownership is part of the lookup.
	if _, err := s.Get(ctx, "bob", "t1", tasks.Whole); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("bob read alice's task: err = %v", err)
	}
	if _, err := s.Get(ctx, "alice", "nope", tasks.Whole); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("unknown task: err = %v", err)
	}
	sub.check(t)
}

// testLookup: Lookup answers with the whole task a key is bound to, by
// create or by a follow-up, and tells an unbound key from a reused one.
func testLookup(t *testing.T, sub *Subject) {
	s := sub.Store
	r := NewRecord("t1", "alice", a2a.StateInputRequired, time.Now())
	r.Task.History = []a2a.Message{UserMessage("m1", "first")}
	if _, _, err := s.Create(ctx, Key("alice", "m1", "first"), r, []tasks.Event{StatusEvent(a2a.StateInputRequired)}); err != nil {
		t.Fatal(err)
	}
	follow := Key("alice", "m2", "second")
	if _, _, _, err := s.Update(ctx, "alice", "t1", &follow, tasks.Head, AppendMessage(UserMessage("m2", "second"), a2a.StateWorking)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []tasks.IdemKey{Key("alice", "m1", "first"), follow} {
		got, err := s.Lookup(ctx, k)
		if err != nil || got.Task.ID != "t1" || got.State() != a2a.StateWorking || len(got.Task.History) != 2 || got.HistoryLen != 2 {
			t.Fatalf("Lookup(%s) = %+v, %v; want t1, working, whole", k.MessageID, got, err)
		}
	}
	for _, c := range []struct {
		key  tasks.IdemKey
		want error
	}{
		{Key("alice", "m3", "x"), tasks.ErrNotFound},
		{Key("bob", "m1", "first"), tasks.ErrNotFound},
		{Key("alice", "m1", "other"), tasks.ErrMessageIDReused},
		{Key("alice", "m2", "other"), tasks.ErrMessageIDReused},
	} {
		if _, err := s.Lookup(ctx, c.key); !errors.Is(err, c.want) {
			t.Errorf("Lookup(%s, %s) = %v, want %v", c.key.Owner, c.key.MessageID, err, c.want)
		}
	}
}

// testUpdateAppendsEventsDurably: events get the next sequence numbers, a
// failing fn writes nothing, and all of it survives a reopen.
func testUpdateAppendsEventsDurably(t *testing.T, sub *Subject) {
	s := sub.Store
	now := time.Now()
	if _, _, err := s.Create(ctx, Key("", "m1", "a"), NewRecord("t1", "", a2a.StateSubmitted, now), []tasks.Event{StatusEvent(a2a.StateSubmitted)}); err != nil {
		t.Fatal(err)
	}
	rec, evs, dup, err := s.Update(ctx, "", "t1", nil, tasks.Whole, Flip(a2a.StateWorking))
	if err != nil || dup || rec.Seq != 2 || len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("Update: err %v dup %v seq %d events %+v", err, dup, rec.Seq, evs)
	}
	// An error from fn writes nothing.
	boom := errors.New("boom")
	if _, _, _, err := s.Update(ctx, "", "t1", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = a2a.StateFailed
		return nil, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Update err = %v, want boom", err)
	}
	if got, _ := s.Get(ctx, "", "t1", tasks.Whole); got.State() != a2a.StateWorking || got.Seq != 2 {
		t.Fatalf("failed Update changed the task: %s, seq %d", got.State(), got.Seq)
	}
	rec, evs, _, err = s.Update(ctx, "", "t1", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = a2a.StateCompleted
		return []tasks.Event{{Artifact: &a2a.Artifact{ArtifactID: "a"}}, StatusEvent(a2a.StateCompleted)}, nil
	})
	if err != nil || rec.Seq != 4 || len(evs) != 2 || evs[0].Seq != 3 || evs[1].Seq != 4 {
		t.Fatalf("Update with two events: err %v seq %d events %+v", err, rec.Seq, evs)
	}
	// Another caller cannot update it.
	if _, _, _, err := s.Update(ctx, "mallory", "t1", nil, tasks.Whole, func(*tasks.Record) ([]tasks.Event, error) { return nil, nil }); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("foreign Update: err = %v, want ErrNotFound", err)
	}
	sub.check(t)

	// Everything survives a reopen, in order.
	sub = sub.Reopen(t)
	s = sub.Store
	evs, err = s.Events(ctx, "t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, e := range evs {
		seqs = append(seqs, e.Seq)
	}
	if fmt.Sprint(seqs) != "[1 2 3 4]" || evs[2].Artifact == nil || evs[3].Status.State != a2a.StateCompleted {
		t.Fatalf("events after reopen: %v %+v", seqs, evs)
	}
	if tail, _ := s.Events(ctx, "t1", 2); len(tail) != 2 || tail[0].Seq != 3 {
		t.Fatalf("Events(after 2) = %+v", tail)
	}
	if none, err := s.Events(ctx, "nope", 0); err != nil || len(none) != 0 {
		t.Fatalf("Events of an unknown task = %+v, %v; want none", none, err)
	}
	// The duplicate key still answers after the restart.
	if got, created, err := s.Create(ctx, Key("", "m1", "a"), NewRecord("tX", "", a2a.StateSubmitted, now), nil); err != nil || created || got.Task.ID != "t1" {
		t.Fatalf("idempotency after reopen: %v created %v", err, created)
	}
}

func testUpdateWithKeyIsIdempotent(t *testing.T, sub *Subject) {
	s := sub.Store
	if _, _, err := s.Create(ctx, Key("", "m1", "a"), NewRecord("t1", "", a2a.StateInputRequired, time.Now()), nil); err != nil {
		t.Fatal(err)
	}
	calls := 0
	fn := func(r *tasks.Record) ([]tasks.Event, error) {
		calls++
		return Flip(a2a.StateSubmitted)(r)
	}
	k := Key("", "m2", "follow-up")
	if _, _, dup, err := s.Update(ctx, "", "t1", &k, tasks.Whole, fn); err != nil || dup {
		t.Fatalf("first follow-up: %v dup %v", err, dup)
	}
	calls = 0
	rec, evs, dup, err := s.Update(ctx, "", "t1", &k, tasks.Whole, fn)
	if err != nil || !dup || len(evs) != 0 || calls != 0 {
		t.Fatalf("repeated follow-up: err %v dup %v events %d calls %d; want dup, no events, fn not called", err, dup, len(evs), calls)
	}
	if rec.Task.ID != "t1" || rec.State() != a2a.StateSubmitted {
		t.Fatalf("duplicate follow-up answered %s, %s", rec.Task.ID, rec.State())
	}
	if got, _, err := sub.inspector().Task(ctx, "t1"); err != nil || !slices.Equal(got.MessageIDs, []string{"m1", "m2"}) {
		t.Fatalf("message ids held: %v, %v; want [m1 m2]", got.MessageIDs, err)
	}
	other := Key("", "m2", "different")
	if _, _, _, err := s.Update(ctx, "", "t1", &other, tasks.Whole, fn); !errors.Is(err, tasks.ErrMessageIDReused) {
		t.Fatalf("reused follow-up id: %v", err)
	}
	// A key bound to another task is refused too.
	if _, _, err := s.Create(ctx, Key("", "m3", "b"), NewRecord("t2", "", a2a.StateInputRequired, time.Now()), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.Update(ctx, "", "t2", &k, tasks.Whole, fn); !errors.Is(err, tasks.ErrMessageIDReused) {
		t.Fatalf("a follow-up to t2 with t1's key: %v, want ErrMessageIDReused", err)
	}
	sub.check(t)
}

// testUpdateWithoutEvents: an UpdateFunc that returns nil events writes
// nothing; one that returns an empty, non-nil slice writes the record's
// changes (the process group of its call) without an event, durably.
func testUpdateWithoutEvents(t *testing.T, sub *Subject) {
	s := sub.Store
	created, _, err := s.Create(ctx, Key("alice", "m1", "x"), NewRecord("t1", "alice", a2a.StateWorking, time.Now()), []tasks.Event{StatusEvent(a2a.StateWorking)})
	if err != nil {
		t.Fatal(err)
	}
	g := functions.ProcessGroup{ID: 4242, LeaderStart: 99, Session: 7, BootID: "b"}
	if _, _, _, err := s.Update(ctx, "alice", "t1", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Group = &g
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "alice", "t1", tasks.Whole); err != nil || got.Group != nil {
		t.Fatalf("after nil events: group %+v, err %v; want nothing written", got.Group, err)
	}
	rec, evs, _, err := s.Update(ctx, "alice", "t1", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Group = &g
		return []tasks.Event{}, nil
	})
	if err != nil || len(evs) != 0 || rec.Seq != created.Seq {
		t.Fatalf("Update = seq %d, %d events, %v; want seq %d, no event", rec.Seq, len(evs), err, created.Seq)
	}
	sub.check(t)
	sub = sub.Reopen(t)
	s = sub.Store
	got, err := s.Get(ctx, "alice", "t1", tasks.Whole)
	if err != nil || got.Group == nil || *got.Group != g {
		t.Fatalf("after reopening: group %+v, err %v; want %+v", got.Group, err, g)
	}
	if events, err := s.Events(ctx, "t1", 0); err != nil || len(events) != 1 {
		t.Fatalf("events: %d, %v; want the one of Create", len(events), err)
	}
}

// testReadsReturnWhatTheirScopeAsks: an update sees the head only (its
// history counted, not read), and a read returns the last messages it
// asks for, in order, the artifacts if asked, and never the input but
// from Active.
func testReadsReturnWhatTheirScopeAsks(t *testing.T, sub *Subject) {
	s := sub.Store
	r := NewRecord("t1", "o", a2a.StateInputRequired, time.Now())
	r.Task.History = []a2a.Message{UserMessage("m0", "first")}
	r.Task.Artifacts = []a2a.Artifact{{ArtifactID: "a0", Parts: []a2a.Part{a2a.TextPart("x")}}}
	r.Input = json.RawMessage(`{"pad":"` + strings.Repeat("x", 10_000) + `"}`)
	if _, _, err := s.Create(ctx, Key("o", "m0", "first"), r, []tasks.Event{StatusEvent(a2a.StateInputRequired)}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20; i++ {
		k := Key("o", fmt.Sprintf("m%d", i), "answer")
		seen := -1
		rec, _, _, err := s.Update(ctx, "o", "t1", &k, tasks.Head, func(r *tasks.Record) ([]tasks.Event, error) {
			seen = r.HistoryLen
			if len(r.Task.History) != 0 || r.Task.Artifacts != nil || r.Input != nil {
				t.Errorf("append %d: fn got %d messages, %d artifacts, %d bytes of input; want the head", i, len(r.Task.History), len(r.Task.Artifacts), len(r.Input))
			}
			return AppendMessage(UserMessage(fmt.Sprintf("m%d", i), strings.Repeat("y", 1000)), a2a.StateInputRequired)(r)
		})
		if err != nil {
			t.Fatal(err)
		}
		if seen != i || rec.HistoryLen != i+1 || len(rec.Task.History) != 0 {
			t.Fatalf("append %d: fn saw HistoryLen %d; after it HistoryLen %d, %d messages returned with the head scope", i, seen, rec.HistoryLen, len(rec.Task.History))
		}
	}
	got, err := s.Get(ctx, "o", "t1", tasks.Scope{History: 3})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range got.Task.History {
		ids = append(ids, m.MessageID)
	}
	if want := []string{"m18", "m19", "m20"}; !slices.Equal(ids, want) || got.HistoryLen != 21 || got.Task.Artifacts != nil {
		t.Errorf("last 3 messages = %v (of %d), %d artifacts; want %v (of 21), no artifacts", ids, got.HistoryLen, len(got.Task.Artifacts), want)
	}
	whole, err := s.Get(ctx, "o", "t1", tasks.Whole)
	if err != nil || len(whole.Task.History) != 21 || whole.Task.History[0].MessageID != "m0" || len(whole.Task.Artifacts) != 1 || whole.Input != nil {
		t.Fatalf("whole task: %d messages, %d artifacts, %d bytes of input, %v", len(whole.Task.History), len(whole.Task.Artifacts), len(whole.Input), err)
	}
	if head, _ := s.Get(ctx, "o", "t1", tasks.Head); len(head.Task.History) != 0 || head.Task.Artifacts != nil || head.Input != nil || head.HistoryLen != 21 {
		t.Errorf("a head read returned %d messages, %d artifacts and %d bytes of input", len(head.Task.History), len(head.Task.Artifacts), len(head.Input))
	}
	// The input is kept, and read where it is needed: recovery and the
	// operator's view.
	active, err := s.Active(ctx)
	if err != nil || len(active) != 1 || !bytes.Equal(active[0].Input, r.Input) {
		t.Fatalf("Active = %d tasks, %v; want t1 with its input", len(active), err)
	}
	sub.check(t)
}

// testArtifactEventsAreAppliedAsClientsDo: the store applies an update's
// artifact events to the stored artifacts as tasks.ApplyArtifact does;
// every read, after a reopen too, assembles what the events add up to. A
// new input replaces the old.
func testArtifactEventsAreAppliedAsClientsDo(t *testing.T, sub *Subject) {
	s := sub.Store
	r := NewRecord("t1", "o", a2a.StateWorking, time.Now())
	r.Task.Artifacts = []a2a.Artifact{{ArtifactID: "a0", Parts: []a2a.Part{a2a.TextPart("created")}}}
	Create(t, s, r)
	want := slices.Clone(r.Task.Artifacts)
	for i, fn := range []tasks.UpdateFunc{
		ArtifactChunk("a1", false, "one"),
		ArtifactChunk("a1", true, "two", "three"),
		ArtifactChunk("a0", true, "more"),
		ArtifactChunk("a1", true, "four"),
		ArtifactChunk("a1", false, "replaced"),
		ArtifactChunk("a2", true, "new, though it says append"),
		ArtifactChunk("a1", true, "five"),
	} {
		evs, _ := fn(nil)
		want = tasks.ApplyArtifact(want, evs[0].Artifact, evs[0].Append)
		rec, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Whole, fn)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, rec.Task.Artifacts); diff != "" {
			t.Fatalf("step %d: Update's artifacts (-want +got):\n%s", i, diff)
		}
		got, err := s.Get(ctx, "o", "t1", tasks.Whole)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got.Task.Artifacts); diff != "" {
			t.Fatalf("step %d: Get's artifacts (-want +got):\n%s", i, diff)
		}
	}
	for _, in := range []string{`{"n":1}`, `{"n":"` + strings.Repeat("x", 500) + `"}`} {
		if _, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Head, func(r *tasks.Record) ([]tasks.Event, error) {
			r.Input = json.RawMessage(in)
			return []tasks.Event{}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	sub.check(t)
	sub = sub.Reopen(t)
	s = sub.Store
	got, err := s.Get(ctx, "o", "t1", tasks.Whole)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Task.Artifacts); diff != "" {
		t.Fatalf("after a reopen (-want +got):\n%s", diff)
	}
	if head, _ := s.Get(ctx, "o", "t1", tasks.Scope{History: -1}); head.Task.Artifacts != nil {
		t.Errorf("a read without artifacts returned %d", len(head.Task.Artifacts))
	}
	if active, err := s.Active(ctx); err != nil || len(active) != 1 || !strings.Contains(string(active[0].Input), "xxxx") {
		t.Errorf("input after two replacements: %v", err)
	}
}

// testForeignTaskIsNotFound: a read, an update or a change of webhooks of
// another owner's task fails with ErrNotOwner (an ErrNotFound), and fn is
// never called.
func testForeignTaskIsNotFound(t *testing.T, sub *Subject) {
	s := sub.Store
	r := NewRecord("t1", "alice", a2a.StateWorking, time.Now())
	r.Task.History = []a2a.Message{UserMessage("m", strings.Repeat("x", 100_000))}
	Create(t, s, r)
	called := false
	_, _, _, err := s.Update(ctx, "bob", "t1", nil, tasks.Whole, func(*tasks.Record) ([]tasks.Event, error) {
		called = true
		return nil, nil
	})
	if !errors.Is(err, tasks.ErrNotOwner) || called {
		t.Errorf("Update of a foreign task = %v (fn called: %v), want ErrNotOwner", err, called)
	}
	if _, err := s.PushConfigs(ctx, "bob", "t1", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) {
		called = true
		return c, nil
	}); !errors.Is(err, tasks.ErrNotOwner) || called {
		t.Errorf("PushConfigs of a foreign task = %v (fn called: %v), want ErrNotOwner", err, called)
	}
	for _, c := range []struct {
		owner, id string
		want      error
	}{
		{"bob", "t1", tasks.ErrNotOwner}, {"alice", "t0", tasks.ErrNotFound}, {"alice", "t2", tasks.ErrNotFound},
		{"alic", "t1", tasks.ErrNotOwner}, {"alicee", "t1", tasks.ErrNotOwner}, {"", "t1", tasks.ErrNotOwner},
	} {
		_, err := s.Get(ctx, c.owner, c.id, tasks.Whole)
		if !errors.Is(err, c.want) || (c.want == tasks.ErrNotFound && errors.Is(err, tasks.ErrNotOwner)) { //nolint:errorlint // the very error
			t.Errorf("Get(%q, %q) = %v, want %v", c.owner, c.id, err, c.want)
		}
	}
}
