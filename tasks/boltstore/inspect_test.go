package boltstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// seedTask stores a task of owner calling fn in state st, with one status
// event per state it went through.
func seedTask(tb testing.TB, s *boltstore.Store, id, owner, fn string, st a2a.TaskState) *tasks.Record {
	tb.Helper()
	r := newRecord(id, owner, a2a.StateSubmitted, time.Unix(1700000000, 0))
	r.FunctionID = fn
	create(tb, s, r)
	if st == a2a.StateSubmitted {
		return r
	}
	got, _, _, err := s.Update(ctx, owner, id, nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = st
		return []tasks.Event{statusEvent(st)}, nil
	})
	if err != nil {
		tb.Fatalf("Update %q to %s: %v", id, st, err)
	}
	return got
}

// inspectFixture is a store with tasks of three owners (the anonymous one
// included), three functions and every state but unknown.
type inspectFixture struct {
	s    *boltstore.Store
	recs []*tasks.Record // in id order
}

func newInspectFixture(tb testing.TB) *inspectFixture {
	tb.Helper()
	f := &inspectFixture{s: MustOpen(tb, "")}
	owners := []string{"", "acme", "acme-2"}
	fns := []string{"demo::echo", "demo::sleep", ""}
	states := []a2a.TaskState{
		a2a.StateCompleted, a2a.StateWorking, a2a.StateFailed, a2a.StateInputRequired, a2a.StateCanceled,
		a2a.StateSubmitted, a2a.StateRejected, a2a.StateCompleted, a2a.StateAuthRequired, a2a.StateCompleted,
	}
	for i := range 30 {
		id := fmt.Sprintf("t%02d", i)
		f.recs = append(f.recs, seedTask(tb, f.s, id, owners[i%3], fns[(i/3)%3], states[i%len(states)]))
	}
	return f
}

// want returns the ids of the fixture's tasks that match q, highest first.
func (f *inspectFixture) want(q tasks.TaskQuery) []string {
	var ids []string
	for _, r := range slices.Backward(f.recs) {
		if (q.State == "" || r.State() == q.State) && (q.FunctionID == "" || r.FunctionID == q.FunctionID) &&
			(q.Owner == nil || r.Owner == *q.Owner) {
			ids = append(ids, r.Task.ID)
		}
	}
	return ids
}

// pageAll pages through Tasks with limit and returns every id, checking
// that each page holds at most limit tasks and that the walk ends.
func pageAll(tb testing.TB, in *boltstore.Inspector, q tasks.TaskQuery, limit int) (ids []string, pages int) {
	tb.Helper()
	after := ""
	for {
		p, err := in.Tasks(ctx, q, after, limit)
		if err != nil {
			tb.Fatalf("Tasks(%+v, %q, %d): %v", q, after, limit, err)
		}
		if len(p.Tasks) > limit {
			tb.Fatalf("Tasks(%+v, %q, %d) returned %d tasks", q, after, limit, len(p.Tasks))
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

func TestInspectorOverview(t *testing.T) {
	s := MustOpen(t, "")
	in := s.Inspector()
	o, err := in.Overview(ctx)
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
	if fi, err := os.Stat(s.DB().Path()); err != nil || o.FileBytes != fi.Size() || o.DataBytes <= 0 || o.DataBytes > o.FileBytes {
		t.Errorf("FileBytes %d, DataBytes %d; file: %v %v", o.FileBytes, o.DataBytes, fi.Size(), err)
	}

	f := newInspectFixture(t)
	in = f.s.Inspector()
	all := map[a2a.TaskState]int{
		a2a.StateSubmitted: 3, a2a.StateWorking: 3, a2a.StateInputRequired: 3, a2a.StateAuthRequired: 3, a2a.StateUnknown: 0,
		a2a.StateCompleted: 9, a2a.StateFailed: 3, a2a.StateCanceled: 3, a2a.StateRejected: 3,
	}
	o, err = in.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all, o.ByState); diff != "" || o.Tasks != 30 || o.NonTerminal != 12 || !o.ByStateComplete {
		t.Errorf("Overview: %d tasks, %d non-terminal, complete %v, by state (-want +got):\n%s", o.Tasks, o.NonTerminal, o.ByStateComplete, diff)
	}

	// Over the bound, the terminal states are not counted.
	in.StateCountLimit = 29
	o, err = in.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nonTerminal := map[a2a.TaskState]int{a2a.StateSubmitted: 3, a2a.StateWorking: 3, a2a.StateInputRequired: 3, a2a.StateAuthRequired: 3, a2a.StateUnknown: 0}
	if diff := cmp.Diff(nonTerminal, o.ByState); diff != "" || o.Tasks != 30 || o.NonTerminal != 12 || o.ByStateComplete {
		t.Errorf("Overview with limit 29: %d tasks, %d non-terminal, complete %v, by state (-want +got):\n%s", o.Tasks, o.NonTerminal, o.ByStateComplete, diff)
	}
	in.StateCountLimit = 11
	o, err = in.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.ByState) != 0 || o.Tasks != 30 || o.NonTerminal != 12 || o.ByStateComplete {
		t.Errorf("Overview with limit 11: %+v, want no state counted", o)
	}
}

func TestInspectorTasksFiltersAndPages(t *testing.T) {
	f := newInspectFixture(t)
	in := f.s.Inspector()
	queries := []tasks.TaskQuery{
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
	}
	for _, q := range queries {
		want := f.want(q)
		for _, scan := range []int{boltstore.DefaultScanLimit, 3, 1} {
			for _, limit := range []int{1, 2, 7, 1000} {
				in.ScanLimit = scan
				got, pages := pageAll(t, in, q, limit)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Tasks(%+v) limit %d scan %d (-want +got):\n%s", q, limit, scan, diff)
				}
				if scan == boltstore.DefaultScanLimit && pages != max(1, (len(want)+limit-1)/limit) {
					t.Errorf("Tasks(%+v) limit %d: %d pages for %d tasks", q, limit, pages, len(want))
				}
			}
		}
	}

	// A page's records are the whole tasks.
	in.ScanLimit = boltstore.DefaultScanLimit
	p, err := in.Tasks(ctx, tasks.TaskQuery{}, "t05", 1)
	if err != nil || len(p.Tasks) != 1 || p.Next != "t04" || p.Scanned != 2 {
		t.Fatalf("Tasks after t05: %+v, %v", p, err)
	}
	if diff := cmp.Diff(f.recs[4], p.Tasks[0]); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	// The scan bound stops a page short, and says where to go on.
	in.ScanLimit = 4
	p, err = in.Tasks(ctx, tasks.TaskQuery{FunctionID: "nope"}, "", 10)
	if err != nil || len(p.Tasks) != 0 || p.Next != "t26" || p.Scanned != 4 {
		t.Errorf("Tasks with a scan bound of 4: %+v, %v; want no tasks, next t26, 4 scanned", p, err)
	}
	if _, err := in.Tasks(ctx, tasks.TaskQuery{}, "", 0); err == nil {
		t.Error("Tasks with limit 0: no error")
	}
}

func TestInspectorTasksIDsAndOwnersWithAnyBytes(t *testing.T) {
	s := MustOpen(t, "")
	owners := []string{"a", "a\x00", "a\x00b", "ab", "é"}
	var want = map[string][]string{}
	n := 0
	for _, r := range idRunes() {
		id := "x" + string(r) + "\x00" + string(r)
		owner := owners[n%len(owners)]
		n++
		seedTask(t, s, id, owner, "f", a2a.StateCompleted)
		want[owner] = append(want[owner], id)
	}
	in := s.Inspector()
	for _, owner := range owners {
		w := slices.Clone(want[owner])
		slices.Sort(w)
		slices.Reverse(w)
		got, _ := pageAll(t, in, tasks.TaskQuery{Owner: strp(owner)}, 3)
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("owner %q (-want +got):\n%s", owner, diff)
		}
	}
	got, _ := pageAll(t, in, tasks.TaskQuery{State: a2a.StateCompleted}, 5)
	if len(got) != n {
		t.Errorf("listed %d of %d tasks", len(got), n)
	}
}

func TestInspectorTask(t *testing.T) {
	f := newInspectFixture(t)
	in := f.s.Inspector()
	r, evs, err := in.Task(ctx, "t02") // failed: submitted, then failed
	if err != nil {
		t.Fatal(err)
	}
	want := *f.recs[2]
	want.MessageIDs = []string{"m-t02"} // the inspector reads them; Update does not
	if diff := cmp.Diff(&want, r); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	wantEvs := []tasks.Event{statusEvent(a2a.StateSubmitted), statusEvent(a2a.StateFailed)}
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

// deadLetter queues a delivery of a new task and gives up on it.
func deadLetter(tb testing.TB, s *boltstore.Store, id string) {
	tb.Helper()
	r := newRecord(id, "o", a2a.StateWorking, time.Now())
	r.PushConfigs = []a2a.PushConfig{{ID: "c-" + id, URL: "https://hooks.example/" + id, Token: "tok-secret"}}
	create(tb, s, r)
	if _, _, _, err := s.Update(ctx, "o", id, nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = a2a.StateCompleted
		return []tasks.Event{statusEvent(a2a.StateCompleted)}, nil
	}); err != nil {
		tb.Fatal(err)
	}
	due, err := s.Due(ctx, time.Now().Add(time.Hour), 100)
	if err != nil || len(due) != 1 {
		tb.Fatalf("Due: %v, %v", due, err)
	}
	d := due[0]
	if err := s.Request(ctx, &d); err != nil {
		tb.Fatal(err)
	}
	if err := s.Dead(ctx, d.ID, d.URL, 3, "HTTP 503"); err != nil {
		tb.Fatal(err)
	}
}

func TestInspectorDeadLetters(t *testing.T) {
	s := MustOpen(t, "")
	in := s.Inspector()
	if list, more, err := in.DeadLetters(ctx, 0, 10); err != nil || list == nil || len(list) != 0 || more {
		t.Fatalf("no dead letters: %v, %v, %v; want an empty list", list, more, err)
	}
	for i := range 5 {
		deadLetter(t, s, fmt.Sprintf("d%d", i))
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

// dump is every key and value of every bucket, and the file's hash.
func dump(tb testing.TB, s *boltstore.Store) (string, [32]byte) {
	tb.Helper()
	var b bytes.Buffer
	err := s.DB().View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			fmt.Fprintf(&b, "bucket %q seq %d\n", name, bk.Sequence())
			return bk.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&b, "%q=%q\n", k, v)
				return nil
			})
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := os.ReadFile(s.DB().Path())
	if err != nil {
		tb.Fatal(err)
	}
	return b.String(), sha256.Sum256(raw)
}

// TestInspectorWritesNothing calls every Inspector method many times: not
// a byte of the store file changes.
func TestInspectorWritesNothing(t *testing.T) {
	f := newInspectFixture(t)
	deadLetter(t, f.s, "dead")
	before, hash := dump(t, f.s)
	in := f.s.Inspector()
	for range 20 {
		if _, err := in.Overview(ctx); err != nil {
			t.Fatal(err)
		}
		for _, r := range f.recs {
			if _, _, err := in.Task(ctx, r.Task.ID); err != nil {
				t.Fatal(err)
			}
		}
		pageAll(t, in, tasks.TaskQuery{}, 3)
		pageAll(t, in, tasks.TaskQuery{Owner: strp("acme"), State: a2a.StateWorking}, 1)
		if _, _, err := in.DeadLetters(ctx, 0, 10); err != nil {
			t.Fatal(err)
		}
	}
	after, hash2 := dump(t, f.s)
	if diff := cmp.Diff(before, after); diff != "" || hash != hash2 {
		t.Errorf("the store changed (-before +after):\n%s", diff)
	}
}

// TestInspectorRefusesACanceledContext: a canceled request reads nothing.
func TestInspectorRefusesACanceledContext(t *testing.T) {
	in := MustOpen(t, filepath.Join(t.TempDir(), "a2ad.db")).Inspector()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := in.Overview(cctx); err == nil {
		t.Error("Overview: no error")
	}
	if _, err := in.Tasks(cctx, tasks.TaskQuery{}, "", 1); err == nil {
		t.Error("Tasks: no error")
	}
	if _, _, err := in.Task(cctx, "x"); err == nil {
		t.Error("Task: no error")
	}
	if _, _, err := in.DeadLetters(cctx, 0, 1); err == nil {
		t.Error("DeadLetters: no error")
	}
}
