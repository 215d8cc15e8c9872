package tasks

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestExecutorReserve(t *testing.T) {
	ex := newExecutor(1, 1) // two places in all
	a, b := callKey{owner: "a"}, callKey{owner: "b"}
	if err := ex.reserve(a, 1); err != nil {
		t.Fatalf("reserve(a, 1) = %v, want nil", err)
	}
	if err := ex.reserve(a, 1); err != ErrCallerBusy {
		t.Fatalf("reserve(a, 1) past a's cap = %v, want %v", err, ErrCallerBusy)
	}
	if err := ex.reserve(b, 0); err != nil {
		t.Fatalf("reserve(b, 0) = %v, want nil", err)
	}
	if err := ex.reserve(b, 0); err != ErrBusy {
		t.Fatalf("reserve(b, 0) past the queue = %v, want %v", err, ErrBusy)
	}
	if err := ex.reserve(a, 1); err != ErrCallerBusy {
		t.Fatalf("reserve(a, 1) with the server full = %v, want %v (the caller's cap first)", err, ErrCallerBusy)
	}
	ex.unreserve(a)
	ex.unreserve(b)
	if ex.inflight != 0 || len(ex.calls) != 0 {
		t.Fatalf("after unreserve: inflight %d, calls %v; want 0 and none", ex.inflight, ex.calls)
	}
	ex.Close(context.Background())
	if err := ex.reserve(a, 0); err != ErrClosed {
		t.Fatalf("reserve after Close = %v, want %v", err, ErrClosed)
	}
	if ex.hold(a) {
		t.Fatal("hold after Close = true, want false")
	}
}

// TestExecutorCloseWaits: Close waits for a run to end on its own while
// ctx lasts, and gives the place back.
func TestExecutorCloseWaits(t *testing.T) {
	ex := newExecutor(1, 0)
	k := callKey{owner: "a"}
	if err := ex.reserve(k, 0); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var cause error
	ex.spawn("t1", "demo::sleep", k, func(ctx context.Context, _ func()) {
		select {
		case <-release:
		case <-ctx.Done():
			cause = context.Cause(ctx)
		}
	})
	closed := make(chan struct{})
	go func() { ex.Close(context.Background()); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a run was going on")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
	if cause != nil || ex.inflight != 0 || len(ex.runs) != 0 {
		t.Fatalf("after Close: cause %v, inflight %d, runs %d; want nil, 0, 0", cause, ex.inflight, len(ex.runs))
	}
}

// TestExecutorCloseCancels: once ctx is done, Close cancels the runs
// left with errShuttingDown and waits for them; stop cancels one run
// with its cause.
func TestExecutorCloseCancels(t *testing.T) {
	ex := newExecutor(2, 0)
	causes := make(chan error, 2)
	for _, id := range []string{"t1", "t2"} {
		k := callKey{owner: id}
		if err := ex.reserve(k, 0); err != nil {
			t.Fatal(err)
		}
		ex.spawn(id, "demo::sleep", k, func(ctx context.Context, _ func()) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
		})
	}
	ex.stop("t1", errCanceledByClient)
	if got := <-causes; !errors.Is(got, errCanceledByClient) {
		t.Fatalf("stop: cause %v, want %v", got, errCanceledByClient)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ex.Close(ctx)
	select {
	case got := <-causes:
		if !errors.Is(got, errShuttingDown) {
			t.Fatalf("Close: cause %v, want %v", got, errShuttingDown)
		}
	default:
		t.Fatal("Close returned before the run it canceled ended")
	}
	if ex.inflight != 0 {
		t.Fatalf("after Close: inflight %d, want 0", ex.inflight)
	}
}

// TestExecutorLeave: a run's leave gives its place back to the caps at
// once, twice as once, while Close still waits for the run to end.
func TestExecutorLeave(t *testing.T) {
	ex := newExecutor(1, 0)
	k := callKey{owner: "a"}
	if err := ex.reserve(k, 1); err != nil {
		t.Fatal(err)
	}
	left, release := make(chan struct{}), make(chan struct{})
	ex.spawn("t1", "demo::sleep", k, func(ctx context.Context, leave func()) {
		leave()
		leave()
		close(left)
		<-release
	})
	<-left
	if err := ex.reserve(k, 1); err != nil {
		t.Fatalf("reserve after leave: %v, want nil", err)
	}
	if err := ex.reserve(k, 1); !errors.Is(err, ErrCallerBusy) {
		t.Fatalf("reserve past the cap: %v, want ErrCallerBusy", err)
	}
	ex.unreserve(k)
	closed := make(chan struct{})
	go func() { ex.Close(context.Background()); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a run that left was going on")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
	if ex.inflight != 0 || len(ex.calls) != 0 {
		t.Fatalf("after Close: inflight %d, calls %v; want 0, none", ex.inflight, ex.calls)
	}
}
