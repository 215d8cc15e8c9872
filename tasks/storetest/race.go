package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// The contracts of concurrent writers: nothing is lost, nothing is
// doubled. Run them under -race.
var raceContracts = []contract{
	{"RacingUpdatesAreNeverLost", testRacingUpdatesAreNeverLost},
	{"RacingCreatesOfOneKeyMakeOneTask", testRacingCreatesOfOneKeyMakeOneTask},
	{"FailingWritesFailAlone", testFailingWritesFailAlone},
	{"PushConfigsNeverLoseAConcurrentChange", testPushConfigsNeverLoseAConcurrentChange},
	{"UpdatesRacingWebhookChangesKeepBoth", testUpdatesRacingWebhookChangesKeepBoth},
}

// count is an UpdateFunc that adds one to the task's metadata counter "n"
// (a change computed from what it read, which a lost update would undo),
// with a status event.
func count(r *tasks.Record) ([]tasks.Event, error) {
	n, _ := r.Task.Metadata["n"].(float64) // JSON's number
	r.Task.Metadata = map[string]any{"n": n + 1}
	return []tasks.Event{StatusEvent(a2a.StateWorking)}, nil
}

// counter is the task's metadata counter "n".
func counter(r *tasks.Record) int {
	switch n := r.Task.Metadata["n"].(type) {
	case float64:
		return int(n)
	case int:
		return n
	}
	return 0
}

// testRacingUpdatesAreNeverLost: updates racing on one task are applied
// one after the other, each on what the last left (or refused with
// ErrConflict), never lost: each one that returns nil is in the task, and
// its events have their own sequence numbers, in the order of the updates.
func testRacingUpdatesAreNeverLost(t *testing.T, sub *Subject) {
	s := sub.Store
	Create(t, s, NewRecord("t", "o", a2a.StateWorking, time.Now()))
	const writers, each = 8, 10
	var (
		mu   sync.Mutex
		seen = map[int]uint64{} // counter after an update: its last event's seq
	)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				rec, evs, _, err := s.Update(ctx, "o", "t", nil, tasks.Head, count)
				if errors.Is(err, tasks.ErrConflict) {
					continue
				}
				if err != nil || len(evs) != 1 || evs[0].Seq != rec.Seq {
					t.Errorf("Update = %v, events %+v, seq %d", err, evs, rec.Seq)
					return
				}
				mu.Lock()
				if _, twice := seen[counter(rec)]; twice {
					t.Errorf("two updates left counter %d: one was lost", counter(rec))
				}
				seen[counter(rec)] = rec.Seq
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	got, err := s.Get(ctx, "o", "t", tasks.Head)
	if err != nil || counter(got) != len(seen) || got.Seq != uint64(len(seen))+1 {
		t.Fatalf("after %d updates: counter %d, seq %d, %v", len(seen), counter(got), got.Seq, err)
	}
	for n, seq := range seen {
		if seq != uint64(n)+1 {
			t.Errorf("the update that left counter %d wrote event %d, want %d", n, seq, n+1)
		}
	}
	evs, err := s.Events(ctx, "t", 0)
	if err != nil || len(evs) != len(seen)+1 {
		t.Fatalf("%d events, %v; want %d", len(evs), err, len(seen)+1)
	}
	for i, e := range evs {
		if e.Seq != uint64(i)+1 {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if len(seen) < writers*each/2 {
		t.Errorf("%d of %d racing updates applied", len(seen), writers*each)
	}
	sub.check(t)
}

// testRacingCreatesOfOneKeyMakeOneTask: creates racing with one
// idempotency key store one task, and every one of them answers with it.
func testRacingCreatesOfOneKeyMakeOneTask(t *testing.T, sub *Subject) {
	s := sub.Store
	const n = 16
	ids := make([]string, n)
	made := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, created, err := s.Create(ctx, Key("o", "m", "same"), NewRecord(fmt.Sprintf("t%02d", i), "o", a2a.StateSubmitted, time.Now()),
				[]tasks.Event{StatusEvent(a2a.StateSubmitted)})
			if err != nil {
				t.Errorf("Create %d: %v", i, err)
				return
			}
			ids[i], made[i] = r.Task.ID, created
		})
	}
	wg.Wait()
	winner := slices.Index(made, true)
	if winner < 0 || slices.Contains(made[winner+1:], true) {
		t.Fatalf("created: %v; want exactly one", made)
	}
	for i, id := range ids {
		if id != ids[winner] {
			t.Errorf("Create %d answered %q, want the one task %q", i, id, ids[winner])
		}
	}
	if got := ListIDs(t, s, "o", tasks.ListFilter{}, 10); !slices.Equal(got, ids[winner:winner+1]) {
		t.Errorf("owner's tasks = %v, want [%s]", got, ids[winner])
	}
	if got, err := s.Lookup(ctx, Key("o", "m", "same")); err != nil || got.Task.ID != ids[winner] {
		t.Errorf("Lookup = %v, %v", got, err)
	}
	sub.check(t)
}

// testFailingWritesFailAlone: many writers at once, some of them failing:
// each failure is its own, every other write lands.
func testFailingWritesFailAlone(t *testing.T, sub *Subject) {
	s := sub.Store
	const n = 100
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("t%03d", i)
			_, _, errs[i] = s.Create(ctx, Key("", id, id), NewRecord(id, "", a2a.StateSubmitted, time.Now()), []tasks.Event{StatusEvent(a2a.StateSubmitted)})
		})
	}
	boom := errors.New("boom")
	for i := range 20 {
		wg.Go(func() {
			if _, _, _, err := s.Update(ctx, "", "missing", nil, tasks.Whole, count); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("update of a missing task: %v", err)
			}
			id := fmt.Sprintf("t%03d", i)
			fail := func(*tasks.Record) ([]tasks.Event, error) { return nil, boom }
			if _, _, _, err := s.Update(ctx, "", id, nil, tasks.Whole, fail); !errors.Is(err, boom) && !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("failing update: %v", err)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	if active, err := s.Active(ctx); err != nil || len(active) != n {
		t.Fatalf("active = %d, %v; want %d", len(active), err, n)
	}
	sub.check(t)
}

func testPushConfigsNeverLoseAConcurrentChange(t *testing.T, sub *Subject) {
	s := sub.Store
	Create(t, s, NewRecord("t", "o", a2a.StateWorking, time.Now()))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, err := s.PushConfigs(ctx, "o", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) {
				return append(c, a2a.PushConfig{ID: fmt.Sprint(i), URL: "https://x/"}), nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, _ := s.PushConfigs(ctx, "o", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) { return c, nil })
	if len(got) != 20 {
		t.Fatalf("%d configs after 20 concurrent adds", len(got))
	}
	if _, err := s.PushConfigs(ctx, "mallory", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) { return c, nil }); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("foreign task: %v", err)
	}
	sub.check(t)
}

// testUpdatesRacingWebhookChangesKeepBoth: transitions racing webhook
// changes never write back a record read before the other's change.
func testUpdatesRacingWebhookChangesKeepBoth(t *testing.T, sub *Subject) {
	s := sub.Store
	Create(t, s, NewRecord("t", "o", a2a.StateWorking, time.Now()))
	const n = 10
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := s.PushConfigs(ctx, "o", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) {
				return append(c, a2a.PushConfig{ID: fmt.Sprint(i), URL: "https://x/"}), nil
			}); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			for {
				_, _, _, err := s.Update(ctx, "o", "t", nil, tasks.Head, count)
				if !errors.Is(err, tasks.ErrConflict) {
					if err != nil {
						t.Error(err)
					}
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := s.Get(ctx, "o", "t", tasks.Head)
	if err != nil || len(got.PushConfigs) != n || counter(got) != n {
		t.Fatalf("after the race: %d webhooks, counter %d, %v; want %d of each", len(got.PushConfigs), counter(got), err, n)
	}
	sub.check(t)
}
