package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// TestDrain: Drain refuses new calls while running ones go on, says once
// a second what it waits for, returns ctx's error when the grace ends
// first and nil once the calls have ended.
func TestDrain(t *testing.T) {
	release := make(chan struct{})
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "a2ad.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cat := functions.NewCatalog(fn(t, "demo::wait", blockingBackend(release)), fn(t, "demo::echo", echoBackend()))
	var log testkit.SyncBuffer
	svc := tasks.New(tasks.Config{Store: store, Catalog: func() *functions.Catalog { return cat }, Logger: zerolog.New(&log)})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Close(ctx) }()
	var ids []string
	for _, m := range []string{"m1", "m2"} {
		task, _, err := svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg(m, "demo::wait", `{}`)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}

	grace, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if err := svc.Drain(grace); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain with calls running = %v, want %v", err, context.DeadlineExceeded)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if strings.Contains(l, `"message":"draining: waiting for running calls"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 { // at once, and after a second
		t.Fatalf("%d drain lines in 1.5 s, want 2:\n%s", len(lines), log.String())
	}
	for _, l := range lines {
		if !strings.Contains(l, `"calls":2,"functions":{"demo::wait":2},"grace_left":`) {
			t.Errorf("drain line %s, want 2 calls of demo::wait and the grace left", l)
		}
	}
	if _, _, err := svc.Send(ctx, tasks.Caller{}, send(dataMsg("m3", "demo::echo", `{}`))); !errors.Is(err, tasks.ErrClosed) {
		t.Fatalf("Send while draining = %v, want %v", err, tasks.ErrClosed)
	}

	close(release)
	if err := svc.Drain(context.Background()); err != nil {
		t.Fatalf("Drain once the calls end = %v", err)
	}
	for _, id := range ids {
		if got, err := svc.Get(ctx, tasks.Caller{}, id, nil); err != nil || got.Status.State != a2a.StateCompleted {
			t.Errorf("task %s after the drain: %v, %v; want completed", id, got, err)
		}
	}
}

// TestCloseReportsCutCalls: Close whose ctx ends while calls run cuts
// them and says how many of each function, leaving their tasks working
// for recovery; a Close within which every call ended returns nil.
func TestCloseReportsCutCalls(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e := newEnv(t, tasks.Config{}, fn(t, "demo::wait", blockingBackend(release)), fn(t, "demo::hold", blockingBackend(release)))
	svc := e.svc
	var ids []string
	for i, f := range []string{"demo::wait", "demo::wait", "demo::hold"} {
		task, _, err := svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg(fmt.Sprint("m", i), f, `{}`)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	waitState(t, e, tasks.Caller{}, ids[2], a2a.StateWorking)
	grace, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := svc.Close(grace)
	var cut *tasks.CutError
	if !errors.As(err, &cut) || cut.Calls["demo::wait"] != 2 || cut.Calls["demo::hold"] != 1 || len(cut.Calls) != 2 {
		t.Fatalf("Close with 3 calls running = %v, want a CutError of demo::wait 2 and demo::hold 1", err)
	}
	const want = "shutdown cut 3 running calls (demo::hold: 1, demo::wait: 2); their tasks are resumed at the next start or by another replica"
	if err.Error() != want {
		t.Errorf("Close's error says\n%q\nwant\n%q", err, want)
	}
	if err := svc.Close(ctx); err != nil {
		t.Errorf("a second Close = %v, want nil", err)
	}
	for _, id := range ids {
		if got, err := e.store.Get(ctx, "", id, tasks.Head); err != nil || got.Task.Status.State != a2a.StateWorking {
			t.Errorf("task %s after the cut: %v, %v; want it left working", id, got, err)
		}
	}
}
