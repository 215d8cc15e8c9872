package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// sendUntil sends p as caller until it is taken (a caller's calls end
// in their own time), failing after 5 s.
func sendUntil(tb testing.TB, e *env, caller tasks.Caller, p a2a.SendParams) *a2a.Task {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		task, _, err := e.svc.Send(ctx, caller, p)
		if err == nil {
			return task
		}
		if !errors.Is(err, tasks.ErrCallerBusy) || time.Now().After(deadline) {
			tb.Fatalf("send %s: %v", p.Message.MessageID, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCallerCapRefusesAndStoresNothing: a caller with MaxCalls calls
// running or waiting is refused the next with ErrCallerBusy, before
// anything is stored (the messageId stays free), while other callers go
// on; once its calls end it may call again. Calls waiting for a slot
// count, and so do a blocking retry-safe call run before its task is
// stored and a message that resumes a task.
func TestCallerCapRefusesAndStoresNothing(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, tasks.Config{MaxConcurrent: 3, MaxQueue: 100, BlockingTimeout: 100 * time.Millisecond},
		fn(t, "demo::slow", blockingBackend(release)),
		fn(t, "demo::fast", blockingBackend(release), func(f *functions.Function) { f.RetrySafe = true }),
		fn(t, "demo::echo", echoBackend()))
	a := tasks.Caller{ID: "a", MaxCalls: 3}
	// A blocking retry-safe call runs before its task is stored (then
	// returns working once BlockingTimeout passes), two more run: all
	// three count.
	if task, _, err := e.svc.Send(ctx, a, send(dataMsg("a0", "demo::fast", `{}`))); err != nil || task.Status.State != a2a.StateWorking {
		t.Fatalf("a's blocking call: %v %v", err, task)
	}
	for i := 1; i < 3; i++ {
		if _, _, err := e.svc.Send(ctx, a, nonBlocking(dataMsg(fmt.Sprint("a", i), "demo::slow", `{}`))); err != nil {
			t.Fatalf("a's call %d: %v", i, err)
		}
	}
	for range 2 {
		_, _, err := e.svc.Send(ctx, a, nonBlocking(dataMsg("a3", "demo::slow", `{}`)))
		if !errors.Is(err, tasks.ErrCallerBusy) {
			t.Fatalf("a's fourth call: %v, want ErrCallerBusy (again on a retry: its messageId is free)", err)
		}
	}
	if active, _ := e.store.Active(ctx); len(active) != 3 {
		t.Fatalf("%d tasks stored, want a's 3", len(active))
	}
	// Another caller, and anonymous callers, go on: b waits for a slot
	// behind a's running calls, under its own cap.
	b := tasks.Caller{ID: "b", MaxCalls: 1}
	if _, _, err := e.svc.Send(ctx, b, nonBlocking(dataMsg("b0", "demo::slow", `{}`))); err != nil {
		t.Fatalf("b's call: %v", err)
	}
	if _, _, err := e.svc.Send(ctx, b, nonBlocking(dataMsg("b1", "demo::slow", `{}`))); !errors.Is(err, tasks.ErrCallerBusy) {
		t.Fatalf("b's second call: %v, want ErrCallerBusy", err)
	}
	// Anonymous callers count by group: one address's calls are not
	// another's, but the same group shares one count.
	anon := func(group string) tasks.Caller { return tasks.Caller{MaxCalls: 1, CallGroup: group} }
	if _, _, err := e.svc.Send(ctx, anon("10.0.0.1"), nonBlocking(dataMsg("x0", "demo::slow", `{}`))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.Send(ctx, anon("10.0.0.2"), nonBlocking(dataMsg("y0", "demo::slow", `{}`))); err != nil {
		t.Fatalf("another address's call: %v", err)
	}
	if _, _, err := e.svc.Send(ctx, anon("10.0.0.1"), nonBlocking(dataMsg("x1", "demo::slow", `{}`))); !errors.Is(err, tasks.ErrCallerBusy) {
		t.Fatalf("the address's second call: %v, want ErrCallerBusy", err)
	}
	// A caller named "10.0.0.1" is not the anonymous group of that name.
	if _, _, err := e.svc.Send(ctx, tasks.Caller{ID: "10.0.0.1", MaxCalls: 1}, nonBlocking(dataMsg("z0", "demo::slow", `{}`))); err != nil {
		t.Fatalf("a caller named as an address: %v", err)
	}

	// Once a's calls end, it calls again. The call may wait for a slot
	// behind b's and the anonymous callers' past BlockingTimeout (100 ms:
	// a few commits on a busy disk), so its end is waited for, not its
	// blocking answer.
	close(release)
	task := sendUntil(t, e, a, send(dataMsg("a3", "demo::echo", `{"n":1}`)))
	if task.Status.State != a2a.StateCompleted {
		t.Logf("a's call after its calls ended answered %s; waiting for it to complete", task.Status.State)
		waitState(t, e, a, task.ID, a2a.StateCompleted)
	}
}

// TestCallerCapCountsResumedTasks: a message that resumes a task (an
// answer to input-required) starts a call, and counts.
func TestCallerCapCountsResumedTasks(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	asks := &Backend{Fn: func(_ context.Context, in json.RawMessage) (functions.Result, error) {
		return functions.Result{InputRequired: "more?"}, nil
	}}
	e := newEnv(t, tasks.Config{}, fn(t, "demo::ask", asks), fn(t, "demo::slow", blockingBackend(release)))
	a := tasks.Caller{ID: "a", MaxCalls: 1}
	task, _, err := e.svc.Send(ctx, a, send(dataMsg("q", "demo::ask", `{}`)))
	if err != nil || task.Status.State != a2a.StateInputRequired {
		t.Fatalf("ask: %v %v", err, task)
	}
	if _, _, err := e.svc.Send(ctx, a, nonBlocking(dataMsg("s", "demo::slow", `{}`))); err != nil {
		t.Fatal(err)
	}
	answer := textMsg("answer", "yes")
	answer.TaskID = task.ID
	if _, _, err := e.svc.Send(ctx, a, nonBlocking(answer)); !errors.Is(err, tasks.ErrCallerBusy) {
		t.Fatalf("an answer while at the cap: %v, want ErrCallerBusy", err)
	}
	got, err := e.svc.Get(ctx, a, task.ID, nil)
	if err != nil || got.Status.State != a2a.StateInputRequired || len(got.History) != len(task.History) {
		t.Fatalf("the refused answer changed the task: %v %s, %d messages, want %d", err, got.Status.State, len(got.History), len(task.History))
	}
}

// TestServerQueueFullBeforeCallerCap: a caller under its cap still gets
// ErrBusy when the server's queue is full; a caller at its cap hears of
// its own cap first.
func TestServerQueueFullBeforeCallerCap(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e := newEnv(t, tasks.Config{MaxConcurrent: 1, MaxQueue: 1}, fn(t, "demo::slow", blockingBackend(release)))
	a := tasks.Caller{ID: "a", MaxCalls: 2}
	for i := range 2 {
		if _, _, err := e.svc.Send(ctx, a, nonBlocking(dataMsg(fmt.Sprint("a", i), "demo::slow", `{}`))); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := e.svc.Send(ctx, tasks.Caller{ID: "b", MaxCalls: 2}, nonBlocking(dataMsg("b", "demo::slow", `{}`))); !errors.Is(err, tasks.ErrBusy) {
		t.Fatalf("b with the queue full: %v, want ErrBusy", err)
	}
	if _, _, err := e.svc.Send(ctx, a, nonBlocking(dataMsg("a2", "demo::slow", `{}`))); !errors.Is(err, tasks.ErrCallerBusy) {
		t.Fatalf("a at its cap with the queue full: %v, want ErrCallerBusy", err)
	}
}

// TestRecoveredCallsCountForTheirOwner: calls that recovery runs again
// after a crash count for their owner (they are never refused), so the
// owner's new calls are refused until they end.
func TestRecoveredCallsCountForTheirOwner(t *testing.T) {
	now := time.Now()
	var recs []*tasks.Record
	for i := range 3 {
		recs = append(recs, &tasks.Record{
			Task:  a2a.Task{ID: fmt.Sprint("t", i), ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking}},
			Owner: "a", FunctionID: "demo::slow", Input: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now,
		})
	}
	path := leftBehind(t, recs...)
	release := make(chan struct{})
	e := openEnv(t, path, tasks.Config{}, fn(t, "demo::slow", blockingBackend(release), func(f *functions.Function) { f.RetrySafe = true }))
	a := tasks.Caller{ID: "a", MaxCalls: 2}
	if _, _, err := e.svc.Send(ctx, a, nonBlocking(dataMsg("new", "demo::slow", `{}`))); !errors.Is(err, tasks.ErrCallerBusy) {
		t.Fatalf("a's call beside 3 recovered ones under a cap of 2: %v, want ErrCallerBusy", err)
	}
	if _, _, err := e.svc.Send(ctx, tasks.Caller{ID: "b", MaxCalls: 2}, nonBlocking(dataMsg("b", "demo::slow", `{}`))); err != nil {
		t.Fatalf("b: %v", err)
	}
	close(release)
	for i := range 3 {
		waitState(t, e, a, fmt.Sprint("t", i), a2a.StateCompleted)
	}
	sendUntil(t, e, a, nonBlocking(dataMsg("new", "demo::slow", `{}`)))
}
