package boltstore_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// hookLog keeps what the store's hooks are told.
type hookLog struct {
	mu          sync.Mutex
	commits     int
	writes      int
	slow        int // commits said to take no time, or an hour
	transitions []string
}

func (h *hookLog) onCommit(writes int, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.commits++
	h.writes += writes
	if d <= 0 || d > time.Hour {
		h.slow++
	}
}

func (h *hookLog) onTransition(from, to a2a.TaskState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.transitions = append(h.transitions, fmt.Sprintf("%s>%s", from, to))
}

func openHooked(tb testing.TB, path string) (*boltstore.Store, *hookLog) {
	tb.Helper()
	h := &hookLog{}
	s, err := boltstore.Open(path, boltstore.Options{OnCommit: h.onCommit, OnTransition: h.onTransition})
	if err != nil {
		tb.Fatal(err)
	}
	return s, h
}

func TestHooksSeeCommitsAndTransitions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s, h := openHooked(t, path)
	now := time.Now()
	// Sixteen tasks created at once: their writes share commits.
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("t%02d", i)
			if _, _, err := s.Create(ctx, key("alice", id, id), newRecord(id, "alice", a2a.StateSubmitted, now),
				[]tasks.Event{statusEvent(a2a.StateSubmitted)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// A duplicate creates nothing: no transition.
	if _, created, err := s.Create(ctx, key("alice", "t00", "t00"), newRecord("x", "alice", a2a.StateSubmitted, now),
		[]tasks.Event{statusEvent(a2a.StateSubmitted)}); err != nil || created {
		t.Fatalf("duplicate Create: created %v, %v", created, err)
	}
	to := storetest.Flip
	for _, st := range []a2a.TaskState{a2a.StateWorking, a2a.StateWorking, a2a.StateInputRequired, a2a.StateCompleted} {
		if _, _, _, err := s.Update(ctx, "alice", "t00", nil, tasks.Whole, to(st)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := s.Update(ctx, "alice", "t01", nil, tasks.Whole, to(a2a.StateWorking)); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	created := 0
	var rest []string
	for _, tr := range h.transitions {
		if tr == ">submitted" {
			created++
		} else {
			rest = append(rest, tr)
		}
	}
	// working>working changed no state: no transition.
	want := []string{"submitted>working", "working>input-required", "input-required>completed", "submitted>working"}
	if created != 16 || !cmp.Equal(rest, want) {
		t.Errorf("transitions: %d created, then %v; want 16, then %v", created, rest, want)
	}
	// 17 creates (the duplicate's write finds its key) and 5 updates.
	if h.writes != 22 || h.commits < 1 || h.commits > 22 || h.slow != 0 {
		t.Errorf("commits %d (of %d writes, %d timed oddly); want 22 writes in 1 to 22 commits", h.commits, h.writes, h.slow)
	}
	h.mu.Unlock()

	states, err := s.ActiveStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[a2a.TaskState]int{a2a.StateSubmitted: 14, a2a.StateWorking: 1}; !cmp.Equal(states, want) {
		t.Errorf("ActiveStates = %v, want %v", states, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The counts are read back from the file.
	s = MustOpen(t, path)
	if again, err := s.ActiveStates(ctx); err != nil || !cmp.Equal(again, states) {
		t.Errorf("ActiveStates after reopening = %v, %v; want %v", again, err, states)
	}
	if n, err := s.DeadLetterCount(ctx); err != nil || n != 0 {
		t.Errorf("DeadLetterCount = %d, %v; want 0", n, err)
	}
}
