package storetest

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/push"
	"github.com/a2ad/a2ad/tasks"
)

// killLetter makes the delivery due for t1's webhook a dead letter, and
// returns it.
func killLetter(t *testing.T, s Store, fn tasks.UpdateFunc) push.Delivery {
	t.Helper()
	d := Queued(t, s, "t1", fn, 1)[0]
	if err := s.Request(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if err := s.Dead(ctx, d.ID, d.URL, 8, "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	return d
}

// testDeadLettersCanBeRetried: a retried dead letter is its webhook's
// delivery again, due now with no attempts, reporting the task as it
// stands; the sender is woken; a second retry finds nothing.
func testDeadLettersCanBeRetried(t *testing.T, sub *Subject) {
	s := sub.Store
	WithHooks(t, s, "t1", 1)
	d := killLetter(t, s, Flip(a2a.StateInputRequired))
	var woken atomic.Int64
	s.SetOutboxHook(func() { woken.Add(1) })
	now := time.Now()
	got, err := s.RetryDeadLetter(ctx, d.ID, now)
	if err != nil || got.ID != d.ID || got.TaskID != "t1" || got.ConfigID != d.ConfigID || got.Attempts != 8 {
		t.Fatalf("RetryDeadLetter = %+v, %v", got, err)
	}
	if woken.Load() != 1 {
		t.Fatalf("the retry woke the sender %d times, want 1", woken.Load())
	}
	if n, _ := s.DeadLetterCount(ctx); n != 0 {
		t.Fatalf("DeadLetterCount = %d after the retry", n)
	}
	due, err := s.Due(ctx, now, 10)
	if err != nil || len(due) != 1 || due[0].TaskID != "t1" || due[0].Attempts != 0 || due[0].LastError != "" {
		t.Fatalf("after the retry, Due = %+v, %v; want the webhook's delivery, no attempts", due, err)
	}
	again := due[0]
	if err := s.Request(ctx, &again); err != nil || again.Task.Status.State != a2a.StateInputRequired {
		t.Fatalf("Request = %v, reports %+v", err, again.Task)
	}
	sub.check(t)
	if err := s.Delivered(ctx, again.ID, again.Seq); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 0 {
		t.Fatalf("OutboxDepth = %d once the retried letter was delivered", n)
	}
	if _, err := s.RetryDeadLetter(ctx, d.ID, now); !errors.Is(err, tasks.ErrDeadLetterNotFound) {
		t.Fatalf("second RetryDeadLetter: %v, want ErrDeadLetterNotFound", err)
	}
	sub.check(t)
}

// testRetriedDeadLetterJoinsALaterDelivery: when the webhook has a
// delivery waiting (a transition after the letter died), the retry resets
// that one instead of queuing a second: one delivery, of the latest state.
func testRetriedDeadLetterJoinsALaterDelivery(t *testing.T, sub *Subject) {
	s := sub.Store
	WithHooks(t, s, "t1", 1)
	d := killLetter(t, s, Flip(a2a.StateInputRequired))
	MustUpdate(t, s, "o", "t1", Flip(a2a.StateCompleted))
	due, _ := s.Due(ctx, time.Now(), 10)
	if len(due) != 1 {
		t.Fatalf("Due = %+v", due)
	}
	later := due[0]
	future := time.Now().Add(time.Hour)
	if err := s.Retry(ctx, later.ID, 3, future, "HTTP 503"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := s.RetryDeadLetter(ctx, d.ID, now); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 1 {
		t.Fatalf("OutboxDepth = %d, want 1: the retry joins the waiting delivery", n)
	}
	due, _ = s.Due(ctx, now, 10)
	if len(due) != 1 || due[0].ID != later.ID || due[0].Attempts != 0 || due[0].LastError != "" {
		t.Fatalf("Due = %+v; want delivery %d due now, attempts reset", due, later.ID)
	}
	r := due[0]
	if err := s.Request(ctx, &r); err != nil || r.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("Request = %v, reports %+v", err, r.Task)
	}
	sub.check(t)
}

// testDeadLettersCanBeDropped: a dropped dead letter is gone, and queues
// nothing.
func testDeadLettersCanBeDropped(t *testing.T, sub *Subject) {
	s := sub.Store
	WithHooks(t, s, "t1", 1)
	d := killLetter(t, s, Flip(a2a.StateCompleted))
	got, err := s.DropDeadLetter(ctx, d.ID)
	if err != nil || got.ID != d.ID || got.TaskID != "t1" {
		t.Fatalf("DropDeadLetter = %+v, %v", got, err)
	}
	if n, _ := s.DeadLetterCount(ctx); n != 0 {
		t.Fatalf("DeadLetterCount = %d after the drop", n)
	}
	if n, _ := s.OutboxDepth(ctx); n != 0 {
		t.Fatalf("OutboxDepth = %d after the drop", n)
	}
	for _, id := range []uint64{d.ID, d.ID + 1000, 1 << 63} {
		if _, err := s.DropDeadLetter(ctx, id); !errors.Is(err, tasks.ErrDeadLetterNotFound) {
			t.Errorf("DropDeadLetter(%d): %v, want ErrDeadLetterNotFound", id, err)
		}
		if _, err := s.RetryDeadLetter(ctx, id, time.Now()); !errors.Is(err, tasks.ErrDeadLetterNotFound) {
			t.Errorf("RetryDeadLetter(%d): %v, want ErrDeadLetterNotFound", id, err)
		}
	}
	sub.check(t)
}
