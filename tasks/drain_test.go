package tasks_test

import (
	"context"
	"errors"
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
