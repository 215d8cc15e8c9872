package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

func retrySafe(f *functions.Function) { f.RetrySafe = true }

func eventStates(tb testing.TB, e *env, id string) string {
	tb.Helper()
	evs, err := e.store.Events(ctx, id, 0)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			tb.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		switch {
		case ev.Status != nil:
			out = append(out, string(ev.Status.State))
		case ev.Artifact != nil:
			out = append(out, "artifact")
		}
	}
	return fmt.Sprint(out)
}

// A quick retry-safe call is stored once, with its outcome.
func TestRetrySafeQuickCallIsOneCommit(t *testing.T) {
	b := echoBackend()
	e := newEnv(t, tasks.Config{}, fn(t, "demo::echo", b, retrySafe))
	before, _ := e.store.Counts()
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{"a":1}`)))
	if err != nil || task.Status.State != a2a.StateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("send: %v %+v", err, task)
	}
	after, _ := e.store.Counts()
	if after-before != 1 {
		t.Fatalf("%d commits for a quick retry-safe call, want 1", after-before)
	}
	if got := eventStates(t, e, task.ID); got != "[submitted working artifact completed]" {
		t.Fatalf("events %s", got)
	}
	// A retry finds the task and does not call again.
	again, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{"a":1}`)))
	if err != nil || again.ID != task.ID || b.calls.Load() != 1 {
		t.Fatalf("retry: %v, task %s, calls %d", err, again.ID, b.calls.Load())
	}
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{"a":2}`))); err != tasks.ErrMessageIDReused {
		t.Fatalf("reused id: %v", err)
	}
}

// A slow retry-safe call is stored working once the window passes, and
// finishes like any other.
func TestRetrySafeSlowCallIsStoredWorking(t *testing.T) {
	release := make(chan struct{})
	b := blockingBackend(release)
	e := newEnv(t, tasks.Config{}, fn(t, "demo::slow", b, retrySafe))
	done := make(chan *a2a.Task, 1)
	go func() {
		task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::slow", `{}`)))
		if err != nil {
			t.Error(err)
		}
		done <- task
	}()
	var id string
	deadline := time.Now().Add(5 * time.Second)
	for id == "" {
		active, _ := e.store.Active(ctx)
		if len(active) == 1 {
			id = active[0].Task.ID
			if st := active[0].State(); st != a2a.StateWorking {
				t.Fatalf("stored %s, want working", st)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow call's task was never stored")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	task := <-done
	if task.ID != id || task.Status.State != a2a.StateCompleted {
		t.Fatalf("blocking sender got %s %s", task.ID, task.Status.State)
	}
	if got := eventStates(t, e, id); got != "[submitted working artifact completed]" {
		t.Fatalf("events %s", got)
	}
}

func TestRetrySafeSlowCallCanBeCanceled(t *testing.T) {
	b := blockingBackend(make(chan struct{}))
	e := newEnv(t, tasks.Config{}, fn(t, "demo::slow", b, retrySafe))
	go func() { _, _, _ = e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::slow", `{}`))) }()
	var id string
	for id == "" {
		if active, _ := e.store.Active(ctx); len(active) == 1 {
			id = active[0].Task.ID
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := e.svc.Cancel(ctx, tasks.Caller{}, id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if task := waitState(t, e, tasks.Caller{}, id, a2a.StateCanceled); len(task.Artifacts) != 0 {
		t.Fatalf("a canceled task got artifacts")
	}
}

// Concurrent duplicates of a retry-safe message still call once.
func TestRetrySafeDuplicatesRunOnce(t *testing.T) {
	b := &Backend{Fn: func(_ context.Context, in json.RawMessage) (functions.Result, error) {
		time.Sleep(5 * time.Millisecond)
		return functions.Result{Output: in}, nil
	}}
	e := newEnv(t, tasks.Config{}, fn(t, "demo::echo", b, retrySafe))
	for round := range 20 {
		var wg sync.WaitGroup
		ids := make([]string, 10)
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg(fmt.Sprint("r", round), "demo::echo", `{}`)))
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = task.ID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("round %d: duplicates got different tasks %v", round, ids)
			}
		}
	}
	if c := b.calls.Load(); c != 20 {
		t.Fatalf("%d calls for 20 messages", c)
	}
}

// A non-blocking send never speculates: its task is stored before the
// call ends.
func TestNonBlockingRetrySafeStoresFirst(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e := newEnv(t, tasks.Config{}, fn(t, "demo::slow", blockingBackend(release), retrySafe))
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::slow", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Get(ctx, tasks.Caller{}, task.ID, nil); err != nil {
		t.Fatalf("non-blocking send returned before its task was stored: %v", err)
	}
}

// A client that goes away inside the speculation window leaves nothing
// stored and no slot held: the next call runs.
func TestSpeculationWithACanceledRequest(t *testing.T) {
	b := &Backend{Fn: func(ctx context.Context, in json.RawMessage) (functions.Result, error) {
		time.Sleep(5 * time.Millisecond)
		return functions.Result{Output: in}, nil
	}}
	e := newEnv(t, tasks.Config{MaxConcurrent: 1, MaxQueue: 1}, fn(t, "demo::echo", b, retrySafe))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := e.svc.Send(cctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{}`))); err == nil {
		t.Fatal("a send with a canceled context succeeded")
	}
	if active, _ := e.store.Active(ctx); len(active) != 0 {
		t.Fatalf("%d tasks stored for a canceled request", len(active))
	}
	time.Sleep(20 * time.Millisecond)
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{}`)))
	if err != nil || task.Status.State != a2a.StateCompleted {
		t.Fatalf("the same message afterwards: %v %+v", err, task)
	}
}

// An immediate builtin's call runs inline and is stored once, with its
// outcome; a retry finds the task without a commit, also one whose call
// is still queued, and a reused messageId is refused.
func TestImmediateCallIsOneCommit(t *testing.T) {
	echo, err := functions.NewBuiltin("echo")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	e := newEnv(t, tasks.Config{MaxConcurrent: 1}, fn(t, "demo::echo", echo, retrySafe), fn(t, "demo::slow", blockingBackend(release)))
	before, _ := e.store.Counts()
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{"a":1}`)))
	if err != nil || task.Status.State != a2a.StateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("send: %v %+v", err, task)
	}
	if after, _ := e.store.Counts(); after-before != 1 {
		t.Fatalf("%d commits for an immediate call, want 1", after-before)
	}
	if got := eventStates(t, e, task.ID); got != "[submitted working artifact completed]" {
		t.Fatalf("events %s", got)
	}
	again, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{"a":1}`)))
	if err != nil || again.ID != task.ID || again.Status.State != a2a.StateCompleted {
		t.Fatalf("retry: %v, %+v", err, again)
	}
	if n, _ := e.store.Counts(); n-before != 1 {
		t.Fatalf("a retry committed: %d commits", n-before)
	}
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{"a":2}`))); err != tasks.ErrMessageIDReused {
		t.Fatalf("reused messageId: %v", err)
	}
	// With the one slot taken, m2 is stored submitted; its retry, with
	// the slot free, finds it.
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("s1", "demo::slow", `{}`))); err != nil {
		t.Fatal(err)
	}
	queued, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m2", "demo::echo", `{}`)))
	if err != nil || queued.Status.State != a2a.StateSubmitted {
		t.Fatalf("queued send: %v, %+v", err, queued)
	}
	release <- struct{}{}
	retry, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m2", "demo::echo", `{}`)))
	if err != nil || retry.ID != queued.ID || retry.Status.State != a2a.StateCompleted {
		t.Fatalf("retry of a queued send: %v, %+v", err, retry)
	}
}
