package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// describe renders a stream event as "seq:kind[:state|:artifact]".
func describe(e tasks.StreamEvent) string {
	switch {
	case e.Task != nil:
		return fmt.Sprintf("%d:task:%s", e.Seq, e.Task.Status.State)
	case e.Status != nil:
		s := fmt.Sprintf("%d:status:%s", e.Seq, e.Status.Status.State)
		if e.Status.Final {
			s += ":final"
		}
		return s
	case e.Artifact != nil:
		return fmt.Sprintf("%d:artifact:%s", e.Seq, e.Artifact.Artifact.ArtifactID)
	}
	return "?"
}

// collect watches id to the end and returns the described events.
func collect(tb testing.TB, e *env, id string, after *uint64) ([]string, error) {
	tb.Helper()
	var out []string
	err := e.svc.Watch(ctx, tasks.Caller{}, id, after, func(ev tasks.StreamEvent) error {
		out = append(out, describe(ev))
		return nil
	})
	return out, err
}

// progressBackend reports n notes, then an artifact in two chunks, waiting
// on step before each report (when step is not nil).
func progressBackend(n int, step <-chan struct{}) *Backend {
	return &Backend{Fn: func(ctx context.Context, in json.RawMessage) (functions.Result, error) {
		wait := func() error {
			if step == nil {
				return nil
			}
			select {
			case <-step:
				return nil
			case <-ctx.Done():
				return &functions.CallError{Reason: "call canceled"}
			}
		}
		for i := range n {
			if err := wait(); err != nil {
				return functions.Result{}, err
			}
			functions.ReportProgress(ctx, functions.Progress{Message: fmt.Sprintf("step %d", i+1)})
		}
		a, b := "hello ", "world"
		functions.ReportProgress(ctx, functions.Progress{Artifact: &functions.ProgressArtifact{ArtifactID: "text", Name: "Text", Text: &a}})
		functions.ReportProgress(ctx, functions.Progress{Artifact: &functions.ProgressArtifact{ArtifactID: "text", Text: &b, Append: true, LastChunk: true}})
		return functions.Result{Output: json.RawMessage(`{"done":true}`)}, nil
	}}
}

func TestWatchFollowsATaskToItsFinalEvent(t *testing.T) {
	step := make(chan struct{})
	e := newEnv(t, tasks.Config{}, fn(t, "demo::progress", progressBackend(2, step)))
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::progress", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, e, tasks.Caller{}, task.ID, a2a.StateWorking)
	got := make(chan []string, 1)
	go func() {
		evs, err := collect(t, e, task.ID, nil)
		if err != nil {
			t.Error(err)
		}
		got <- evs
	}()
	time.Sleep(50 * time.Millisecond) // the watcher is live before the call reports
	step <- struct{}{}
	step <- struct{}{}
	evs := <-got
	want := "[2:task:working 3:status:working 4:status:working 5:artifact:text 6:artifact:text 7:artifact:"
	if s := fmt.Sprint(evs); !strings.HasPrefix(s, want) || !strings.HasSuffix(s, "8:status:completed:final]") {
		t.Fatalf("events %s", s)
	}
	// The stored task merged the chunks.
	final, _ := e.svc.Get(ctx, tasks.Caller{}, task.ID, nil)
	if len(final.Artifacts) != 2 || len(final.Artifacts[0].Parts) != 2 || final.Artifacts[0].Parts[1].Text != "world" {
		t.Fatalf("artifacts %+v", final.Artifacts)
	}
	// Progress notes are status messages, not history.
	if len(final.History) != 1 {
		t.Fatalf("history has %d messages; progress notes must not go there", len(final.History))
	}
}

func TestWatchResumesAfterASequence(t *testing.T) {
	e := newEnv(t, tasks.Config{}, fn(t, "demo::progress", progressBackend(3, nil)))
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::progress", `{}`)))
	if err != nil || task.Status.State != a2a.StateCompleted {
		t.Fatalf("send: %v", err)
	}
	full, err := collect(t, e, task.ID, new(uint64))
	if err != nil {
		t.Fatal(err)
	}
	if len(full) < 8 || full[0] != "1:status:submitted" || !strings.HasSuffix(full[len(full)-1], ":completed:final") {
		t.Fatalf("full log %v", full)
	}
	for after := range uint64(len(full)) {
		got, err := collect(t, e, task.ID, &after)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(full[after:]) {
			t.Fatalf("after %d: %v, want %v", after, got, full[after:])
		}
	}
	// A task that is already settled, without a sequence: the task, then
	// its final status.
	got, _ := collect(t, e, task.ID, nil)
	last := uint64(len(full))
	if want := fmt.Sprintf("[%d:task:completed %d:status:completed:final]", last, last); fmt.Sprint(got) != want {
		t.Fatalf("settled task: %v, want %s", got, want)
	}
}

func TestWatchErrors(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e := newEnv(t, tasks.Config{}, fn(t, "demo::slow", blockingBackend(release)))
	if _, err := collect(t, e, "no-such-task", nil); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
	task, _, _ := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::slow", `{}`)))
	if err := e.svc.Watch(ctx, tasks.Caller{ID: "mallory"}, task.ID, nil, func(tasks.StreamEvent) error { return nil }); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("foreign task: %v", err)
	}
	boom := errors.New("client gone")
	if err := e.svc.Watch(ctx, tasks.Caller{}, task.ID, nil, func(tasks.StreamEvent) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("emit error: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := e.svc.Watch(cctx, tasks.Caller{}, task.ID, nil, func(tasks.StreamEvent) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx end: %v", err)
	}
	// A watcher that disconnects does not cancel the task.
	if got, _ := e.svc.Get(ctx, tasks.Caller{}, task.ID, nil); got.Status.State != a2a.StateWorking {
		t.Fatalf("state after the watchers left: %s", got.Status.State)
	}
}

func TestCancelEndsTheStream(t *testing.T) {
	e := newEnv(t, tasks.Config{}, fn(t, "demo::slow", blockingBackend(make(chan struct{}))))
	task, _, _ := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::slow", `{}`)))
	waitState(t, e, tasks.Caller{}, task.ID, a2a.StateWorking)
	got := make(chan []string, 1)
	go func() {
		evs, _ := collect(t, e, task.ID, nil)
		got <- evs
	}()
	time.Sleep(30 * time.Millisecond)
	if _, err := e.svc.Cancel(ctx, tasks.Caller{}, task.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case evs := <-got:
		if last := evs[len(evs)-1]; !strings.HasSuffix(last, ":status:canceled:final") {
			t.Fatalf("stream ended with %s", last)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end after the cancel")
	}
}

// TestManyWatchersSeeTheSameSequence: every watcher sees the same events
// in the same order.
func TestManyWatchersSeeTheSameSequence(t *testing.T) {
	step := make(chan struct{})
	e := newEnv(t, tasks.Config{}, fn(t, "demo::progress", progressBackend(5, step)))
	task, _, _ := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::progress", `{}`)))
	waitState(t, e, tasks.Caller{}, task.ID, a2a.StateWorking)
	const n = 100
	var wg sync.WaitGroup
	seqs := make([][]string, n)
	started := make(chan struct{}, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out []string
			err := e.svc.Watch(ctx, tasks.Caller{}, task.ID, nil, func(ev tasks.StreamEvent) error {
				if ev.Task != nil {
					started <- struct{}{}
					return nil
				}
				out = append(out, describe(ev))
				return nil
			})
			if err != nil {
				t.Error(err)
			}
			seqs[i] = out
		}()
	}
	for range n {
		<-started
	}
	for range 5 {
		step <- struct{}{}
	}
	wg.Wait()
	for i := range n {
		if fmt.Sprint(seqs[i]) != fmt.Sprint(seqs[0]) {
			t.Fatalf("watcher %d saw %v, watcher 0 saw %v", i, seqs[i], seqs[0])
		}
	}
	if len(seqs[0]) < 9 || !strings.HasSuffix(seqs[0][len(seqs[0])-1], ":completed:final") {
		t.Fatalf("sequence %v", seqs[0])
	}
}

// TestSlowWatcherIsCutOffAndResumesWithoutLoss: a watcher that cannot keep
// up is cut off instead of holding anything up, and resuming from its
// last event gets the rest, nothing lost, nothing twice.
func TestSlowWatcherIsCutOffAndResumesWithoutLoss(t *testing.T) {
	gate := make(chan struct{})
	b := &Backend{Fn: func(ctx context.Context, in json.RawMessage) (functions.Result, error) {
		<-gate
		return progressBackend(20, nil).Fn(ctx, in)
	}}
	e := newEnv(t, tasks.Config{StreamBuffer: 2}, fn(t, "demo::progress", b))
	task, _, _ := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::progress", `{}`)))
	waitState(t, e, tasks.Caller{}, task.ID, a2a.StateWorking)

	var seen []string
	var last uint64
	slowDone := make(chan error, 1)
	go func() {
		slowDone <- e.svc.Watch(ctx, tasks.Caller{}, task.ID, nil, func(ev tasks.StreamEvent) error {
			if ev.Task == nil {
				seen = append(seen, describe(ev))
			}
			last = ev.Seq
			time.Sleep(20 * time.Millisecond) // a slow client
			return nil
		})
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	close(gate)
	// The task is not held up by the slow watcher.
	waitState(t, e, tasks.Caller{}, task.ID, a2a.StateCompleted)
	if d := time.Since(start); d > 300*time.Millisecond {
		t.Fatalf("the task took %s with a slow watcher", d)
	}
	if err := <-slowDone; !errors.Is(err, tasks.ErrSlowSubscriber) {
		t.Fatalf("slow watcher ended with %v, want ErrSlowSubscriber", err)
	}
	rest, err := collect(t, e, task.ID, &last)
	if err != nil {
		t.Fatal(err)
	}
	all := append(seen, rest...)
	full, _ := collect(t, e, task.ID, new(uint64))
	// The watcher joined at the task's snapshot (seq 2): compare from there.
	if fmt.Sprint(all) != fmt.Sprint(full[2:]) {
		t.Fatalf("seen + resumed:\n%v\nwant\n%v", all, full[2:])
	}
}

// Progress reported inside the speculation window of a retry-safe call is
// stored with the task.
func TestProgressDuringSpeculationIsKept(t *testing.T) {
	e := newEnv(t, tasks.Config{}, fn(t, "demo::quick", progressBackend(2, nil), retrySafe))
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::quick", `{}`)))
	if err != nil || task.Status.State != a2a.StateCompleted {
		t.Fatalf("send: %v %+v", err, task)
	}
	full, _ := collect(t, e, task.ID, new(uint64))
	want := "[1:status:submitted 2:status:working 3:status:working 4:status:working 5:artifact:text 6:artifact:text"
	if s := fmt.Sprint(full); !strings.HasPrefix(s, want) || !strings.HasSuffix(s, ":completed:final]") {
		t.Fatalf("events %s", s)
	}
	// And when the window passes first, the progress so far is stored, in
	// order, before what comes after.
	step := make(chan struct{})
	e2 := newEnv(t, tasks.Config{}, fn(t, "demo::slow", progressBackend(3, step), retrySafe))
	done := make(chan *a2a.Task, 1)
	go func() {
		task, _, _ := e2.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::slow", `{}`)))
		done <- task
	}()
	step <- struct{}{}                // inside the window
	time.Sleep(60 * time.Millisecond) // past it
	step <- struct{}{}
	step <- struct{}{}
	task2 := <-done
	full2, _ := collect(t, e2, task2.ID, new(uint64))
	if s := fmt.Sprint(full2); !strings.HasPrefix(s, "[1:status:submitted 2:status:working 3:status:working 4:status:working 5:status:working 6:artifact:text") {
		t.Fatalf("events %s", s)
	}
}

// TestWatchAfterAnIDPastTheEnd: a resume id past the task's last event
// (from a store since restored, say) does not swallow the live events:
// the stream still ends at the final one.
func TestWatchAfterAnIDPastTheEnd(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, tasks.Config{}, fn(t, "demo::slow", blockingBackend(release)))
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, sendNonBlocking(dataMsg("m1", "demo::slow", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() {
		far := uint64(1000)
		got, err := collect(t, e, task.ID, &far)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	time.Sleep(50 * time.Millisecond)
	close(release)
	select {
	case got := <-done:
		if len(got) == 0 || !strings.HasSuffix(got[len(got)-1], ":completed:final") {
			t.Fatalf("events after id 1000: %v, want the live events to the final one", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end at the task's final event")
	}
}

func sendNonBlocking(m a2a.Message) a2a.SendParams {
	no := false
	return a2a.SendParams{Message: m, Blocking: &no}
}

// TestSubscribeThroughInputRequired: Subscribe on a task in
// input-required stays open (its status not final) and follows the task
// through the answer to its terminal state; Watch ends at
// input-required, as before.
func TestSubscribeThroughInputRequired(t *testing.T) {
	b := approvalBackend(0)
	e := newEnv(t, tasks.Config{}, fn(t, "orders::place", b))
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "orders::place", `{"sku":"a"}`)))
	if err != nil || task.Status.State != a2a.StateInputRequired {
		t.Fatalf("send: %v %+v", err, task)
	}
	if evs, err := collect(t, e, task.ID, nil); err != nil || fmt.Sprint(evs) != "[3:task:input-required 3:status:input-required:final]" {
		t.Fatalf("Watch: %v %v", evs, err)
	}
	type result struct {
		evs []string
		err error
	}
	got := make(chan result, 1)
	first := make(chan struct{})
	go func() {
		var evs []string
		err := e.svc.Subscribe(ctx, tasks.Caller{}, task.ID, nil, func(ev tasks.StreamEvent) error {
			evs = append(evs, describe(ev))
			if len(evs) == 1 {
				close(first)
			}
			return nil
		})
		got <- result{evs, err}
	}()
	<-first
	select {
	case r := <-got:
		t.Fatalf("the subscription ended at input-required: %v %v", r.evs, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	m := a2a.Message{MessageID: "m2", TaskID: task.ID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"sku":"a","approved":true}`))}}
	if done, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m)); err != nil || done.Status.State != a2a.StateCompleted {
		t.Fatalf("answer: %v %+v", err, done)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscription did not end at the terminal state")
	}
	s := fmt.Sprint(r.evs)
	if r.err != nil || !strings.HasPrefix(s, "[3:task:input-required ") || !strings.HasSuffix(s, ":status:completed:final]") ||
		strings.Contains(s, "input-required:final") || !strings.Contains(s, ":status:working ") {
		t.Fatalf("Subscribe: %s %v", s, r.err)
	}
	// A terminal task: its task and final status at once, as Watch.
	evs, err := func() ([]string, error) {
		var out []string
		err := e.svc.Subscribe(ctx, tasks.Caller{}, task.ID, nil, func(ev tasks.StreamEvent) error { out = append(out, describe(ev)); return nil })
		return out, err
	}()
	if err != nil || len(evs) != 2 || !strings.HasSuffix(evs[1], ":status:completed:final") {
		t.Fatalf("Subscribe of a finished task: %v %v", evs, err)
	}
}
