package storetest

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/push"
)

// The contracts of the push outbox a store keeps beside its tasks: what a
// transition queues, and Due, Request, Delivered, Retry and Dead.

func testTransitionsQueueDeliveries(t *testing.T, sub *Subject) {
	s := sub.Store
	var woken atomic.Int64
	s.SetOutboxHook(func() { woken.Add(1) })
	rec := NewRecord("t1", "o", a2a.StateWorking, time.Now())
	rec.PushConfigs = []a2a.PushConfig{
		{ID: "a", URL: "https://a.example/hook", Token: "tok"},
		{ID: "b", URL: "https://b.example/hook", Authentication: &a2a.PushAuth{Schemes: []string{"Bearer"}, Credentials: "secret"}, Wire: a2a.V10},
	}
	Create(t, s, rec)
	if n, _ := s.OutboxDepth(ctx); n != 0 || woken.Load() != 0 {
		t.Fatalf("a working task queued %d deliveries", n)
	}
	done := MustUpdate(t, s, "o", "t1", Flip(a2a.StateCompleted))
	if n, _ := s.OutboxDepth(ctx); n != 2 || woken.Load() != 1 {
		t.Fatalf("completion queued %d deliveries, woke %d times; want 2, 1", n, woken.Load())
	}
	due, err := s.Due(ctx, time.Now(), 10)
	if err != nil || len(due) != 2 {
		t.Fatalf("Due = %d, %v", len(due), err)
	}
	// Due names the task and webhook only; Request builds the rest.
	if d := due[0]; d.TaskID != "t1" || d.ConfigID != "a" || d.URL != "" || d.Task != nil || d.Attempts != 0 {
		t.Fatalf("Due gave %+v", d)
	}
	a, b := due[0], due[1]
	if err := s.Request(ctx, &a); err != nil {
		t.Fatal(err)
	}
	if err := s.Request(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if a.Task == nil || a.Task.ID != "t1" || a.Task.Status.State != a2a.StateCompleted || a.Wire != a2a.V03 {
		t.Fatalf("0.3 delivery reports %+v (wire %v)", a.Task, a.Wire)
	}
	if a.URL != "https://a.example/hook" || a.Token != "tok" || a.Auth != nil || a.Seq != done.Seq {
		t.Fatalf("0.3 delivery %+v; want seq %d", a, done.Seq)
	}
	if b.Task == nil || b.Task.ID != "t1" || b.Wire != a2a.V10 {
		t.Fatalf("1.0 delivery reports %+v (wire %v)", b.Task, b.Wire)
	}
	if b.Auth == nil || b.Auth.Credentials != "secret" || b.Auth.Schemes[0] != "Bearer" {
		t.Fatalf("1.0 delivery auth %+v", b.Auth)
	}
	sub.check(t)
}

// testOutboxCoalescesPerWebhook is the bound issue 13 asks for: a task
// looping through input-required with 10 webhooks that never answer
// keeps at most one delivery per webhook, and that delivery reports the
// latest state.
func testOutboxCoalescesPerWebhook(t *testing.T, sub *Subject) {
	s := sub.Store
	WithHooks(t, s, "loop", 10)
	WithHooks(t, s, "other", 1)
	for range 100 {
		MustUpdate(t, s, "o", "loop", Flip(a2a.StateInputRequired))
		MustUpdate(t, s, "o", "loop", Flip(a2a.StateWorking))
	}
	last := MustUpdate(t, s, "o", "loop", Flip(a2a.StateCompleted))
	MustUpdate(t, s, "o", "other", Flip(a2a.StateFailed))
	if n, err := s.OutboxDepth(ctx); err != nil || n != 11 {
		t.Fatalf("OutboxDepth = %d, %v; want 11 (one per webhook)", n, err)
	}
	due, err := s.Due(ctx, time.Now(), 100)
	if err != nil || len(due) != 11 {
		t.Fatalf("Due = %d, %v; want 11", len(due), err)
	}
	seen := map[string]bool{}
	for _, d := range due {
		pair := d.TaskID + "/" + d.ConfigID
		if seen[pair] {
			t.Fatalf("two deliveries for %s", pair)
		}
		seen[pair] = true
		if err := s.Request(ctx, &d); err != nil {
			t.Fatal(err)
		}
		if d.TaskID == "loop" && (d.Seq != last.Seq || d.Task.Status.State != a2a.StateCompleted) {
			t.Fatalf("delivery of %s reports seq %d (%s), want the latest, %d, completed", pair, d.Seq, d.Task.Status.State, last.Seq)
		}
		if err := s.Delivered(ctx, d.ID, d.Seq); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s.OutboxDepth(ctx); n != 0 {
		t.Fatalf("OutboxDepth after delivering all = %d", n)
	}
	sub.check(t)
}

// testDeliveredKeepsALaterTransition: a transition that lands while a
// delivery is in flight (after its body was read) is sent after it, so
// the webhook ends with the latest state. Acks, retries and dead letters
// of a delivery that is gone do nothing.
func testDeliveredKeepsALaterTransition(t *testing.T, sub *Subject) {
	s := sub.Store
	WithHooks(t, s, "t1", 1)
	d := Queued(t, s, "t1", Flip(a2a.StateInputRequired), 1)[0]
	if err := s.Request(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if err := s.Retry(ctx, d.ID, 1, time.Now().Add(-time.Second), "HTTP 503"); err != nil {
		t.Fatal(err)
	}
	// In flight again, the task moves on.
	MustUpdate(t, s, "o", "t1", Flip(a2a.StateCompleted))
	if err := s.Delivered(ctx, d.ID, d.Seq); err != nil {
		t.Fatal(err)
	}
	due, _ := s.Due(ctx, time.Now(), 10)
	if len(due) != 1 || due[0].ID != d.ID || due[0].Attempts != 0 || due[0].LastError != "" {
		t.Fatalf("after delivering an older state: Due = %+v; want the same delivery, attempts reset", due)
	}
	again := due[0]
	if err := s.Request(ctx, &again); err != nil {
		t.Fatal(err)
	}
	if again.Seq <= d.Seq || again.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("second request: seq %d (first %d), state %s", again.Seq, d.Seq, again.Task.Status.State)
	}
	sub.check(t)
	if err := s.Delivered(ctx, again.ID, again.Seq); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 0 {
		t.Fatalf("OutboxDepth = %d after the latest state was delivered", n)
	}
	for _, err := range []error{
		s.Delivered(ctx, d.ID, d.Seq),
		s.Retry(ctx, d.ID, 9, time.Now(), "x"),
		s.Dead(ctx, d.ID, "", 9, "x"),
	} {
		if err != nil {
			t.Fatalf("on a finished delivery: %v", err)
		}
	}
	if n, _ := s.DeadLetterCount(ctx); n != 0 {
		t.Fatalf("Dead of a finished delivery wrote %d dead letters", n)
	}
	sub.check(t)
}

// testDueReturnsBatchesByDueTime: deliveries come oldest due time first,
// as many as asked for, and those not yet due are left.
func testDueReturnsBatchesByDueTime(t *testing.T, sub *Subject) {
	s := sub.Store
	const n = 40
	for i := range n {
		id := fmt.Sprintf("t%02d", i)
		WithHooks(t, s, id, 1)
		MustUpdate(t, s, "o", id, Flip(a2a.StateCompleted))
	}
	all, err := s.Due(ctx, time.Now(), 1000)
	if err != nil || len(all) != n {
		t.Fatalf("Due = %d, %v; want %d", len(all), err, n)
	}
	// Push the first ten an hour ahead, in reverse: they go to the back,
	// latest last.
	now := time.Now()
	for i := range 10 {
		if err := s.Retry(ctx, all[i].ID, 1, now.Add(time.Hour+time.Duration(10-i)*time.Second), "HTTP 503"); err != nil {
			t.Fatal(err)
		}
	}
	sub.check(t)
	batch, err := s.Due(ctx, now, 5)
	if err != nil || len(batch) != 5 {
		t.Fatalf("Due(limit 5) = %d, %v", len(batch), err)
	}
	for i, d := range batch {
		if d.ID != all[10+i].ID {
			t.Fatalf("batch[%d] = delivery %d of %s, want %d", i, d.ID, d.TaskID, all[10+i].ID)
		}
	}
	if got, _ := s.Due(ctx, now, 1000); len(got) != n-10 {
		t.Fatalf("due now: %d, want %d", len(got), n-10)
	}
	later, _ := s.Due(ctx, now.Add(2*time.Hour), 1000)
	if len(later) != n || later[n-1].ID != all[0].ID || later[n-10].ID != all[9].ID || later[n-1].Attempts != 1 || later[n-1].LastError != "HTTP 503" {
		t.Fatalf("due in two hours: %d, ending with %+v", len(later), later[len(later)-1])
	}
}

// testRequestDropsWhatIsGone: a delivery whose webhook was deleted is
// dropped when it comes to be sent; a task that expires takes its
// deliveries with it.
func testRequestDropsWhatIsGone(t *testing.T, sub *Subject) {
	s := sub.Store
	WithHooks(t, s, "t1", 2)
	due := Queued(t, s, "t1", Flip(a2a.StateCompleted), 2)
	if _, err := s.PushConfigs(ctx, "o", "t1", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) { return c[1:], nil }); err != nil {
		t.Fatal(err)
	}
	d := due[0] // c0, deleted
	if err := s.Request(ctx, &d); !errors.Is(err, push.ErrGone) {
		t.Fatalf("Request of a deleted webhook's delivery = %v, want ErrGone", err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 1 {
		t.Fatalf("OutboxDepth = %d after the drop, want 1", n)
	}
	sub.check(t)

	if n, err := s.Expire(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("Expire = %d, %v", n, err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 0 {
		t.Fatalf("OutboxDepth = %d after the task expired, want 0", n)
	}
	if got, _ := s.Due(ctx, time.Now().Add(time.Hour), 10); len(got) != 0 {
		t.Fatalf("Due after expiry: %+v", got)
	}
	d = due[1]
	if err := s.Request(ctx, &d); !errors.Is(err, push.ErrGone) {
		t.Fatalf("Request of an expired task's delivery = %v, want ErrGone", err)
	}
	sub.check(t)
}

func testDeadLettersKeepTheURLAndNoSecret(t *testing.T, sub *Subject) {
	s := sub.Store
	rec := NewRecord("t1", "o", a2a.StateWorking, time.Now())
	rec.PushConfigs = []a2a.PushConfig{{ID: "c", URL: "https://x.example/hook", Token: "tok-secret",
		Authentication: &a2a.PushAuth{Schemes: []string{"Bearer"}, Credentials: "cred-secret"}}}
	Create(t, s, rec)
	d := Queued(t, s, "t1", Flip(a2a.StateInputRequired), 1)[0]
	if err := s.Request(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if err := s.Dead(ctx, d.ID, d.URL, 8, "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	in := s.Inspect(Bounds{})
	dead, more, err := in.DeadLetters(ctx, 0, 10)
	if err != nil || len(dead) != 1 || more {
		t.Fatalf("DeadLetters = %+v, %v, %v", dead, more, err)
	}
	if got := dead[0]; got.ID != d.ID || got.TaskID != "t1" || got.ConfigID != "c" || got.URL != "https://x.example/hook" ||
		got.Attempts != 8 || got.LastError != "HTTP 500" || got.DeadAt.IsZero() || got.CreatedAt.IsZero() {
		t.Fatalf("dead letter %+v", got)
	}
	if tail, more, err := in.DeadLetters(ctx, math.MaxUint64, 10); err != nil || tail == nil || len(tail) != 0 || more {
		t.Fatalf("dead letters after the last possible id: %+v, %v; want an empty list", tail, err)
	}
	if n, err := s.DeadLetterCount(ctx); err != nil || n != 1 {
		t.Fatalf("DeadLetterCount = %d, %v; want 1", n, err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 0 {
		t.Fatalf("OutboxDepth = %d after the delivery died, want 0", n)
	}
	// The next transition queues a new delivery.
	MustUpdate(t, s, "o", "t1", Flip(a2a.StateCompleted))
	if due, _ := s.Due(ctx, time.Now(), 10); len(due) != 1 || due[0].ID <= d.ID {
		t.Fatalf("after a dead letter, Due = %+v", due)
	}
	sub.check(t)
}
