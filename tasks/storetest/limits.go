package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/push"
	"github.com/a2ad/a2ad/tasks"
)

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
		"DeadLetters":        func() error { _, err := s.DeadLetters(c, 0, 10); return err },
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
