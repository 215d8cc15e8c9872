package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// fakeMetrics is a tasks.Metrics that keeps what it is told.
type fakeMetrics struct {
	mu                         sync.Mutex
	queued, running            map[string]int
	replays, subs, replayed    int
	dropped, peakSubs, maxQued int
}

var _ tasks.Metrics = (*fakeMetrics)(nil)

func newFakeMetrics() *fakeMetrics {
	return &fakeMetrics{queued: map[string]int{}, running: map[string]int{}}
}

func (f *fakeMetrics) CallQueued(id string, d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued[id] += d
	f.maxQued = max(f.maxQued, f.queued[id])
}

func (f *fakeMetrics) CallRunning(id string, d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running[id] += d
}

func (f *fakeMetrics) IdempotentReplay() { f.mu.Lock(); f.replays++; f.mu.Unlock() }

func (f *fakeMetrics) Subscribers(d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs += d
	f.peakSubs = max(f.peakSubs, f.subs)
}

func (f *fakeMetrics) ReplayedEvents(n int)   { f.mu.Lock(); f.replayed += n; f.mu.Unlock() }
func (f *fakeMetrics) SlowSubscriberDropped() { f.mu.Lock(); f.dropped++; f.mu.Unlock() }

// snapshot returns the counts under the lock.
func (f *fakeMetrics) snapshot() (queued, running map[string]int, replays, subs, replayed, dropped int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, r := map[string]int{}, map[string]int{}
	for k, v := range f.queued {
		q[k] = v
	}
	for k, v := range f.running {
		r[k] = v
	}
	return q, r, f.replays, f.subs, f.replayed, f.dropped
}

// waitFor polls cond for up to 5 s.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within 5s", what)
		}
	}
}

func TestMetricsQueuedAndRunningCalls(t *testing.T) {
	met := newFakeMetrics()
	release := make(chan struct{})
	e := newEnv(t, tasks.Config{Metrics: met},
		fn(t, "demo::block", blockingBackend(release), func(f *functions.Function) { f.MaxConcurrency = 1 }))
	first, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::block", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m2", "demo::block", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "one call running, one queued", func() bool {
		q, r, _, _, _, _ := met.snapshot()
		return q["demo::block"] == 1 && r["demo::block"] == 1
	})
	// Cancelling the queued call ends its wait.
	if _, err := e.svc.Cancel(ctx, tasks.Caller{}, second.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "nothing queued", func() bool { q, _, _, _, _, _ := met.snapshot(); return q["demo::block"] == 0 })
	close(release)
	waitState(t, e, tasks.Caller{}, first.ID, a2a.StateCompleted)
	waitFor(t, "nothing running", func() bool { _, r, _, _, _, _ := met.snapshot(); return r["demo::block"] == 0 })
	q, r, _, _, _, _ := met.snapshot()
	if len(q) != 1 || len(r) != 1 {
		t.Errorf("functions told of: queued %v, running %v; want demo::block only", q, r)
	}
}

func TestMetricsIdempotentReplays(t *testing.T) {
	met := newFakeMetrics()
	release := make(chan struct{})
	e := newEnv(t, tasks.Config{Metrics: met},
		fn(t, "demo::echo", echoBackend()), fn(t, "demo::block", blockingBackend(release)))
	// A new task's message again, on the speculative and the stored paths.
	for _, p := range []a2a.SendParams{send(dataMsg("m1", "demo::echo", `{}`)), nonBlocking(dataMsg("m1", "demo::echo", `{}`))} {
		if _, _, err := e.svc.Send(ctx, tasks.Caller{}, p); err != nil {
			t.Fatal(err)
		}
	}
	// A follow-up message, again while its call runs and again once the
	// task is done.
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(textMsg("x1", "hello")))
	if err != nil || task.Status.State != a2a.StateInputRequired {
		t.Fatalf("no skill: %v %v", task, err)
	}
	follow := dataMsg("x2", "demo::block", `{}`)
	follow.TaskID = task.ID
	for range 2 {
		if _, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(follow)); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	waitState(t, e, tasks.Caller{}, task.ID, a2a.StateCompleted)
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(follow)); err != nil {
		t.Fatal(err)
	}
	// A different message with a used id is refused, not replayed.
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{"x":1}`))); !errors.Is(err, tasks.ErrMessageIDReused) {
		t.Fatalf("reused messageId: %v", err)
	}
	if _, _, replays, _, _, _ := met.snapshot(); replays != 3 {
		t.Errorf("replays = %d, want 3", replays)
	}
}

func TestMetricsStreams(t *testing.T) {
	met := newFakeMetrics()
	gate := make(chan struct{})
	b := &Backend{Fn: func(ctx context.Context, in json.RawMessage) (functions.Result, error) {
		<-gate
		return progressBackend(20, nil).Fn(ctx, in)
	}}
	e := newEnv(t, tasks.Config{Metrics: met, StreamBuffer: 2}, fn(t, "demo::progress", b))
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::progress", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, e, tasks.Caller{}, task.ID, a2a.StateWorking)
	slowDone := make(chan error, 1)
	go func() {
		slowDone <- e.svc.Watch(ctx, tasks.Caller{}, task.ID, nil, func(tasks.StreamEvent) error {
			time.Sleep(20 * time.Millisecond) // a slow client
			return nil
		})
	}()
	waitFor(t, "one subscriber", func() bool { _, _, _, subs, _, _ := met.snapshot(); return subs == 1 })
	close(gate)
	if err := <-slowDone; !errors.Is(err, tasks.ErrSlowSubscriber) {
		t.Fatalf("slow watcher ended with %v", err)
	}
	waitState(t, e, tasks.Caller{}, task.ID, a2a.StateCompleted)
	// A stream from the start reads every event from the store.
	all, err := collect(t, e, task.ID, new(uint64))
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, subs, replayed, dropped := met.snapshot()
	if subs != 0 || dropped != 1 || replayed != len(all) {
		t.Errorf("subscribers %d, dropped %d, replayed %d; want 0, 1, %d", subs, dropped, replayed, len(all))
	}
	if met.peakSubs != 1 {
		t.Errorf("peak subscribers %d, want 1", met.peakSubs)
	}
}
