package callers

import (
	"context"
	"testing"
	"time"
)

// TestAnswersBoundEachCallersBytes: a caller's answers are admitted while
// they fit, the first always; one past the bound waits for room and is
// admitted when another ends, or refused after the wait; other callers
// are not affected.
func TestAnswersBoundEachCallersBytes(t *testing.T) {
	ctx := context.Background()
	a := NewAnswers(100, 200*time.Millisecond)
	big, ok := a.Acquire(ctx, "k", 150) // over the bound alone: the first goes
	if !ok || a.Held("k") != 150 {
		t.Fatalf("first answer: ok %v, held %d", ok, a.Held("k"))
	}
	start := time.Now()
	if _, ok := a.Acquire(ctx, "k", 1); ok || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("second answer past the bound: ok %v after %v; want refused after the wait", ok, time.Since(start))
	}
	other, ok := a.Acquire(ctx, "other", 60)
	if !ok {
		t.Fatal("another caller was refused")
	}
	go func() { time.Sleep(50 * time.Millisecond); big() }()
	rel, ok := a.Acquire(ctx, "k", 60)
	if !ok || a.Held("k") != 60 {
		t.Fatalf("an answer that waited for room: ok %v, held %d", ok, a.Held("k"))
	}
	rel()
	rel() // once
	other()
	if a.Held("k") != 0 || a.Held("other") != 0 {
		t.Fatalf("held after release: %d, %d", a.Held("k"), a.Held("other"))
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	hold, _ := a.Acquire(ctx, "k", 100)
	defer hold()
	if _, ok := a.Acquire(canceled, "k", 1); ok {
		t.Fatal("an answer whose request ended was admitted past the bound")
	}
}
