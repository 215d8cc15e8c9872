package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/push"
	"github.com/a2ad/a2ad/tasks"
)

// The contracts of writers that race, overreach or come too late:
// concurrent updates and creates, quotas, a closed store, a canceled
// context.

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

// quotaKey is the key of owner's message msgID sent under quota q.
func quotaKey(owner, msgID string, q tasks.Quota) tasks.IdemKey {
	k := Key(owner, msgID, msgID)
	k.Quota = q
	return k
}

// refused fails tb unless err is a *tasks.QuotaError, and returns it.
func refused(tb testing.TB, what string, err error) *tasks.QuotaError {
	tb.Helper()
	var qe *tasks.QuotaError
	if !errors.As(err, &qe) || !errors.Is(err, tasks.ErrQuotaExceeded) {
		tb.Fatalf("%s = %v, want a *QuotaError", what, err)
	}
	return qe
}

// message is an UpdateFunc that appends a message of n bytes.
func message(n int) tasks.UpdateFunc {
	return func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.History = append(r.Task.History, UserMessage("x", strings.Repeat("y", n)))
		return []tasks.Event{StatusEvent(a2a.StateWorking)}, nil
	}
}

// testQuotaRefusesAndStoresNothing: a new task or a message past the
// owner's quota is a *QuotaError with the numbers, and stores nothing (no
// task, no message, no event, no idempotency key, no usage); other
// owners, writes without a key and retries of bound keys go on.
func testQuotaRefusesAndStoresNothing(t *testing.T, sub *Subject) {
	s := sub.Store
	now := time.Now()
	two := tasks.Quota{Tasks: 2}
	for _, id := range []string{"t-0", "t-1"} {
		if _, _, err := s.Create(ctx, quotaKey("alice", "m-"+id, two), NewRecord(id, "alice", a2a.StateInputRequired, now),
			[]tasks.Event{StatusEvent(a2a.StateInputRequired)}); err != nil {
			t.Fatal(err)
		}
	}
	third := quotaKey("alice", "m-t-2", two)
	_, _, err := s.Create(ctx, third, NewRecord("t-2", "alice", a2a.StateSubmitted, now), []tasks.Event{StatusEvent(a2a.StateSubmitted)})
	if qe := refused(t, "third task of a 2-task quota", err); *qe != (tasks.QuotaError{Which: tasks.QuotaTasks, Used: 2, Limit: 2}) {
		t.Fatalf("third task of a 2-task quota = %+v", *qe)
	}
	if _, err := s.Lookup(ctx, third); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("Lookup of the refused message = %v, want ErrNotFound (not bound)", err)
	}
	if _, n, _, err := s.List(ctx, "alice", tasks.ListFilter{}, nil, 10, tasks.Head); err != nil || n != 2 {
		t.Fatalf("alice lists %d tasks after a refused create (%v), want 2", n, err)
	}
	// A retry of a message the store took is answered, quota or not.
	if got, created, err := s.Create(ctx, quotaKey("alice", "m-t-0", two), NewRecord("t-x", "alice", a2a.StateSubmitted, now), nil); err != nil || created || got.Task.ID != "t-0" {
		t.Fatalf("retry over the quota = %v, created %v, %v; want t-0, not created", got, created, err)
	}
	// Another owner is not counted against alice.
	if _, _, err := s.Create(ctx, quotaKey("bob", "m-b", two), NewRecord("b-0", "bob", a2a.StateSubmitted, now), nil); err != nil {
		t.Fatalf("bob's first task = %v", err)
	}
	quotaBytes(t, sub)
	sub.check(t)
}

// quotaBytes is the byte half of testQuotaRefusesAndStoresNothing, on
// its tasks t-0 and t-1 of alice.
func quotaBytes(t *testing.T, sub *Subject) {
	s := sub.Store
	// A one-byte quota refuses any message, and says what alice stores.
	probe := quotaKey("alice", "m-probe", tasks.Quota{Bytes: 1})
	_, _, _, err := s.Update(ctx, "alice", "t-0", &probe, tasks.Head, message(10))
	qe := refused(t, "a message under a 1-byte quota", err)
	used := qe.Used
	if qe.Which != tasks.QuotaBytes || qe.Limit != 1 || used <= 0 {
		t.Fatalf("a message under a 1-byte quota = %+v, want bytes, limit 1, some used", *qe)
	}
	tight := tasks.Quota{Bytes: used + 1000}
	before, err := s.Get(ctx, "alice", "t-0", tasks.Whole)
	if err != nil {
		t.Fatal(err)
	}
	big := quotaKey("alice", "m-big", tight)
	_, _, _, err = s.Update(ctx, "alice", "t-0", &big, tasks.Whole, message(2000))
	if qe := refused(t, "a 2000-byte message with 1000 bytes left", err); *qe != (tasks.QuotaError{Which: tasks.QuotaBytes, Used: used, Limit: used + 1000}) {
		t.Fatalf("a 2000-byte message with 1000 bytes left = %+v, want %d used", *qe, used)
	}
	after, err := s.Get(ctx, "alice", "t-0", tasks.Whole)
	if err != nil || after.Seq != before.Seq || after.HistoryLen != before.HistoryLen || after.State() != before.State() {
		t.Fatalf("a refused message changed the task: %+v, %v", after, err)
	}
	if _, err := s.Lookup(ctx, big); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("Lookup of the refused message = %v, want ErrNotFound (not bound)", err)
	}
	small := quotaKey("alice", "m-small", tight)
	if _, _, _, err := s.Update(ctx, "alice", "t-0", &small, tasks.Whole, message(100)); err != nil {
		t.Fatalf("a 100-byte message with 1000 bytes left = %v", err)
	}
	// A write without a key (a call's result) is counted, never refused.
	if _, _, _, err := s.Update(ctx, "alice", "t-1", nil, tasks.Whole, message(5000)); err != nil {
		t.Fatalf("a result past the quota = %v, want it stored", err)
	}
	// Unless its UpdateFunc sets WriteQuota (a running call's progress):
	// then past the quota it is a *QuotaError and stores nothing; within
	// it, it is stored.
	charged := func(q tasks.Quota, n int) tasks.UpdateFunc {
		return func(r *tasks.Record) ([]tasks.Event, error) {
			r.WriteQuota = q
			return message(n)(r)
		}
	}
	before, err = s.Get(ctx, "alice", "t-1", tasks.Whole)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = s.Update(ctx, "alice", "t-1", nil, tasks.Whole, charged(tight, 10))
	if qe := refused(t, "a keyless write with WriteQuota past the quota", err); qe.Which != tasks.QuotaBytes || qe.Used < used+5100 || qe.Limit != tight.Bytes {
		t.Fatalf("a keyless write with WriteQuota past the quota = %+v", *qe)
	}
	if after, err := s.Get(ctx, "alice", "t-1", tasks.Whole); err != nil || after.Seq != before.Seq || after.HistoryLen != before.HistoryLen {
		t.Fatalf("a refused keyless write changed the task: %+v, %v", after, err)
	}
	if _, _, _, err := s.Update(ctx, "alice", "t-1", nil, tasks.Whole, charged(tasks.Quota{Bytes: 1 << 40}, 10)); err != nil {
		t.Fatalf("a keyless write with WriteQuota within the quota = %v", err)
	}
	// A new task of a single byte is refused now, with the bytes used.
	_, _, err = s.Create(ctx, quotaKey("alice", "m-t-3", tight), NewRecord("t-3", "alice", a2a.StateSubmitted, time.Now()), nil)
	if qe := refused(t, "a new task over the byte quota", err); qe.Which != tasks.QuotaBytes || qe.Used < used+5100 || qe.Limit != tight.Bytes {
		t.Fatalf("a new task over the byte quota = %+v, want more than %d used of %d", *qe, used+5100, tight.Bytes)
	}
}

func testClosedStoreRefusesWrites(t *testing.T, sub *Subject) {
	s := sub.Store
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, Key("", "m", "m"), NewRecord("t", "", a2a.StateSubmitted, time.Now()), nil); !errors.Is(err, tasks.ErrClosed) {
		t.Fatalf("Create after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// testCanceledContextIsRefused: every method given a canceled context
// returns its error and does nothing.
func testCanceledContextIsRefused(t *testing.T, sub *Subject) {
	s, in := sub.Store, sub.inspector()
	WithHooks(t, s, "t1", 1)
	c, cancel := context.WithCancel(ctx)
	cancel()
	d := push.Delivery{ID: 1, TaskID: "t1", ConfigID: "c0"}
	noop := func(*tasks.Record) ([]tasks.Event, error) { return Flip(a2a.StateCompleted)(&tasks.Record{}) }
	calls := map[string]func() error{
		"Create": func() error {
			_, _, err := s.Create(c, Key("o", "m", "m"), NewRecord("t2", "o", a2a.StateSubmitted, time.Now()), nil)
			return err
		},
		"Lookup": func() error { _, err := s.Lookup(c, Key("o", "m-t1", "t1")); return err },
		"Get":    func() error { _, err := s.Get(c, "o", "t1", tasks.Whole); return err },
		"Update": func() error { _, _, _, err := s.Update(c, "o", "t1", nil, tasks.Whole, noop); return err },
		"PushConfigs": func() error {
			_, err := s.PushConfigs(c, "o", "t1", func(p []a2a.PushConfig) ([]a2a.PushConfig, error) { return nil, nil })
			return err
		},
		"Active":             func() error { _, err := s.Active(c); return err },
		"Events":             func() error { _, err := s.Events(c, "t1", 0); return err },
		"Expire":             func() error { _, err := s.Expire(c, time.Now().Add(time.Hour), 10); return err },
		"List":               func() error { _, _, _, err := s.List(c, "o", tasks.ListFilter{}, nil, 10, tasks.Whole); return err },
		"Due":                func() error { _, err := s.Due(c, time.Now(), 10); return err },
		"Request":            func() error { return s.Request(c, &d) },
		"Delivered":          func() error { return s.Delivered(c, 1, 1) },
		"Retry":              func() error { return s.Retry(c, 1, 1, time.Now(), "x") },
		"Dead":               func() error { return s.Dead(c, 1, "", 1, "x") },
		"OutboxDepth":        func() error { _, err := s.OutboxDepth(c); return err },
		"DeadLetterCount":    func() error { _, err := s.DeadLetterCount(c); return err },
		"ActiveStates":       func() error { _, err := s.ActiveStates(c); return err },
		"Inspector.Overview": func() error { _, err := in.Overview(c); return err },
		"Inspector.Tasks":    func() error { _, err := in.Tasks(c, tasks.TaskQuery{}, "", 1); return err },
		"Inspector.Task":     func() error { _, _, err := in.Task(c, "t1"); return err },
		"Inspector.DeadLetters": func() error {
			_, _, err := in.DeadLetters(c, 0, 1)
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s on a canceled context = %v, want context.Canceled", name, err)
		}
	}
	if got, err := s.Get(ctx, "o", "t1", tasks.Whole); err != nil || got.State() != a2a.StateWorking || len(got.PushConfigs) != 1 {
		t.Fatalf("after the canceled calls: %+v, %v; want t1 as it was", got, err)
	}
	if _, err := s.Get(ctx, "o", "t2", tasks.Head); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("a canceled Create stored t2: %v", err)
	}
}
