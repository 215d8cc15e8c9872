package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// MustOpen opens a store in a temporary directory; it is checked for
// consistency and closed when the test ends.
func MustOpen(tb testing.TB, path string) *boltstore.Store {
	tb.Helper()
	return mustOpenWith(tb, path, boltstore.Options{})
}

func mustOpenWith(tb testing.TB, path string, opts boltstore.Options) *boltstore.Store {
	tb.Helper()
	if path == "" {
		path = filepath.Join(tb.TempDir(), "a2ad.db")
	}
	s, err := boltstore.Open(path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if s.Closed() {
			return // closed by the test, which checked it first
		}
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

// The suite's helpers, under the names these tests use.
var (
	key         = storetest.Key
	newRecord   = storetest.NewRecord
	statusEvent = storetest.StatusEvent
	create      = storetest.Create
	userMsg     = storetest.UserMessage
	setState    = storetest.FlipAt
)

// TestConformance runs the contracts every store keeps (tasks/storetest)
// on a real file, checked after each of them as MustOpen does.
func TestConformance(t *testing.T) { storetest.Run(t, openSubject) }

// TestConformanceCheckpointing runs the suite with a checkpoint after
// every group of writes, so that reads meet checkpoints as they commit
// (the layer being written to the file, then dropped).
func TestConformanceCheckpointing(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *storetest.Subject {
		return subjectWith(t, filepath.Join(t.TempDir(), "a2ad.db"), boltstore.Options{CheckpointEvery: time.Millisecond, CheckpointBytes: 1})
	})
}

// TestConformanceInMemory runs the suite with no checkpoint until Close
// (or a tool's Flush): every read merges the layers with the file.
func TestConformanceInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *storetest.Subject {
		return subjectWith(t, filepath.Join(t.TempDir(), "a2ad.db"), boltstore.Options{CheckpointEvery: time.Hour, CheckpointBytes: 1 << 40})
	})
}

// openSubject opens a new store for the suite.
func openSubject(t *testing.T) *storetest.Subject {
	return subjectAt(t, filepath.Join(t.TempDir(), "a2ad.db"))
}

// subjectAt opens the store at path for the suite.
func subjectAt(t *testing.T, path string) *storetest.Subject {
	return subjectWith(t, path, boltstore.Options{})
}

func subjectWith(t *testing.T, path string, opts boltstore.Options) *storetest.Subject {
	open := func(t *testing.T) *boltstore.Store { return mustOpenWith(t, path, opts) }
	return storetest.Reopening(t, open, check)
}

// TestConcurrentWritesAreGrouped checks that many writers share commits.
func TestConcurrentWritesAreGrouped(t *testing.T) {
	s := MustOpen(t, "")
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("t%03d", i)
			if _, _, err := s.Create(ctx, key("", id, id), newRecord(id, "", a2a.StateSubmitted, time.Now()), []tasks.Event{statusEvent(a2a.StateSubmitted)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	commits, writes := s.Counts()
	if writes < n || commits >= writes {
		t.Fatalf("commits %d for %d writes: nothing was grouped", commits, writes)
	}
	t.Logf("%d writes in %d commits", writes, commits)
}

// TestExpireLeavesNothingBehind: once retention deleted a task with a
// body of every kind, no bucket but meta holds a key (the suite checks
// what the API shows of it).
func TestExpireLeavesNothingBehind(t *testing.T) {
	s := MustOpen(t, seedBody(t))
	if _, _, _, err := s.Update(ctx, "o", "t-1", nil, tasks.Head, setState(a2a.StateCompleted, seedTime)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Expire(ctx, seedTime.Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("Expire = %d, %v; want 1", n, err)
	}
	view(t, s, func(tx *bolt.Tx) {
		_ = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if n := b.Stats().KeyN; n != 0 && string(name) != "meta" {
				t.Errorf("bucket %s holds %d keys", name, n)
			}
			return nil
		})
	})
}

// view reads s in one transaction, and fails tb if it cannot.
func view(tb testing.TB, s *boltstore.Store, fn func(tx *bolt.Tx)) {
	tb.Helper()
	if err := s.DB().View(func(tx *bolt.Tx) error { fn(tx); return nil }); err != nil {
		tb.Fatal(err)
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
