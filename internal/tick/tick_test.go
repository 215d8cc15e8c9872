package tick_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/tick"
)

// TestEvery: fn runs on every tick, and Every returns once done closes.
func TestEvery(t *testing.T) {
	var n atomic.Int32
	done := make(chan struct{})
	returned := make(chan struct{})
	go func() { tick.Every(done, time.Millisecond, func() { n.Add(1) }); close(returned) }()
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("fn ran %d times in 5s", n.Load())
		}
		time.Sleep(time.Millisecond)
	}
	close(done)
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Every did not return after done closed")
	}
	after := n.Load()
	time.Sleep(10 * time.Millisecond)
	if n.Load() != after {
		t.Fatalf("fn ran after Every returned (%d, then %d)", after, n.Load())
	}
}
