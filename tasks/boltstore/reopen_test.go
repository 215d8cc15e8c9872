package boltstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// waitFDs waits until n descriptors of this process are open on fi.
func waitFDs(tb testing.TB, fi os.FileInfo, n int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for testkit.FDsOn(tb, os.Getpid(), fi) < n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d descriptors on %s, want %d", testkit.FDsOn(tb, os.Getpid(), fi), fi.Name(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type opened struct {
	s   *boltstore.Store
	err error
}

// openInBackground starts Open on path, to wait for a lock.
func openInBackground(tb testing.TB, path string) <-chan opened {
	tb.Helper()
	ch := make(chan opened, 1)
	go func() {
		s, err := boltstore.Open(path, boltstore.Options{LockTimeout: 20 * time.Second})
		ch <- opened{s, err}
	}()
	tb.Cleanup(func() {
		select {
		case o := <-ch:
			if o.s != nil {
				o.s.Close()
			}
		default:
		}
	})
	return ch
}

// TestOpenWaitingOnCompactHoldsTheCopy is issue 13's race: a server's
// Open waits for the lock while `a2ad store compact` runs. Compact holds
// the original's lock until the copy has taken the store's name; the
// waiting Open, which opened the original, then finds the path names the
// copy, opens it again and holds the copy. A task written through it is
// in the file at the path, not in the original kept as .bak (which the
// tool tells the operator to delete).
func TestOpenWaitingOnCompactHoldsTheCopy(t *testing.T) {
	path := seedStore(t)
	original := testkit.Stat(t, path)
	var waiting <-chan opened
	boltstore.SetBeforeSwap(t, func() {
		// Compact holds the original's shared lock and the copy's
		// exclusive one: Open opens the original and waits.
		waiting = openInBackground(t, path)
		waitFDs(t, original, 2) // Compact's and Open's
	})
	if _, err := boltstore.Compact(path, "", time.Second); err != nil {
		t.Fatal(err)
	}
	var o opened
	select {
	case o = <-waiting:
	case <-time.After(20 * time.Second):
		t.Fatal("Open still waits after Compact returned")
	}
	if o.err != nil {
		t.Fatalf("Open that waited on Compact: %v", o.err)
	}
	if n := testkit.FDsOn(t, os.Getpid(), original); n != 0 {
		t.Errorf("%d descriptors still open on the original (now %s.bak)", n, path)
	}
	if n := testkit.FDsOn(t, os.Getpid(), testkit.Stat(t, path)); n != 1 {
		t.Errorf("%d descriptors open on the compacted file, want the store's 1", n)
	}
	rec := newRecord("t-new", "alice", a2a.StateWorking, seedTime)
	if _, _, err := o.s.Create(ctx, key("alice", "m-new", "new"), rec, []tasks.Event{statusEvent(a2a.StateWorking)}); err != nil {
		t.Fatal(err)
	}
	if err := o.s.Close(); err != nil {
		t.Fatal(err)
	}
	if !testkit.HasKey(t, path, "tasks", "t-new") {
		t.Errorf("the task written after the compact is not in %s", path)
	}
	if testkit.HasKey(t, path+".bak", "tasks", "t-new") {
		t.Errorf("the task written after the compact is in %s.bak", path)
	}
	if r := mustCheck(t, path); !r.Clean() || r.Tasks != 5 {
		t.Errorf("the store after the compact: %d tasks, problems %q", r.Tasks, problems(r))
	}
}

// TestOpenAndCheckWaitingOpenTheReplacedFile: a store file replaced
// (renamed over) while Open or Check waits for the lock another process
// holds is opened again: both read the file the path names when they get
// the lock, not the one they waited on.
func TestOpenAndCheckWaitingOpenTheReplacedFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait func(t *testing.T, path string) func() int // started before the swap; returns the tasks it sees
	}{
		{"Open", func(t *testing.T, path string) func() int {
			ch := openInBackground(t, path)
			return func() int {
				o := <-ch
				if o.err != nil {
					t.Fatalf("Open: %v", o.err)
				}
				defer o.s.Close()
				r, err := o.s.Check(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return r.Tasks
			}
		}},
		{"Check", func(t *testing.T, path string) func() int {
			ch := make(chan opened, 1)
			var r *boltstore.Report
			go func() {
				var err error
				r, err = boltstore.Check(path, 20*time.Second)
				ch <- opened{err: err}
			}()
			return func() int {
				if o := <-ch; o.err != nil {
					t.Fatalf("Check: %v", o.err)
				}
				return r.Tasks
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := seedStore(t) // 4 tasks
			other := filepath.Join(filepath.Dir(path), "other.db")
			seedWorking(t, other, 7)
			// Another process holds the store (bbolt's lock is per open
			// file, so this one counts as another).
			holder, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			original := testkit.Stat(t, path)
			tasksSeen := tc.wait(t, path)
			waitFDs(t, original, 2)
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
			if err := holder.Close(); err != nil {
				t.Fatal(err)
			}
			if n := tasksSeen(); n != 7 {
				t.Fatalf("%s saw %d tasks, want the 7 of the file that replaced the store", tc.name, n)
			}
		})
	}
}

// TestOpenGivesUpOnALockHeldPastItsTimeout: the re-open keeps one
// deadline, and a file still held when it passes is ErrLocked.
func TestOpenGivesUpOnALockHeldPastItsTimeout(t *testing.T) {
	path := seedStore(t)
	holder, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	start := time.Now()
	_, err = boltstore.Open(path, boltstore.Options{LockTimeout: 300 * time.Millisecond})
	if !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("Open of a held store = %v, want ErrLocked", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
		t.Errorf("Open gave up after %s, want about 300ms", d)
	}
	if n := testkit.FDsOn(t, os.Getpid(), testkit.Stat(t, path)); n != 1 {
		t.Errorf("%d descriptors open on the store after Open gave up, want the holder's 1", n)
	}
}
