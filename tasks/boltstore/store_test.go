package boltstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// MustOpen opens a store in a temporary directory; it is checked for
// consistency and closed when the test ends.
func MustOpen(tb testing.TB, path string) *boltstore.Store {
	tb.Helper()
	if path == "" {
		path = filepath.Join(tb.TempDir(), "a2ad.db")
	}
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		check(tb, s)
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

func check(tb testing.TB, s *boltstore.Store) {
	tb.Helper()
	err := s.DB().View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		tb.Errorf("bbolt check: %v", err)
	}
	checkListing(tb, s.DB())
	if r, err := s.Check(ctx); err != nil || !r.Clean() {
		tb.Errorf("store check: %v %v", err, r.Problems)
	}
}

var ctx = context.Background()

// headOf decodes a value of the tasks bucket, its layout written out again
// here so that a change to it fails these tests: seq(8), 0x01, the owner
// (uvarint-prefixed), the history's length (uvarint), the artifacts'
// index (uvarint-prefixed), then the head's JSON.
func headOf(v []byte) (*tasks.Record, uint64, error) {
	if len(v) < 9 || v[8] != 0x01 {
		return nil, 0, fmt.Errorf("value %q is not a head", v)
	}
	n, w := binary.Uvarint(v[9:])
	if w <= 0 || uint64(len(v)-9-w) < n {
		return nil, 0, fmt.Errorf("value %q: owner does not parse", v)
	}
	owner := string(v[9+w : 9+w+int(n)])
	rest := v[9+w+int(n):]
	historyLen, w := binary.Uvarint(rest)
	if w <= 0 {
		return nil, 0, fmt.Errorf("value %q: history length does not parse", v)
	}
	rest = rest[w:]
	if n, w = binary.Uvarint(rest); w <= 0 || uint64(len(rest)-w) < n {
		return nil, 0, fmt.Errorf("value %q: the artifacts' index does not parse", v)
	}
	rest = rest[w+int(n):]
	var r tasks.Record
	if err := json.Unmarshal(rest, &r); err != nil {
		return nil, 0, err
	}
	if r.Seq != binary.BigEndian.Uint64(v) {
		return nil, 0, fmt.Errorf("value %q: sequence %d, JSON says %d", v, binary.BigEndian.Uint64(v), r.Seq)
	}
	r.Owner = owner
	return &r, historyLen, nil
}

func key(owner, msgID, body string) tasks.IdemKey {
	return tasks.IdemKey{Owner: owner, MessageID: msgID, Hash: sha256.Sum256([]byte(body))}
}

func newRecord(id, owner string, st a2a.TaskState, at time.Time) *tasks.Record {
	return &tasks.Record{
		Task:      a2a.Task{ID: id, ContextID: "ctx-" + id, Status: a2a.TaskStatus{State: st}},
		Owner:     owner,
		CreatedAt: at,
		UpdatedAt: at,
	}
}

func statusEvent(st a2a.TaskState) tasks.Event {
	return tasks.Event{Status: &a2a.TaskStatus{State: st}}
}

func TestCreateGetAndIdempotency(t *testing.T) {
	s := MustOpen(t, "")
	now := time.Now()
	rec, created, err := s.Create(ctx, key("alice", "m1", "a"), newRecord("t1", "alice", a2a.StateSubmitted, now),
		[]tasks.Event{statusEvent(a2a.StateSubmitted)})
	if err != nil || !created {
		t.Fatalf("Create = %v, created %v", err, created)
	}
	if rec.Seq != 1 || len(rec.MessageIDs) != 1 || rec.MessageIDs[0] != "m1" {
		t.Fatalf("created record: seq %d, messageIds %v", rec.Seq, rec.MessageIDs)
	}

	// The same key returns the same task and writes nothing.
	again, created, err := s.Create(ctx, key("alice", "m1", "a"), newRecord("t2", "alice", a2a.StateSubmitted, now), nil)
	if err != nil || created || again.Task.ID != "t1" {
		t.Fatalf("duplicate Create = %v, created %v, task %s; want t1, not created", err, created, again.Task.ID)
	}
	if _, err := s.Get(ctx, "alice", "t2", tasks.Whole); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("duplicate Create stored t2: %v", err)
	}
	// The same id with another message is refused.
	if _, _, err := s.Create(ctx, key("alice", "m1", "b"), newRecord("t3", "alice", a2a.StateSubmitted, now), nil); !errors.Is(err, tasks.ErrMessageIDReused) {
		t.Fatalf("reused messageId: err = %v, want ErrMessageIDReused", err)
	}
	// Keys are per caller: bob may use m1 too.
	if _, created, err := s.Create(ctx, key("bob", "m1", "a"), newRecord("t4", "bob", a2a.StateSubmitted, now), nil); err != nil || !created {
		t.Fatalf("bob's m1: %v, created %v", err, created)
	}
	// Ownership is part of the lookup.
	if _, err := s.Get(ctx, "bob", "t1", tasks.Whole); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("bob read alice's task: err = %v", err)
	}
	if _, err := s.Get(ctx, "alice", "nope", tasks.Whole); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("unknown task: err = %v", err)
	}
}

func TestUpdateAppendsEventsAndKeepsIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, _, err := s.Create(ctx, key("", "m1", "a"), newRecord("t1", "", a2a.StateSubmitted, now), []tasks.Event{statusEvent(a2a.StateSubmitted)}); err != nil {
		t.Fatal(err)
	}
	rec, evs, dup, err := s.Update(ctx, "", "t1", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = a2a.StateWorking
		return []tasks.Event{statusEvent(a2a.StateWorking)}, nil
	})
	if err != nil || dup || rec.Seq != 2 || len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("Update: err %v dup %v seq %d events %+v", err, dup, rec.Seq, evs)
	}
	active, err := s.Active(ctx)
	if err != nil || len(active) != 1 || active[0].Task.ID != "t1" {
		t.Fatalf("Active = %v, %v; want [t1]", active, err)
	}
	// An error from fn writes nothing.
	boom := errors.New("boom")
	if _, _, _, err := s.Update(ctx, "", "t1", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = a2a.StateFailed
		return nil, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Update err = %v, want boom", err)
	}
	if got, _ := s.Get(ctx, "", "t1", tasks.Whole); got.State() != a2a.StateWorking {
		t.Fatalf("failed Update changed the state to %s", got.State())
	}
	// Complete: leaves the active index.
	if _, _, _, err := s.Update(ctx, "", "t1", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = a2a.StateCompleted
		return []tasks.Event{{Artifact: &a2a.Artifact{ArtifactID: "a"}}, statusEvent(a2a.StateCompleted)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if active, _ := s.Active(ctx); len(active) != 0 {
		t.Fatalf("Active after completion = %d tasks, want 0", len(active))
	}
	// Another caller cannot update it.
	if _, _, _, err := s.Update(ctx, "mallory", "t1", nil, tasks.Whole, func(*tasks.Record) ([]tasks.Event, error) { return nil, nil }); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("foreign Update: err = %v, want ErrNotFound", err)
	}

	// Everything survives a reopen, in order.
	check(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := MustOpen(t, path)
	evs, err = s2.Events(ctx, "t1", 0)
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
	if tail, _ := s2.Events(ctx, "t1", 2); len(tail) != 2 || tail[0].Seq != 3 {
		t.Fatalf("Events(after 2) = %+v", tail)
	}
	// The duplicate key still answers after the restart.
	if got, created, err := s2.Create(ctx, key("", "m1", "a"), newRecord("tX", "", a2a.StateSubmitted, now), nil); err != nil || created || got.Task.ID != "t1" {
		t.Fatalf("idempotency after reopen: %v created %v", err, created)
	}
}

func TestUpdateWithKeyIsIdempotent(t *testing.T) {
	s := MustOpen(t, "")
	now := time.Now()
	if _, _, err := s.Create(ctx, key("", "m1", "a"), newRecord("t1", "", a2a.StateInputRequired, now), nil); err != nil {
		t.Fatal(err)
	}
	calls := 0
	fn := func(r *tasks.Record) ([]tasks.Event, error) {
		calls++
		r.Task.Status.State = a2a.StateSubmitted
		return []tasks.Event{statusEvent(a2a.StateSubmitted)}, nil
	}
	k := key("", "m2", "follow-up")
	if _, _, dup, err := s.Update(ctx, "", "t1", &k, tasks.Whole, fn); err != nil || dup {
		t.Fatalf("first follow-up: %v dup %v", err, dup)
	}
	rec, evs, dup, err := s.Update(ctx, "", "t1", &k, tasks.Whole, fn)
	if err != nil || !dup || len(evs) != 0 || calls != 1 {
		t.Fatalf("repeated follow-up: err %v dup %v events %d calls %d; want dup, no events, 1 call", err, dup, len(evs), calls)
	}
	if rec.Task.ID != "t1" || rec.State() != a2a.StateSubmitted {
		t.Fatalf("duplicate follow-up answered %s, %s", rec.Task.ID, rec.State())
	}
	if got, _, err := s.Inspector().Task(ctx, "t1"); err != nil || !slices.Equal(got.MessageIDs, []string{"m1", "m2"}) {
		t.Fatalf("message ids held: %v, %v; want [m1 m2]", got.MessageIDs, err)
	}
	other := key("", "m2", "different")
	if _, _, _, err := s.Update(ctx, "", "t1", &other, tasks.Whole, fn); !errors.Is(err, tasks.ErrMessageIDReused) {
		t.Fatalf("reused follow-up id: %v", err)
	}
}

// TestConcurrentWritesAreGrouped checks that many writers share commits
// and that a failing write does not take the others down with it.
func TestConcurrentWritesAreGrouped(t *testing.T) {
	s := MustOpen(t, "")
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("t%03d", i)
			_, _, errs[i] = s.Create(ctx, key("", id, id), newRecord(id, "", a2a.StateSubmitted, time.Now()), []tasks.Event{statusEvent(a2a.StateSubmitted)})
		}()
	}
	// Interleave failing updates: they must fail alone.
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, _, err := s.Update(ctx, "", "missing", nil, tasks.Whole, nil); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("update of a missing task: %v", err)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	active, _ := s.Active(ctx)
	if len(active) != n {
		t.Fatalf("active = %d, want %d", len(active), n)
	}
	commits, writes := s.Counts()
	if writes < n || commits >= writes {
		t.Fatalf("commits %d for %d writes: nothing was grouped", commits, writes)
	}
	t.Logf("%d writes in %d commits", writes, commits)
}

func TestExpireDeletesEverythingOfOldTerminalTasks(t *testing.T) {
	s := MustOpen(t, "")
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
		rec := newRecord(id, "o", c.st, c.at)
		rec.Task.History = []a2a.Message{{MessageID: "m" + id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}}
		rec.Task.Artifacts = []a2a.Artifact{{ArtifactID: "a" + id, Parts: []a2a.Part{a2a.TextPart("out")}}}
		rec.Input = json.RawMessage(`{}`)
		if _, _, err := s.Create(ctx, key("o", "m"+id, id), rec, []tasks.Event{statusEvent(c.st)}); err != nil {
			t.Fatal(err)
		}
	}
	cutoff := time.Now().Add(-24 * time.Hour)
	n, err := s.Expire(ctx, cutoff, 2)
	if err != nil || n != 2 {
		t.Fatalf("Expire(limit 2) = %d, %v; want 2", n, err)
	}
	n, err = s.Expire(ctx, cutoff, 10)
	if err != nil || n != 1 {
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
		if gone && len(evs) != 0 {
			t.Errorf("task %s: %d events left behind", id, len(evs))
		}
	}
	// Its idempotency key went with it: the message id is free again.
	if _, created, err := s.Create(ctx, key("o", "mt0", "new"), newRecord("t0b", "o", a2a.StateSubmitted, recent), nil); err != nil || !created {
		t.Fatalf("reusing an expired task's messageId: %v, created %v", err, created)
	}
	// Nothing of the deleted tasks is left in any bucket.
	err = s.DB().View(func(tx *bolt.Tx) error {
		// body: the 3 tasks kept have an event, a message, an artifact,
		// an input and a message id each; t0b its message id.
		for _, b := range []string{"owners", "idem", "expiry", "body"} {
			want := map[string]int{"owners": 4, "idem": 4, "expiry": 1, "body": 3*5 + 1}[b]
			if got := tx.Bucket([]byte(b)).Stats().KeyN; got != want {
				t.Errorf("bucket %s has %d keys, want %d", b, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenLockedFileFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	MustOpen(t, path)
	start := time.Now()
	_, err := boltstore.Open(path, boltstore.Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("second Open took %s", d)
	}
	want := "open task store " + path + ": store file is in use by another process (is another a2ad running on it?)"
	if err.Error() != want {
		t.Fatalf("error text:\n got %q\nwant %q", err, want)
	}
}

func TestClosedStoreRefusesWrites(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "a2ad.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, key("", "m", "m"), newRecord("t", "", a2a.StateSubmitted, time.Now()), nil); !errors.Is(err, tasks.ErrClosed) {
		t.Fatalf("Create after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestExpireWithACutoffBefore1970 is a retention longer than the time since
// 1970 ("keep forever"): it must delete nothing.
func TestExpireWithACutoffBefore1970(t *testing.T) {
	s := MustOpen(t, "")
	if _, _, err := s.Create(ctx, key("o", "m", "m"), newRecord("t", "o", a2a.StateCompleted, time.Now()), []tasks.Event{statusEvent(a2a.StateCompleted)}); err != nil {
		t.Fatal(err)
	}
	for _, cutoff := range []time.Time{time.Now().Add(-100 * 365 * 24 * time.Hour), {}, time.Unix(-1, 0)} {
		n, err := s.Expire(ctx, cutoff, 10)
		if err != nil || n != 0 {
			t.Fatalf("Expire(%s) deleted %d (%v), want 0", cutoff, n, err)
		}
	}
}

// TestUpdateWithoutEvents: an UpdateFunc that returns nil events writes
// nothing; one that returns an empty, non-nil slice writes the record's
// changes (the process group of its call) without an event, durably.
func TestUpdateWithoutEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	created, _, err := s.Create(ctx, key("alice", "m1", "x"), newRecord("t1", "alice", a2a.StateWorking, now), []tasks.Event{statusEvent(a2a.StateWorking)})
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
	check(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = MustOpen(t, path)
	got, err := s.Get(ctx, "alice", "t1", tasks.Whole)
	if err != nil || got.Group == nil || *got.Group != g {
		t.Fatalf("after reopening: group %+v, err %v; want %+v", got.Group, err, g)
	}
	if events, err := s.Events(ctx, "t1", 0); err != nil || len(events) != 1 {
		t.Fatalf("events: %d, %v; want the one of Create", len(events), err)
	}
}
