package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// The listing index layout, written out again here so that a change to it
// fails these tests (and `a2ad store check`, which verifies the same).

func wantListKey(r *tasks.Record) []byte {
	k := binary.AppendUvarint(nil, uint64(len(r.Owner)))
	k = append(k, r.Owner...)
	k = binary.BigEndian.AppendUint64(k, tasks.ListTime(r))
	return append(k, r.Task.ID...)
}

func wantListValue(r *tasks.Record) []byte {
	v := binary.BigEndian.AppendUint64(nil, tasks.StatusTime(r.Task.Status))
	v = binary.AppendUvarint(v, uint64(len(r.Task.Status.State)))
	v = append(v, r.Task.Status.State...)
	return append(v, r.Task.ContextID...)
}

// checkListing checks the listing index against the tasks: every task has
// exactly one entry in recent, with its key and value; every entry is a
// task's; counts holds each owner's number of entries, and no zero.
func checkListing(tb testing.TB, db *bolt.DB) {
	tb.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		want := map[string][]byte{}
		counts := map[string]uint64{}
		err := tx.Bucket([]byte("tasks")).ForEach(func(k, v []byte) error {
			r, _, err := headOf(v)
			if err != nil {
				return fmt.Errorf("task %q: %w", k, err)
			}
			want[string(wantListKey(r))] = wantListValue(r)
			owner := binary.AppendUvarint(nil, uint64(len(r.Owner)))
			counts[string(append(owner, r.Owner...))]++
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket([]byte("recent")).ForEach(func(k, v []byte) error {
			w, ok := want[string(k)]
			switch {
			case !ok:
				tb.Errorf("listing entry %q belongs to no task", k)
			case !bytes.Equal(v, w):
				tb.Errorf("listing entry %q = %x, want %x", k, v, w)
			}
			delete(want, string(k))
			return nil
		})
		if err != nil {
			return err
		}
		for k := range want {
			tb.Errorf("no listing entry %q", k)
		}
		return tx.Bucket([]byte("counts")).ForEach(func(k, v []byte) error {
			if len(v) != 8 || binary.BigEndian.Uint64(v) != counts[string(k)] || counts[string(k)] == 0 {
				tb.Errorf("count of %q = %x, want %d", k, v, counts[string(k)])
			}
			delete(counts, string(k))
			return nil
		})
	})
	if err != nil {
		tb.Errorf("listing check: %v", err)
	}
}

// listIDs lists every task of owner that matches f, limit per page, and
// checks the total on each page and the cursor on the last.
func listIDs(tb testing.TB, s *boltstore.Store, owner string, f tasks.ListFilter, limit int) []string {
	tb.Helper()
	var (
		ids   []string
		after *tasks.Cursor
		total = -1
	)
	for page := 0; ; page++ {
		recs, n, next, err := s.List(ctx, owner, f, after, limit, tasks.Whole)
		if err != nil {
			tb.Fatalf("List page %d: %v", page, err)
		}
		if total >= 0 && n != total {
			tb.Fatalf("page %d: total %d, was %d", page, n, total)
		}
		total = n
		if len(recs) > limit {
			tb.Fatalf("page %d: %d tasks, limit %d", page, len(recs), limit)
		}
		for _, r := range recs {
			if r.Owner != owner {
				tb.Fatalf("page %d: task %q of owner %q", page, r.Task.ID, r.Owner)
			}
			ids = append(ids, r.Task.ID)
		}
		if next == nil {
			break
		}
		if len(recs) != limit {
			tb.Fatalf("page %d: %d tasks and a next cursor, limit %d", page, len(recs), limit)
		}
		after = next
	}
	if len(ids) != total {
		tb.Fatalf("listed %d tasks, total %d", len(ids), total)
	}
	return ids
}

func create(tb testing.TB, s *boltstore.Store, r *tasks.Record) {
	tb.Helper()
	if _, created, err := s.Create(ctx, key(r.Owner, "m-"+r.Task.ID, r.Task.ID), r, []tasks.Event{statusEvent(r.State())}); err != nil || !created {
		tb.Fatalf("Create %q: %v, created %v", r.Task.ID, err, created)
	}
}

func TestListingIndexFollowsEveryWrite(t *testing.T) {
	s := MustOpen(t, "")
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		r := newRecord(fmt.Sprintf("t%d", i), "alice", a2a.StateWorking, base.Add(time.Duration(i)*time.Second))
		r.Task.Status.Timestamp = a2a.Timestamp(r.UpdatedAt)
		create(t, s, r)
	}
	create(t, s, newRecord("b0", "bob", a2a.StateSubmitted, base))
	checkListing(t, s.DB())
	if got := listIDs(t, s, "alice", tasks.ListFilter{}, 2); !slices.Equal(got, []string{"t4", "t3", "t2", "t1", "t0"}) {
		t.Fatalf("alice's tasks = %v, want newest first", got)
	}

	// An update moves the task to the top, with its new state.
	if _, _, _, err := s.Update(ctx, "alice", "t1", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.UpdatedAt = base.Add(time.Minute)
		r.Task.Status = a2a.TaskStatus{State: a2a.StateCompleted, Timestamp: a2a.Timestamp(r.UpdatedAt)}
		return []tasks.Event{statusEvent(a2a.StateCompleted)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	checkListing(t, s.DB())
	if got := listIDs(t, s, "alice", tasks.ListFilter{}, 10); !slices.Equal(got, []string{"t1", "t4", "t3", "t2", "t0"}) {
		t.Fatalf("after the update = %v, want t1 first", got)
	}
	if got := listIDs(t, s, "alice", tasks.ListFilter{State: a2a.StateCompleted}, 10); !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("completed = %v, want [t1]", got)
	}
	// An update that changes nothing the index holds leaves it as it was;
	// so does a change of webhooks.
	if _, _, _, err := s.Update(ctx, "alice", "t2", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		return []tasks.Event{{Artifact: &a2a.Artifact{ArtifactID: "a"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PushConfigs(ctx, "alice", "t3", func([]a2a.PushConfig) ([]a2a.PushConfig, error) {
		return []a2a.PushConfig{{ID: "p", URL: "https://example.com/hook"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	checkListing(t, s.DB())

	// Retention deletes the entry and counts it out.
	if n, err := s.Expire(ctx, base.Add(2*time.Minute), 10); err != nil || n != 1 {
		t.Fatalf("Expire = %d, %v; want 1", n, err)
	}
	checkListing(t, s.DB())
	if got := listIDs(t, s, "alice", tasks.ListFilter{}, 10); !slices.Equal(got, []string{"t4", "t3", "t2", "t0"}) {
		t.Fatalf("after expiry = %v", got)
	}
	// The last task of an owner takes its count with it.
	if _, _, _, err := s.Update(ctx, "bob", "b0", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = a2a.StateFailed
		return []tasks.Event{statusEvent(a2a.StateFailed)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Expire(ctx, base.Add(2*time.Minute), 10); err != nil || n != 1 {
		t.Fatalf("Expire bob = %d, %v; want 1", n, err)
	}
	checkListing(t, s.DB())
	if err := s.DB().View(func(tx *bolt.Tx) error {
		if n := tx.Bucket([]byte("counts")).Stats().KeyN; n != 1 {
			t.Errorf("counts has %d keys, want 1 (alice)", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if recs, total, next, err := s.List(ctx, "bob", tasks.ListFilter{}, nil, 10, tasks.Whole); err != nil || len(recs) != 0 || total != 0 || next != nil {
		t.Fatalf("bob after expiry: %d tasks, total %d, next %v, err %v", len(recs), total, next, err)
	}
}

func TestListOrdersTiesByIDAndPagesThroughThem(t *testing.T) {
	s := MustOpen(t, "")
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var want []string
	for i := range 12 {
		id := fmt.Sprintf("tie-%02d", i)
		create(t, s, newRecord(id, "o", a2a.StateWorking, at))
		want = append([]string{id}, want...)
	}
	// One newer and one older around the ties.
	create(t, s, newRecord("newer", "o", a2a.StateWorking, at.Add(time.Nanosecond)))
	create(t, s, newRecord("older", "o", a2a.StateWorking, at.Add(-time.Nanosecond)))
	want = append(append([]string{"newer"}, want...), "older")
	for _, limit := range []int{1, 2, 5, 13, 14, 100} {
		if got := listIDs(t, s, "o", tasks.ListFilter{}, limit); !slices.Equal(got, want) {
			t.Errorf("limit %d: %v\nwant %v", limit, got, want)
		}
		if got := listIDs(t, s, "o", tasks.ListFilter{State: a2a.StateWorking}, limit); !slices.Equal(got, want) {
			t.Errorf("filtered, limit %d: %v\nwant %v", limit, got, want)
		}
	}
}

// idRunes are code points whose UTF-8 encodings, together, hold every
// byte that can occur in a JSON string (all but 0xc0, 0xc1 and 0xf5 to
// 0xff): ids are JSON strings, so no other byte reaches the store.
func idRunes() []rune {
	var rs []rune
	for r := rune(0); r < 0xc0; r++ { // ASCII, then 0xc2 0x80..0xbf
		rs = append(rs, r)
	}
	for lead := rune(0xc3); lead <= 0xdf; lead++ {
		rs = append(rs, (lead&0x1f)<<6)
	}
	for lead := rune(0xe0); lead <= 0xef; lead++ {
		rs = append(rs, max(0x800, (lead&0x0f)<<12))
	}
	rs = append(rs, 0x10000, 0x40000, 0x80000, 0xc0000, 0x100000)
	return rs
}

// TestListIDsAndOwnersWithAnyBytes lists tasks whose ids and owners hold
// every byte a JSON string can, including those a separator-based cursor
// would split on, and owners that are prefixes of each other.
func TestListIDsAndOwnersWithAnyBytes(t *testing.T) {
	s := MustOpen(t, "")
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
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
			r := newRecord(id, owner, a2a.StateWorking, at.Add(time.Duration(i%7)*time.Second))
			r.Task.Status.Timestamp = a2a.Timestamp(r.UpdatedAt)
			create(t, s, r)
			want[owner] = append(want[owner], id)
		}
	}
	if len(seenBytes) != 256-2-11 {
		t.Fatalf("ids hold %d distinct bytes, want every one of the 243 a JSON string can", len(seenBytes))
	}
	checkListing(t, s.DB())
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
			if got := listIDs(t, s, owner, tasks.ListFilter{}, limit); !slices.Equal(got, w) {
				t.Errorf("owner %q limit %d: %q\nwant %q", owner, limit, got, w)
			}
		}
		if got := listIDs(t, s, owner, tasks.ListFilter{ContextID: "ctx-" + w[3]}, 1); !slices.Equal(got, w[3:4]) {
			t.Errorf("owner %q by context: %q, want %q", owner, got, w[3:4])
		}
	}
}

func TestListFilters(t *testing.T) {
	s := MustOpen(t, "")
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	type spec struct {
		id, ctx string
		st      a2a.TaskState
		sec     int
	}
	specs := []spec{
		{"a", "c1", a2a.StateCompleted, 1}, {"b", "c1", a2a.StateWorking, 2}, {"c", "c2", a2a.StateCompleted, 3},
		{"d", "c2", a2a.StateFailed, 4}, {"e", "c1", a2a.StateCompleted, 5}, {"f", "c3", a2a.StateInputRequired, 6},
	}
	for _, sp := range specs {
		r := newRecord(sp.id, "o", sp.st, base.Add(time.Duration(sp.sec)*time.Second))
		r.Task.ContextID = sp.ctx
		r.Task.Status.Timestamp = a2a.Timestamp(r.UpdatedAt)
		create(t, s, r)
		// A task of another owner matching every filter is never listed.
		x := newRecord("x-"+sp.id, "other", sp.st, r.UpdatedAt)
		x.Task.ContextID, x.Task.Status.Timestamp = sp.ctx, r.Task.Status.Timestamp
		create(t, s, x)
	}
	// A task whose status timestamp is older than its update (an artifact
	// came later): the time filter reads the status time.
	late := newRecord("g", "o", a2a.StateWorking, base.Add(10*time.Second))
	late.Task.ContextID, late.Task.Status.Timestamp = "c3", a2a.Timestamp(base.Add(time.Second))
	create(t, s, late)

	tests := []struct {
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
	}
	for _, tc := range tests {
		for _, limit := range []int{1, 2, 100} {
			if got := listIDs(t, s, "o", tc.f, limit); !slices.Equal(got, tc.want) {
				t.Errorf("List(%+v, limit %d) = %v, want %v", tc.f, limit, got, tc.want)
			}
		}
	}
}

// TestListCursorIsStableUnderInserts: tasks created or updated between
// pages go above the cursor; later pages neither repeat nor skip a task.
func TestListCursorIsStableUnderInserts(t *testing.T) {
	s := MustOpen(t, "")
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		create(t, s, newRecord(fmt.Sprintf("t%d", i), "o", a2a.StateWorking, base.Add(time.Duration(i)*time.Second)))
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
		create(t, s, newRecord(fmt.Sprintf("new%d", i), "o", a2a.StateWorking, base.Add(time.Hour+time.Duration(i))))
	}
	// t1, not yet listed, is updated: it moves above the cursor.
	if _, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.UpdatedAt = base.Add(2 * time.Hour)
		return []tasks.Event{statusEvent(a2a.StateWorking)}, nil
	}); err != nil {
		t.Fatal(err)
	}
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

// writeSchema2 writes a store file as schema 2 left it: the buckets of
// that version, without the listing index.
func writeSchema2(tb testing.TB, path string, recs []*tasks.Record) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		bs := map[string]*bolt.Bucket{}
		for _, name := range []string{"tasks", "events", "active", "owners", "idem", "expiry", "meta", "outbox", "dead"} {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			bs[name] = b
		}
		for _, r := range recs {
			r.Seq = 1
			r.MessageIDs = []string{"m-" + r.Task.ID}
			j, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if err := bs["tasks"].Put([]byte(r.Task.ID), append(binary.BigEndian.AppendUint64(nil, r.Seq), j...)); err != nil {
				return err
			}
			ev, _ := json.Marshal(tasks.Event{Seq: 1, Status: &r.Task.Status})
			if err := bs["events"].Put(binary.BigEndian.AppendUint64(append([]byte(r.Task.ID), 0), 1), ev); err != nil {
				return err
			}
			owner := append(binary.AppendUvarint(nil, uint64(len(r.Owner))), r.Owner...)
			if err := bs["owners"].Put(append(slices.Clone(owner), r.Task.ID...), nil); err != nil {
				return err
			}
			idem := append(append([]byte(r.Task.ID), 0), make([]byte, 32)...)
			if err := bs["idem"].Put(append(slices.Clone(owner), r.MessageIDs[0]...), idem); err != nil {
				return err
			}
			if r.State().Terminal() {
				err = bs["expiry"].Put(append(binary.BigEndian.AppendUint64(nil, uint64(r.UpdatedAt.UnixNano())), r.Task.ID...), nil)
			} else {
				err = bs["active"].Put([]byte(r.Task.ID), nil)
			}
			if err != nil {
				return err
			}
		}
		return bs["meta"].Put([]byte("schema"), []byte("2"))
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func TestOpenMigratesSchema2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var recs []*tasks.Record
	for i := range 30 {
		st := []a2a.TaskState{a2a.StateCompleted, a2a.StateWorking, a2a.StateInputRequired}[i%3]
		r := newRecord(fmt.Sprintf("t%02d", i), []string{"alice", "bob"}[i%2], st, base.Add(time.Duration(i)*time.Second))
		r.Task.Status.Timestamp = a2a.Timestamp(r.UpdatedAt)
		recs = append(recs, r)
	}
	writeSchema2(t, path, recs)

	s := MustOpen(t, path)
	checkListing(t, s.DB())
	if err := s.DB().View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("schema")); string(v) != "5" {
			t.Errorf("schema after open = %q, want \"5\"", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var wantAlice, wantBobDone []string
	for i := 29; i >= 0; i-- {
		if i%2 == 0 {
			wantAlice = append(wantAlice, fmt.Sprintf("t%02d", i))
		} else if i%3 == 0 {
			wantBobDone = append(wantBobDone, fmt.Sprintf("t%02d", i))
		}
	}
	if got := listIDs(t, s, "alice", tasks.ListFilter{}, 4); !slices.Equal(got, wantAlice) {
		t.Errorf("alice after migration = %v\nwant %v", got, wantAlice)
	}
	if got := listIDs(t, s, "bob", tasks.ListFilter{State: a2a.StateCompleted}, 2); !slices.Equal(got, wantBobDone) {
		t.Errorf("bob's completed after migration = %v\nwant %v", got, wantBobDone)
	}
	// The migrated store goes on as a schema 5 one.
	r := newRecord("t99", "alice", a2a.StateWorking, base.Add(time.Hour))
	create(t, s, r)
	if got := listIDs(t, s, "alice", tasks.ListFilter{}, 100); len(got) != 16 || got[0] != "t99" {
		t.Errorf("alice after a create = %v", got)
	}
	if n, err := s.Expire(ctx, base.Add(time.Hour), 100); err != nil || n != 10 {
		t.Fatalf("Expire after migration = %d, %v; want 10", n, err)
	}
	checkListing(t, s.DB())
}

func TestOpenRejectsUnknownSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		return b.Put([]byte("schema"), []byte("9"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = boltstore.Open(path, boltstore.Options{})
	want := `open task store ` + path + `: store schema version "9" is not supported (want "5")`
	if err == nil || err.Error() != want {
		t.Fatalf("Open = %v, want %s", err, want)
	}
}

func TestListRefusesACanceledContext(t *testing.T) {
	s := MustOpen(t, "")
	c, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, _, err := s.List(c, "o", tasks.ListFilter{}, nil, 10, tasks.Whole); !errors.Is(err, context.Canceled) {
		t.Fatalf("List on a canceled context: %v", err)
	}
}
