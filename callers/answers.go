package callers

import (
	"context"
	"sync"
	"time"
)

// Answers bounds the bytes of each caller's answers in flight: read from
// the store and not yet written to the client. A caller's answer is
// admitted while its answers in flight take the bound at most, and its
// first always is (an answer larger than the bound alone still goes, one
// at a time); beyond, it waits for others to end, up to a short wait,
// and is then refused. It is safe for concurrent use.
type Answers struct {
	max  int64
	wait time.Duration

	mu      sync.Mutex
	held    map[string]int64
	changed chan struct{} // closed and replaced when bytes are given back
}

// NewAnswers returns an Answers that lets each caller hold max bytes
// (max >= 1) and lets an answer wait up to wait for room.
func NewAnswers(max int64, wait time.Duration) *Answers {
	if max < 1 {
		panic("callers: NewAnswers max must be >= 1")
	}
	return &Answers{max: max, wait: wait, held: map[string]int64{}, changed: make(chan struct{})}
}

// Acquire takes n bytes for an answer of key, waiting for room up to the
// wait or until ctx ends. On success it returns the func that gives them
// back, to call once the answer is written; ok is false when there was
// no room in time.
func (a *Answers) Acquire(ctx context.Context, key string, n int64) (release func(), ok bool) {
	var timer *time.Timer
	for {
		a.mu.Lock()
		if h := a.held[key]; h == 0 || h+n <= a.max {
			a.held[key] = h + n
			a.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { a.give(key, n) }) }, true
		}
		changed := a.changed
		a.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(a.wait)
			defer timer.Stop()
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
}

func (a *Answers) give(key string, n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held[key] -= n; a.held[key] <= 0 {
		delete(a.held, key)
	}
	close(a.changed)
	a.changed = make(chan struct{})
}

// Held is the bytes key's answers hold now.
func (a *Answers) Held(key string) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held[key]
}
