package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// seedTask stores a task of owner calling fn in state st, with one status
// event per state it went through.
func seedTask(tb testing.TB, s tasks.Store, id, owner, fn string, st a2a.TaskState) *tasks.Record {
	tb.Helper()
	r := NewRecord(id, owner, a2a.StateSubmitted, time.Unix(1700000000, 0))
	r.FunctionID = fn
	Create(tb, s, r)
	if st == a2a.StateSubmitted {
		return r
	}
	return MustUpdate(tb, s, owner, id, Flip(st))
}

// seedInspect stores 30 tasks, t00 to t29, of three owners (the anonymous
// one included), three functions and every state but unknown, and returns
// them in id order.
func seedInspect(tb testing.TB, s tasks.Store) []*tasks.Record {
	tb.Helper()
	owners := []string{"", "acme", "acme-2"}
	fns := []string{"demo::echo", "demo::sleep", ""}
	states := []a2a.TaskState{
		a2a.StateCompleted, a2a.StateWorking, a2a.StateFailed, a2a.StateInputRequired, a2a.StateCanceled,
		a2a.StateSubmitted, a2a.StateRejected, a2a.StateCompleted, a2a.StateAuthRequired, a2a.StateCompleted,
	}
	var recs []*tasks.Record
	for i := range 30 {
		recs = append(recs, seedTask(tb, s, fmt.Sprintf("t%02d", i), owners[i%3], fns[(i/3)%3], states[i%len(states)]))
	}
	return recs
}

// matching returns the ids of recs that match q, highest first.
func matching(recs []*tasks.Record, q tasks.TaskQuery) []string {
	var ids []string
	for _, r := range slices.Backward(recs) {
		if (q.State == "" || r.State() == q.State) && (q.FunctionID == "" || r.FunctionID == q.FunctionID) &&
			(q.Owner == nil || r.Owner == *q.Owner) {
			ids = append(ids, r.Task.ID)
		}
	}
	return ids
}

// pageAll pages through Tasks with limit and returns every id, checking
// that each page holds at most limit tasks and that the walk ends.
func pageAll(tb testing.TB, in tasks.Inspector, q tasks.TaskQuery, limit int) (ids []string, pages int) {
	tb.Helper()
	after := ""
	for {
		p, err := in.Tasks(ctx, q, after, limit)
		if err != nil {
			tb.Fatalf("Tasks(%+v, %q, %d): %v", q, after, limit, err)
		}
		if len(p.Tasks) > limit || p.Scanned < len(p.Tasks) {
			tb.Fatalf("Tasks(%+v, %q, %d) returned %d tasks, %d scanned", q, after, limit, len(p.Tasks), p.Scanned)
		}
		for _, r := range p.Tasks {
			ids = append(ids, r.Task.ID)
		}
		pages++
		if p.Next == "" {
			return ids, pages
		}
		if pages > 1000 {
			tb.Fatalf("Tasks(%+v) does not end", q)
		}
		after = p.Next
	}
}

func strp(s string) *string { return &s }

func testInspectorOverview(t *testing.T, sub *Subject) {
	o, err := sub.inspector().Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	zero := map[a2a.TaskState]int{}
	for _, st := range tasks.States {
		zero[st] = 0
	}
	if diff := cmp.Diff(&tasks.Overview{ByState: zero, ByStateComplete: true, FileBytes: o.FileBytes, DataBytes: o.DataBytes}, o); diff != "" {
		t.Errorf("empty store (-want +got):\n%s", diff)
	}
	if o.DataBytes <= 0 || o.DataBytes > o.FileBytes {
		t.Errorf("empty store: FileBytes %d, DataBytes %d", o.FileBytes, o.DataBytes)
	}

	seedInspect(t, sub.Store)
	all := map[a2a.TaskState]int{
		a2a.StateSubmitted: 3, a2a.StateWorking: 3, a2a.StateInputRequired: 3, a2a.StateAuthRequired: 3, a2a.StateUnknown: 0,
		a2a.StateCompleted: 9, a2a.StateFailed: 3, a2a.StateCanceled: 3, a2a.StateRejected: 3,
	}
	nonTerminal := map[a2a.TaskState]int{a2a.StateSubmitted: 3, a2a.StateWorking: 3, a2a.StateInputRequired: 3, a2a.StateAuthRequired: 3, a2a.StateUnknown: 0}
	for _, c := range []struct {
		bound    int
		want     map[a2a.TaskState]int
		complete bool
	}{
		{0, all, true},
		{30, all, true},
		{29, nonTerminal, false}, // over the bound, the terminal states are not counted
		{12, nonTerminal, false},
		{11, map[a2a.TaskState]int{}, false},
	} {
		o, err := sub.Store.Inspect(Bounds{StateCount: c.bound}).Overview(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.want, o.ByState); diff != "" || o.Tasks != 30 || o.NonTerminal != 12 || o.ByStateComplete != c.complete {
			t.Errorf("Overview with bound %d: %d tasks, %d non-terminal, complete %v, by state (-want +got):\n%s", c.bound, o.Tasks, o.NonTerminal, o.ByStateComplete, diff)
		}
	}
}

func testInspectorTasksFiltersAndPages(t *testing.T, sub *Subject) {
	recs := seedInspect(t, sub.Store)
	for _, q := range []tasks.TaskQuery{
		{},
		{State: a2a.StateCompleted},
		{State: a2a.StateWorking},
		{State: a2a.StateInputRequired},
		{State: a2a.StateUnknown},
		{FunctionID: "demo::echo"},
		{FunctionID: "nope"},
		{Owner: strp("")},
		{Owner: strp("acme")},
		{Owner: strp("acm")},
		{Owner: strp("acme"), State: a2a.StateCompleted},
		{Owner: strp("acme-2"), State: a2a.StateSubmitted, FunctionID: "demo::sleep"},
		{State: a2a.StateWorking, FunctionID: "demo::echo"},
		{State: a2a.StateCompleted, FunctionID: "demo::echo"},
	} {
		want := matching(recs, q)
		for _, scan := range []int{0, 3, 1} {
			in := sub.Store.Inspect(Bounds{Scan: scan})
			for _, limit := range []int{1, 2, 7, 1000} {
				got, pages := pageAll(t, in, q, limit)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Tasks(%+v) limit %d scan %d (-want +got):\n%s", q, limit, scan, diff)
				}
				if scan == 0 && pages != max(1, (len(want)+limit-1)/limit) && pages != len(want)/limit+1 {
					t.Errorf("Tasks(%+v) limit %d: %d pages for %d tasks", q, limit, pages, len(want))
				}
			}
		}
	}

	// A page's records are the whole tasks.
	in := sub.inspector()
	p, err := in.Tasks(ctx, tasks.TaskQuery{}, "t05", 1)
	if err != nil || len(p.Tasks) != 1 || p.Next != "t04" {
		t.Fatalf("Tasks after t05: %+v, %v; want t04, next t04", p, err)
	}
	if diff := cmp.Diff(recs[4], p.Tasks[0]); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	// The scan bound stops a page short, and says where to go on.
	p, err = sub.Store.Inspect(Bounds{Scan: 4}).Tasks(ctx, tasks.TaskQuery{FunctionID: "nope"}, "", 10)
	if err != nil || len(p.Tasks) != 0 || p.Scanned > 4 {
		t.Errorf("Tasks with a scan bound of 4: %+v, %v; want no tasks, at most 4 scanned", p, err)
	}
	if _, err := in.Tasks(ctx, tasks.TaskQuery{}, "", 0); err == nil {
		t.Error("Tasks with limit 0: no error")
	}
}

func testInspectorTasksIDsAndOwnersWithAnyBytes(t *testing.T, sub *Subject) {
	owners := []string{"a", "a\x00", "a\x00b", "ab", "é"}
	want := map[string][]string{}
	n := 0
	for _, r := range idRunes() {
		id := "x" + string(r) + "\x00" + string(r)
		owner := owners[n%len(owners)]
		n++
		seedTask(t, sub.Store, id, owner, "f", a2a.StateCompleted)
		want[owner] = append(want[owner], id)
	}
	in := sub.inspector()
	for _, owner := range owners {
		w := slices.Clone(want[owner])
		slices.Sort(w)
		slices.Reverse(w)
		got, _ := pageAll(t, in, tasks.TaskQuery{Owner: strp(owner)}, 3)
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("owner %q (-want +got):\n%s", owner, diff)
		}
	}
	if got, _ := pageAll(t, in, tasks.TaskQuery{State: a2a.StateCompleted}, 5); len(got) != n {
		t.Errorf("listed %d of %d tasks", len(got), n)
	}
}

func testInspectorTask(t *testing.T, sub *Subject) {
	recs := seedInspect(t, sub.Store)
	in := sub.inspector()
	r, evs, err := in.Task(ctx, "t02") // failed: submitted, then failed
	if err != nil {
		t.Fatal(err)
	}
	want := *recs[2]
	want.MessageIDs = []string{"m-t02"} // the inspector reads them; Update does not
	if diff := cmp.Diff(&want, r); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	wantEvs := []tasks.Event{StatusEvent(a2a.StateSubmitted), StatusEvent(a2a.StateFailed)}
	wantEvs[0].Seq, wantEvs[1].Seq = 1, 2
	if diff := cmp.Diff(wantEvs, evs, cmp.AllowUnexported(tasks.Event{})); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, id := range []string{"nope", "", "t0", "t02\x00"} {
		if _, _, err := in.Task(ctx, id); !errors.Is(err, tasks.ErrNotFound) {
			t.Errorf("Task(%q) = %v, want ErrNotFound", id, err)
		}
	}
}

func testInspectorDeadLetters(t *testing.T, sub *Subject) {
	in := sub.inspector()
	if list, more, err := in.DeadLetters(ctx, 0, 10); err != nil || list == nil || len(list) != 0 || more {
		t.Fatalf("no dead letters: %v, %v, %v; want an empty list", list, more, err)
	}
	for i := range 5 {
		GiveUp(t, sub.Store, fmt.Sprintf("d%d", i))
	}
	var got []string
	var after uint64
	for {
		list, more, err := in.DeadLetters(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range list {
			if d.URL != "https://hooks.example/"+d.TaskID || d.Attempts != 3 || d.LastError != "HTTP 503" || d.ID <= after {
				t.Errorf("dead letter %+v", d)
			}
			got = append(got, d.TaskID)
			after = d.ID
		}
		if !more {
			break
		}
	}
	if diff := cmp.Diff([]string{"d0", "d1", "d2", "d3", "d4"}, got); diff != "" {
		t.Errorf("dead letters, oldest first (-want +got):\n%s", diff)
	}
	o, err := in.Overview(ctx)
	if err != nil || o.DeadLetters != 5 || o.OutboxDepth != 0 {
		t.Errorf("Overview: %+v, %v; want 5 dead letters, outbox 0", o, err)
	}
}
