package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// The contracts of the indexes: the non-terminal tasks (Active,
// ActiveStates), retention (Expire) and an owner's listing (List).

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

// listBase is the time the listing tests' tasks are created around.
var listBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// stamped is NewRecord with a status timestamp of its update time.
func stamped(id, owner string, st a2a.TaskState, at time.Time) *tasks.Record {
	r := NewRecord(id, owner, st, at)
	r.Task.Status.Timestamp = a2a.Timestamp(at)
	return r
}

func testListFollowsEveryWrite(t *testing.T, sub *Subject) {
	s := sub.Store
	for i := range 5 {
		Create(t, s, stamped(fmt.Sprintf("t%d", i), "alice", a2a.StateWorking, listBase.Add(time.Duration(i)*time.Second)))
	}
	Create(t, s, NewRecord("b0", "bob", a2a.StateSubmitted, listBase))
	sub.check(t)
	if got := ListIDs(t, s, "alice", tasks.ListFilter{}, 2); !slices.Equal(got, []string{"t4", "t3", "t2", "t1", "t0"}) {
		t.Fatalf("alice's tasks = %v, want newest first", got)
	}

	// An update moves the task to the top, with its new state.
	MustUpdate(t, s, "alice", "t1", func(r *tasks.Record) ([]tasks.Event, error) {
		r.UpdatedAt = listBase.Add(time.Minute)
		r.Task.Status = a2a.TaskStatus{State: a2a.StateCompleted, Timestamp: a2a.Timestamp(r.UpdatedAt)}
		return []tasks.Event{StatusEvent(a2a.StateCompleted)}, nil
	})
	sub.check(t)
	if got := ListIDs(t, s, "alice", tasks.ListFilter{}, 10); !slices.Equal(got, []string{"t1", "t4", "t3", "t2", "t0"}) {
		t.Fatalf("after the update = %v, want t1 first", got)
	}
	if got := ListIDs(t, s, "alice", tasks.ListFilter{State: a2a.StateCompleted}, 10); !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("completed = %v, want [t1]", got)
	}
	// An update that changes nothing the listing shows leaves it as it
	// was; so does a change of webhooks.
	MustUpdate(t, s, "alice", "t2", ArtifactChunk("a", false))
	if _, err := s.PushConfigs(ctx, "alice", "t3", func([]a2a.PushConfig) ([]a2a.PushConfig, error) {
		return []a2a.PushConfig{{ID: "p", URL: "https://example.com/hook"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	sub.check(t)
	if got := ListIDs(t, s, "alice", tasks.ListFilter{}, 10); !slices.Equal(got, []string{"t1", "t4", "t3", "t2", "t0"}) {
		t.Fatalf("after an artifact and a webhook = %v, want the same order", got)
	}

	// Retention deletes the entry and counts it out.
	if n, err := s.Expire(ctx, listBase.Add(2*time.Minute), 10); err != nil || n != 1 {
		t.Fatalf("Expire = %d, %v; want 1", n, err)
	}
	sub.check(t)
	if got := ListIDs(t, s, "alice", tasks.ListFilter{}, 10); !slices.Equal(got, []string{"t4", "t3", "t2", "t0"}) {
		t.Fatalf("after expiry = %v", got)
	}
	// The last task of an owner takes its count with it.
	MustUpdate(t, s, "bob", "b0", Flip(a2a.StateFailed))
	if n, err := s.Expire(ctx, listBase.Add(2*time.Minute), 10); err != nil || n != 1 {
		t.Fatalf("Expire bob = %d, %v; want 1", n, err)
	}
	sub.check(t)
	if recs, total, next, err := s.List(ctx, "bob", tasks.ListFilter{}, nil, 10, tasks.Whole); err != nil || len(recs) != 0 || total != 0 || next != nil {
		t.Fatalf("bob after expiry: %d tasks, total %d, next %v, err %v", len(recs), total, next, err)
	}
}

func testListOrdersTiesByID(t *testing.T, sub *Subject) {
	s := sub.Store
	var want []string
	for i := range 12 {
		id := fmt.Sprintf("tie-%02d", i)
		Create(t, s, NewRecord(id, "o", a2a.StateWorking, listBase))
		want = append([]string{id}, want...)
	}
	// One newer and one older around the ties.
	Create(t, s, NewRecord("newer", "o", a2a.StateWorking, listBase.Add(time.Nanosecond)))
	Create(t, s, NewRecord("older", "o", a2a.StateWorking, listBase.Add(-time.Nanosecond)))
	want = append(append([]string{"newer"}, want...), "older")
	for _, limit := range []int{1, 2, 5, 13, 14, 100} {
		if got := ListIDs(t, s, "o", tasks.ListFilter{}, limit); !slices.Equal(got, want) {
			t.Errorf("limit %d: %v\nwant %v", limit, got, want)
		}
		if got := ListIDs(t, s, "o", tasks.ListFilter{State: a2a.StateWorking}, limit); !slices.Equal(got, want) {
			t.Errorf("filtered, limit %d: %v\nwant %v", limit, got, want)
		}
	}
}

// testListIDsAndOwnersWithAnyBytes lists tasks whose ids and owners hold
// every byte a JSON string can, including those a separator-based cursor
// would split on, and owners that are prefixes of each other.
func testListIDsAndOwnersWithAnyBytes(t *testing.T, sub *Subject) {
	s := sub.Store
	rs := idRunes()
	seenBytes := map[byte]bool{}
	owners := []string{"", "a", "a\x00", "a\u00ff", "\u00ff\u00ff", strings.Repeat("\u00ff", 100)}
	want := map[string][]string{}
	secs := map[string]int{}
	for oi, owner := range owners {
		for i, r := range rs {
			if (i+oi)%3 != 0 { // about 80 tasks each, in other orders
				continue
			}
			id := string(r) + "_" + string(rs[len(rs)-1-i]) + "\x00" + strconv.Itoa(oi)
			for _, b := range []byte(id) {
				seenBytes[b] = true
			}
			secs[id] = i % 7
			Create(t, s, stamped(id, owner, a2a.StateWorking, listBase.Add(time.Duration(i%7)*time.Second)))
			want[owner] = append(want[owner], id)
		}
	}
	if len(seenBytes) != 256-2-11 {
		t.Fatalf("ids hold %d distinct bytes, want every one of the 243 a JSON string can", len(seenBytes))
	}
	sub.check(t)
	for _, owner := range owners {
		// Newest first, then highest id.
		w := slices.Clone(want[owner])
		slices.SortFunc(w, func(a, b string) int {
			if secs[a] != secs[b] {
				return secs[b] - secs[a]
			}
			return strings.Compare(b, a)
		})
		for _, limit := range []int{1, 7, 50} {
			if got := ListIDs(t, s, owner, tasks.ListFilter{}, limit); !slices.Equal(got, w) {
				t.Errorf("owner %q limit %d: %q\nwant %q", owner, limit, got, w)
			}
		}
		if got := ListIDs(t, s, owner, tasks.ListFilter{ContextID: "ctx-" + w[3]}, 1); !slices.Equal(got, w[3:4]) {
			t.Errorf("owner %q by context: %q, want %q", owner, got, w[3:4])
		}
	}
}

func testListFilters(t *testing.T, sub *Subject) {
	s := sub.Store
	base := listBase
	for _, sp := range []struct {
		id, ctx string
		st      a2a.TaskState
		sec     int
	}{
		{"a", "c1", a2a.StateCompleted, 1}, {"b", "c1", a2a.StateWorking, 2}, {"c", "c2", a2a.StateCompleted, 3},
		{"d", "c2", a2a.StateFailed, 4}, {"e", "c1", a2a.StateCompleted, 5}, {"f", "c3", a2a.StateInputRequired, 6},
	} {
		at := base.Add(time.Duration(sp.sec) * time.Second)
		for _, owner := range []string{"o", "other"} { // other's tasks match every filter and are never listed
			id := sp.id
			if owner == "other" {
				id = "x-" + id
			}
			r := stamped(id, owner, sp.st, at)
			r.Task.ContextID = sp.ctx
			Create(t, s, r)
		}
	}
	// A task whose status timestamp is older than its update (an artifact
	// came later): the time filter reads the status time.
	late := stamped("g", "o", a2a.StateWorking, base.Add(10*time.Second))
	late.Task.ContextID, late.Task.Status.Timestamp = "c3", a2a.Timestamp(base.Add(time.Second))
	Create(t, s, late)

	for _, tc := range []struct {
		f    tasks.ListFilter
		want []string
	}{
		{tasks.ListFilter{}, []string{"g", "f", "e", "d", "c", "b", "a"}},
		{tasks.ListFilter{ContextID: "c1"}, []string{"e", "b", "a"}},
		{tasks.ListFilter{State: a2a.StateCompleted}, []string{"e", "c", "a"}},
		{tasks.ListFilter{ContextID: "c2", State: a2a.StateCompleted}, []string{"c"}},
		{tasks.ListFilter{StatusAfter: base.Add(4 * time.Second)}, []string{"f", "e", "d"}},
		{tasks.ListFilter{StatusAfter: base.Add(4*time.Second + time.Millisecond)}, []string{"f", "e"}},
		{tasks.ListFilter{StatusAfter: base.Add(time.Second)}, []string{"g", "f", "e", "d", "c", "b", "a"}},
		{tasks.ListFilter{StatusAfter: base.Add(time.Hour)}, nil},
		{tasks.ListFilter{StatusAfter: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)}, []string{"g", "f", "e", "d", "c", "b", "a"}},
		{tasks.ListFilter{StatusAfter: base.Add(2 * time.Second), State: a2a.StateCompleted, ContextID: "c1"}, []string{"e"}},
		{tasks.ListFilter{ContextID: "c"}, nil},
		{tasks.ListFilter{State: a2a.StateCanceled}, nil},
	} {
		for _, limit := range []int{1, 2, 100} {
			if got := ListIDs(t, s, "o", tc.f, limit); !slices.Equal(got, tc.want) {
				t.Errorf("List(%+v, limit %d) = %v, want %v", tc.f, limit, got, tc.want)
			}
		}
	}
}

// testListCursorIsStableUnderInserts: tasks created or updated between
// pages go above the cursor; later pages neither repeat nor skip a task.
func testListCursorIsStableUnderInserts(t *testing.T, sub *Subject) {
	s := sub.Store
	for i := range 10 {
		Create(t, s, NewRecord(fmt.Sprintf("t%d", i), "o", a2a.StateWorking, listBase.Add(time.Duration(i)*time.Second)))
	}
	recs, total, next, err := s.List(ctx, "o", tasks.ListFilter{}, nil, 4, tasks.Whole)
	if err != nil || total != 10 || len(recs) != 4 || next == nil {
		t.Fatalf("page 1: %d tasks, total %d, next %v, err %v", len(recs), total, next, err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.Task.ID] = true
	}
	for i := range 5 {
		Create(t, s, NewRecord(fmt.Sprintf("new%d", i), "o", a2a.StateWorking, listBase.Add(time.Hour+time.Duration(i))))
	}
	// t1, not yet listed, is updated: it moves above the cursor.
	MustUpdate(t, s, "o", "t1", FlipAt(a2a.StateWorking, listBase.Add(2*time.Hour)))
	var rest []string
	for next != nil {
		recs, total, next, err = s.List(ctx, "o", tasks.ListFilter{}, next, 4, tasks.Whole)
		if err != nil || total != 15 {
			t.Fatalf("later page: total %d, err %v", total, err)
		}
		for _, r := range recs {
			if seen[r.Task.ID] {
				t.Fatalf("task %s listed twice", r.Task.ID)
			}
			seen[r.Task.ID] = true
			rest = append(rest, r.Task.ID)
		}
	}
	if want := []string{"t5", "t4", "t3", "t2", "t0"}; !slices.Equal(rest, want) {
		t.Fatalf("later pages = %v, want %v", rest, want)
	}
}
