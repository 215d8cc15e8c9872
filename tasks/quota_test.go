package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

func notRetrySafe(f *functions.Function) { f.RetrySafe = false }

// askBackend asks for input on every call: each answer grows the task's
// history by the answer and the next question.
func askBackend() *Backend {
	return &Backend{Fn: func(context.Context, json.RawMessage) (functions.Result, error) {
		return functions.Result{InputRequired: "And then?"}, nil
	}}
}

// stored says whether the caller's message is bound, and how many tasks
// and bytes the caller has stored.
func stored(tb testing.TB, e *env, caller tasks.Caller, m a2a.Message) (bound bool, u tasks.Usage) {
	tb.Helper()
	_, err := e.store.Lookup(ctx, tasks.KeyFor(caller.ID, &m))
	switch {
	case err == nil:
		bound = true
	case !errors.Is(err, tasks.ErrNotFound):
		tb.Fatal(err)
	}
	u, err = e.store.Usage(ctx, caller.ID)
	if err != nil {
		tb.Fatal(err)
	}
	return bound, u
}

// TestQuotaRefusalsStoreNothing: a new task past the caller's task or
// byte quota is a *QuotaError, the call does not run, nothing is stored
// and the messageId stays free; a retry of a message that was taken is
// still answered; another caller is not affected.
func TestQuotaRefusalsStoreNothing(t *testing.T) {
	echo := echoBackend()
	e := newEnv(t, tasks.Config{}, fn(t, "demo::echo", echo, notRetrySafe))
	acme := tasks.Caller{ID: "acme", Quota: tasks.Quota{Tasks: 2}}
	first := dataMsg("m-1", "demo::echo", `{"n":1}`)
	for _, m := range []a2a.Message{first, dataMsg("m-2", "demo::echo", `{"n":2}`)} {
		if task, _, err := e.svc.Send(ctx, acme, send(m)); err != nil || task.Status.State != a2a.StateCompleted {
			t.Fatalf("send %s = %v, %v", m.MessageID, task, err)
		}
	}
	calls := echo.calls.Load()
	third := dataMsg("m-3", "demo::echo", `{"n":3}`)
	_, before := stored(t, e, acme, third)
	_, _, err := e.svc.Send(ctx, acme, send(third))
	var qe *tasks.QuotaError
	if !errors.As(err, &qe) || *qe != (tasks.QuotaError{Which: tasks.QuotaTasks, Used: 2, Limit: 2}) {
		t.Fatalf("third task of a 2-task quota = %v, want QuotaError{tasks, 2, 2}", err)
	}
	if bound, after := stored(t, e, acme, third); bound || after != before {
		t.Fatalf("after the refusal: bound %v, usage %+v (was %+v); want unbound, unchanged", bound, after, before)
	}
	if n := echo.calls.Load(); n != calls {
		t.Fatalf("the refused send ran the function (%d calls, was %d)", n, calls)
	}
	if task, _, err := e.svc.Send(ctx, acme, send(first)); err != nil || task.Status.State != a2a.StateCompleted {
		t.Fatalf("a retry of a taken message over the quota = %v, %v; want its task", task, err)
	}
	if _, _, err := e.svc.Send(ctx, tasks.Caller{ID: "bob", Quota: acme.Quota}, send(third)); err != nil {
		t.Fatalf("bob's first task = %v", err)
	}

	// Bytes: a large input past what is left.
	big := tasks.Caller{ID: "carol", Quota: tasks.Quota{Bytes: 4000}}
	if _, _, err := e.svc.Send(ctx, big, send(dataMsg("c-1", "demo::echo", `{"s":"`+strings.Repeat("x", 1000)+`"}`))); err != nil {
		t.Fatal(err)
	}
	_, before = stored(t, e, big, third)
	huge := dataMsg("c-2", "demo::echo", `{"s":"`+strings.Repeat("x", 3000)+`"}`)
	_, _, err = e.svc.Send(ctx, big, send(huge))
	if !errors.As(err, &qe) || *qe != (tasks.QuotaError{Which: tasks.QuotaBytes, Used: before.Bytes, Limit: 4000}) {
		t.Fatalf("a 3000-byte input with %d of 4000 bytes used = %v", before.Bytes, err)
	}
	if bound, after := stored(t, e, big, huge); bound || after != before {
		t.Fatalf("after the refusal: bound %v, usage %+v (was %+v)", bound, after, before)
	}
}

// TestQuotaRefusesAFollowUp: an answer to an input-required task that
// would pass the byte quota is refused; the task is as it was.
func TestQuotaRefusesAFollowUp(t *testing.T) {
	e := newEnv(t, tasks.Config{}, fn(t, "demo::ask", askBackend()))
	acme := tasks.Caller{ID: "acme", Quota: tasks.Quota{Bytes: 6000}}
	task, _, err := e.svc.Send(ctx, acme, send(dataMsg("m-1", "demo::ask", `{}`)))
	if err != nil || task.Status.State != a2a.StateInputRequired {
		t.Fatalf("first send = %v, %v", task, err)
	}
	answer := textMsg("m-2", strings.Repeat("y", 5000))
	answer.TaskID = task.ID
	_, before := stored(t, e, acme, answer)
	rec, _ := e.store.Get(ctx, "acme", task.ID, tasks.Whole)
	_, _, err = e.svc.Send(ctx, acme, send(answer))
	if !errors.Is(err, tasks.ErrQuotaExceeded) {
		t.Fatalf("a 5000-byte answer with %d of 6000 bytes used = %v, want ErrQuotaExceeded", before.Bytes, err)
	}
	after, _ := e.store.Get(ctx, "acme", task.ID, tasks.Whole)
	if bound, u := stored(t, e, acme, answer); bound || u != before || after.Seq != rec.Seq || len(after.Task.History) != len(rec.Task.History) {
		t.Fatalf("after the refusal: bound %v, usage %+v (was %+v), seq %d (was %d)", bound, u, before, after.Seq, rec.Seq)
	}
}

// TestHistoryCap: an input-required loop takes messages until the task
// holds MaxHistory, then refuses the next with a *TaskLimitError and
// stores nothing; a retry of the last message taken is still answered.
func TestHistoryCap(t *testing.T) {
	e := newEnv(t, tasks.Config{}, fn(t, "demo::ask", askBackend()))
	acme := tasks.Caller{ID: "acme", MaxHistory: 6}
	task, _, err := e.svc.Send(ctx, acme, send(dataMsg("m-0", "demo::ask", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	var last a2a.Message
	for i := 1; ; i++ {
		if i > 10 {
			t.Fatal("10 answers taken by a task of at most 6 messages")
		}
		m := textMsg(fmt.Sprintf("m-%d", i), "more")
		m.TaskID = task.ID
		got, _, err := e.svc.Send(ctx, acme, send(m))
		if err != nil {
			var te *tasks.TaskLimitError
			if !errors.As(err, &te) || *te != (tasks.TaskLimitError{Messages: 6, Max: 6}) || !errors.Is(err, tasks.ErrTaskLimit) {
				t.Fatalf("answer %d = %v, want TaskLimitError{6, 6}", i, err)
			}
			if i != 3 {
				t.Fatalf("refused at answer %d, want 3 (each answer adds 2 messages to the first 2)", i)
			}
			rec, _ := e.store.Get(ctx, "acme", task.ID, tasks.Whole)
			if bound, _ := stored(t, e, acme, m); bound || len(rec.Task.History) != 6 || rec.State() != a2a.StateInputRequired {
				t.Fatalf("after the refusal: bound %v, %d messages, %s", bound, len(rec.Task.History), rec.State())
			}
			break
		}
		if got.Status.State != a2a.StateInputRequired {
			t.Fatalf("answer %d: %s", i, got.Status.State)
		}
		last = m
	}
	if got, _, err := e.svc.Send(ctx, acme, send(last)); err != nil || len(got.History) != 6 {
		t.Fatalf("a retry of the last answer taken = %v, %v; want the task", got, err)
	}
	// Without a cap the loop goes on.
	free := tasks.Caller{ID: "free"}
	task, _, _ = e.svc.Send(ctx, free, send(dataMsg("f-0", "demo::ask", `{}`)))
	for i := 1; i <= 5; i++ {
		m := textMsg(fmt.Sprintf("f-%d", i), "more")
		m.TaskID = task.ID
		if _, _, err := e.svc.Send(ctx, free, send(m)); err != nil {
			t.Fatalf("uncapped answer %d = %v", i, err)
		}
	}
}

// TestArtifactCap: a result that would take the task's artifacts past
// MaxTaskArtifactBytes fails the task with output_too_large and is not
// stored; on the fast path (retry-safe) and the stored one alike.
func TestArtifactCap(t *testing.T) {
	for _, opt := range []func(*functions.Function){retrySafe, notRetrySafe} {
		e := newEnv(t, tasks.Config{MaxTaskArtifactBytes: 100}, fn(t, "demo::echo", echoBackend(), opt))
		caller := tasks.Caller{ID: "acme"}
		small, _, err := e.svc.Send(ctx, caller, send(dataMsg("m-1", "demo::echo", `{"s":"ok"}`)))
		if err != nil || small.Status.State != a2a.StateCompleted || len(small.Artifacts) != 1 {
			t.Fatalf("small output = %v, %v", small, err)
		}
		task, _, err := e.svc.Send(ctx, caller, send(dataMsg("m-2", "demo::echo", `{"s":"`+strings.Repeat("x", 200)+`"}`)))
		if err != nil {
			t.Fatal(err)
		}
		want := "Function output is too large: the task's artifacts would take 208 bytes, over the limit of 100; the output was not stored"
		if task.Status.State != a2a.StateFailed || statusText(task) != want || len(task.Artifacts) != 0 {
			t.Fatalf("large output: %s %q, %d artifacts; want failed %q, none", task.Status.State, statusText(task), len(task.Artifacts), want)
		}
		if got := task.Status.Message.Metadata[tasks.FailureKey]; got != tasks.FailureTooLarge {
			t.Errorf("failure class = %v, want %s", got, tasks.FailureTooLarge)
		}
		evs, _ := e.store.Events(ctx, task.ID, 0)
		for _, ev := range evs {
			if ev.Artifact != nil {
				t.Errorf("an artifact event was stored: %+v", ev)
			}
		}
	}
}

// TestArtifactCapStopsAStreamingCall: the chunk that takes a task's
// artifacts past the cap fails the task and stops the call; the chunks
// before it stay, the rest is not stored.
func TestArtifactCapStopsAStreamingCall(t *testing.T) {
	stopped := make(chan error, 1)
	b := &Backend{Fn: func(ctx context.Context, _ json.RawMessage) (functions.Result, error) {
		chunk := strings.Repeat("z", 60)
		for i := range 3 {
			functions.ReportProgress(ctx, functions.Progress{Artifact: &functions.ProgressArtifact{
				ArtifactID: "out", Text: &chunk, Append: i > 0,
			}})
		}
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return functions.Result{Output: json.RawMessage(`{}`)}, nil
	}}
	e := newEnv(t, tasks.Config{MaxTaskArtifactBytes: 100}, fn(t, "demo::stream", b, notRetrySafe))
	caller := tasks.Caller{ID: "acme"}
	task, _, err := e.svc.Send(ctx, caller, send(dataMsg("m-1", "demo::stream", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	want := "Function output is too large: the task's artifacts would take 120 bytes, over the limit of 100; " +
		"the call was stopped and the rest of its output was not stored"
	if task.Status.State != a2a.StateFailed || statusText(task) != want {
		t.Fatalf("task = %s %q, want failed %q", task.Status.State, statusText(task), want)
	}
	if diff := cmp.Diff([]a2a.Artifact{{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart(strings.Repeat("z", 60))}}}, task.Artifacts); diff != "" {
		t.Errorf("artifacts (-want +got):\n%s", diff)
	}
	if cause := <-stopped; cause == nil {
		t.Fatal("the call was not stopped")
	}
}

// TestQuotaStopsARunningCall: a running call's progress that would take
// its caller past the byte quota is not stored; the task fails with the
// -32055 refusal's words (a2ad.failure quota_exceeded) and the call is
// stopped, so the caller's usage stays within the quota but for the
// failed status (issue 25: 32 calls reporting progress took a key to
// 1.18 GB of a 1 GiB quota, the writes counted and never refused).
func TestQuotaStopsARunningCall(t *testing.T) {
	const note = 10 << 10 // each report's bytes
	stopped := make(chan error, 1)
	b := &Backend{Fn: func(ctx context.Context, _ json.RawMessage) (functions.Result, error) {
		text := strings.Repeat("p", note)
		for range 100 { // 1 MB in all, 30 times the quota
			if ctx.Err() != nil {
				break
			}
			functions.ReportProgress(ctx, functions.Progress{Message: text})
		}
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return functions.Result{Output: json.RawMessage(`{}`)}, nil
	}}
	e := newEnv(t, tasks.Config{}, fn(t, "demo::chatty", b, notRetrySafe))
	const limit = 32 << 10
	acme := tasks.Caller{ID: "acme", Quota: tasks.Quota{Bytes: limit}}
	task, _, err := e.svc.Send(ctx, acme, send(dataMsg("m-1", "demo::chatty", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.StateFailed {
		t.Fatalf("task = %s %q, want failed", task.Status.State, statusText(task))
	}
	var used int64
	if _, err := fmt.Sscanf(statusText(task), "Storage quota exceeded: %d of", &used); err != nil || used > limit {
		t.Fatalf("status text %q: want the quota's words with at most %d used (%v)", statusText(task), limit, err)
	}
	want := fmt.Sprintf("Storage quota exceeded: %d of %d bytes stored; wait for old tasks to expire or ask the operator for more", used, limit)
	if statusText(task) != want || task.Status.Message.Metadata[tasks.FailureKey] != tasks.FailureQuota {
		t.Fatalf("status %q %v, want %q classed %q", statusText(task), task.Status.Message.Metadata, want, tasks.FailureQuota)
	}
	if cause := <-stopped; cause == nil {
		t.Fatal("the call was not stopped")
	}
	// Within the quota, but for the failed status: one small write.
	u, err := e.store.Usage(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if u.Bytes > limit+2048 {
		t.Fatalf("usage %d bytes, want at most the quota %d and the failed status (2 KiB)", u.Bytes, limit)
	}
	t.Logf("usage %d of %d bytes; %d used when the report was refused", u.Bytes, limit, used)
}
