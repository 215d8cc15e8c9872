package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// The contracts of leases (tasks.Leases): a task's runner is kept with
// it, a task is an orphan once its runner holds no lease, and of replicas
// that adopt one orphan at once exactly one does.

// testRunnerIsKept: the runner a Create or an Update sets is what reads
// return, and an Update that leaves it keeps it.
func testRunnerIsKept(t *testing.T, sub *Subject) {
	s := sub.Store
	r := NewRecord("t1", "alice", a2a.StateSubmitted, time.Now())
	r.Runner = "replica-a"
	Create(t, s, r)
	runner := func(want string) {
		t.Helper()
		got, err := s.Get(ctx, "alice", "t1", tasks.Head)
		if err != nil || got.Runner != want {
			t.Fatalf("Get: runner %q, %v; want %q", got.Runner, err, want)
		}
	}
	runner("replica-a")
	if got := MustUpdate(t, s, "alice", "t1", Flip(a2a.StateWorking)); got.Runner != "replica-a" {
		t.Fatalf("an Update that leaves the runner returns runner %q, want replica-a", got.Runner)
	}
	runner("replica-a")
	got := MustUpdate(t, s, "alice", "t1", func(r *tasks.Record) ([]tasks.Event, error) {
		if r.Runner != "replica-a" {
			return nil, fmt.Errorf("the UpdateFunc reads runner %q, want replica-a", r.Runner)
		}
		r.Runner = "replica-b"
		return []tasks.Event{}, nil // the runner alone changes
	})
	if got.Runner != "replica-b" {
		t.Fatalf("Update returns runner %q, want replica-b", got.Runner)
	}
	runner("replica-b")
	MustUpdate(t, s, "alice", "t1", func(r *tasks.Record) ([]tasks.Event, error) {
		r.Runner = ""
		return Flip(a2a.StateCompleted)(r)
	})
	runner("")
}

// testOrphansHaveNoLiveLease: Orphans returns the submitted and working
// tasks whose runner holds no lease (never held, ended, lapsed at least
// grace ago) or that have none, with their input, up to its limit; a task
// whose runner's lease lives or lapsed less than grace ago, and a task in
// any other state, is no orphan.
func testOrphansHaveNoLiveLease(t *testing.T, sub *Subject) {
	s := sub.Store
	now := time.Now()
	for _, c := range []struct {
		id     string
		st     a2a.TaskState
		runner string
	}{
		{"live", a2a.StateWorking, "replica-live"},
		{"never", a2a.StateWorking, "replica-never"},
		{"none", a2a.StateSubmitted, ""},
		{"ended", a2a.StateSubmitted, "replica-ended"},
		{"lapsing", a2a.StateWorking, "replica-lapsing"},
		{"waiting", a2a.StateInputRequired, ""},
		{"done", a2a.StateCompleted, ""},
	} {
		r := NewRecord(c.id, "alice", c.st, now)
		r.Runner, r.Input = c.runner, json.RawMessage(`{"id":"`+c.id+`"}`)
		Create(t, s, r)
	}
	beat := func(replica string, ttl time.Duration) {
		t.Helper()
		if err := s.Heartbeat(ctx, replica, ttl); err != nil {
			t.Fatalf("Heartbeat(%s, %v): %v", replica, ttl, err)
		}
	}
	var orphansAfter func(grace time.Duration, limit int, want ...string)
	orphans := func(limit int, want ...string) {
		t.Helper()
		orphansAfter(0, limit, want...)
	}
	orphansAfter = func(grace time.Duration, limit int, want ...string) {
		t.Helper()
		got, err := s.Orphans(ctx, grace, limit)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.Task.ID)
			if string(r.Input) != `{"id":"`+r.Task.ID+`"}` {
				t.Errorf("orphan %s: input %s", r.Task.ID, r.Input)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, want) {
			t.Fatalf("Orphans(%v, %d) = %v, want %v", grace, limit, ids, want)
		}
	}
	beat("replica-live", time.Minute)
	beat("replica-ended", time.Minute)
	beat("replica-lapsing", 300*time.Millisecond)
	orphans(100, "never", "none")
	beat("replica-ended", 0)
	orphans(100, "ended", "never", "none")
	time.Sleep(600 * time.Millisecond)
	orphans(100, "ended", "lapsing", "never", "none")
	// A lease that lapsed less than grace ago still holds its tasks; one
	// never held or ended holds none.
	orphansAfter(time.Minute, 100, "ended", "never", "none")
	orphansAfter(200*time.Millisecond, 100, "ended", "lapsing", "never", "none")
	beat("replica-lapsing", time.Minute) // back: its lease holds again
	orphans(100, "ended", "never", "none")
	if got, err := s.Orphans(ctx, 0, 2); err != nil || len(got) != 2 {
		t.Fatalf("Orphans(2) = %d tasks, %v; want 2", len(got), err)
	}
	sub.check(t)
}

// errTaken refuses an adoption of a task another replica adopted first.
var errTaken = errors.New("taken over by another replica")

// testAdoptionIsOnce: replicas that adopt one orphan at once, each with
// an Update that changes only the runner if it is still the dead one,
// are refused but for one, whose runner the task keeps.
func testAdoptionIsOnce(t *testing.T, sub *Subject) {
	s := sub.Store
	r := NewRecord("t1", "alice", a2a.StateWorking, time.Now())
	r.Runner = "replica-dead"
	Create(t, s, r)
	const n = 8
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		won []string
	)
	for i := range n {
		replica := fmt.Sprintf("replica-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _, err := s.Update(ctx, "alice", "t1", nil, tasks.Head, func(r *tasks.Record) ([]tasks.Event, error) {
				if r.Runner != "replica-dead" {
					return nil, errTaken
				}
				r.Runner = replica
				return []tasks.Event{}, nil
			})
			switch {
			case err == nil:
				mu.Lock()
				won = append(won, replica)
				mu.Unlock()
			case !errors.Is(err, errTaken):
				t.Errorf("%s: %v", replica, err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d replicas adopted the task (%v), want 1", len(won), won)
	}
	if got, err := s.Get(ctx, "alice", "t1", tasks.Head); err != nil || got.Runner != won[0] {
		t.Fatalf("the task's runner is %q (%v), want the winner %s", got.Runner, err, won[0])
	}
	sub.check(t)
}
