package callers_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/internal/testkit"
)

// newFakeClock is a settable clock for the Limiter.
func newFakeClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
}

// newLimiter returns a Limiter on a fake clock with the given defaults.
func newLimiter(tb testing.TB, perSecond float64, burst int) (*callers.Limiter, *testkit.Clock) {
	tb.Helper()
	clock := newFakeClock()
	l := callers.NewLimiter(callers.LimiterConfig{PerSecond: perSecond, Burst: burst, Now: clock.Now})
	return l, clock
}

// mustAllow takes n tokens for caller with the default rate, failing if any is refused.
func mustAllow(tb testing.TB, l *callers.Limiter, caller string, n int) {
	tb.Helper()
	for i := range n {
		if ok, retry := l.Allow(caller, 0, 0); !ok {
			tb.Fatalf("Allow(%q) #%d = false, %v; want true", caller, i+1, retry)
		}
	}
}

// mustRefuse checks that caller is refused with exactly wantRetry.
func mustRefuse(tb testing.TB, l *callers.Limiter, caller string, wantRetry time.Duration) {
	tb.Helper()
	ok, retry := l.Allow(caller, 0, 0)
	if ok || retry != wantRetry {
		tb.Fatalf("Allow(%q) = %v, %v; want false, %v", caller, ok, retry, wantRetry)
	}
}

func TestLimiterNewBucketAllowsBurst(t *testing.T) {
	l, _ := newLimiter(t, 1, 5)
	mustAllow(t, l, "a", 5)
	mustRefuse(t, l, "a", time.Second)
	// A refusal takes nothing.
	mustRefuse(t, l, "a", time.Second)
}

func TestLimiterRefillFractional(t *testing.T) {
	l, clock := newLimiter(t, 2, 4)
	mustAllow(t, l, "a", 4)

	// 1.25 s at 2/s earns 2.5 tokens: two requests pass and the half token
	// left needs 250 ms more.
	clock.Advance(1250 * time.Millisecond)
	mustAllow(t, l, "a", 2)
	mustRefuse(t, l, "a", 250*time.Millisecond)

	// 100 ms earns 0.2, leaving 0.7: 150 ms to go.
	clock.Advance(100 * time.Millisecond)
	mustRefuse(t, l, "a", 150*time.Millisecond)

	// 1.65 s earns 3.3, giving exactly 4.0: four pass, the fifth waits 500 ms.
	clock.Advance(1650 * time.Millisecond)
	mustAllow(t, l, "a", 4)
	mustRefuse(t, l, "a", 500*time.Millisecond)
}

func TestLimiterRefillCappedAtBurst(t *testing.T) {
	l, clock := newLimiter(t, 10, 3)
	mustAllow(t, l, "a", 3)
	clock.Advance(24 * time.Hour)
	mustAllow(t, l, "a", 3)
	mustRefuse(t, l, "a", 100*time.Millisecond)
}

func TestLimiterRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		rate float64
		want time.Duration
	}{
		{rate: 2, want: 500 * time.Millisecond},
		{rate: 3, want: 334 * time.Millisecond},
		{rate: 1, want: time.Second},
		{rate: 7, want: 143 * time.Millisecond},
		{rate: 0.3, want: 3334 * time.Millisecond},
		{rate: 100, want: 10 * time.Millisecond},
		{rate: 3000, want: time.Millisecond},
	} {
		l, clock := newLimiter(t, tt.rate, 1)
		mustAllow(t, l, "a", 1)
		mustRefuse(t, l, "a", tt.want)

		// One millisecond early is still too early...
		clock.Advance(tt.want - time.Millisecond)
		if ok, _ := l.Allow("a", 0, 0); ok {
			t.Fatalf("rate %v: Allow at retryAfter-1ms = true, want false", tt.rate)
		}
		// ...and a retry at exactly retryAfter succeeds.
		l, clock = newLimiter(t, tt.rate, 1)
		mustAllow(t, l, "a", 1)
		_, retry := l.Allow("a", 0, 0)
		clock.Advance(retry)
		if ok, r := l.Allow("a", 0, 0); !ok {
			t.Fatalf("rate %v: Allow at retryAfter %v = false, %v; want true", tt.rate, retry, r)
		}
	}
}

func TestLimiterPerCallerIndependent(t *testing.T) {
	l, _ := newLimiter(t, 1, 2)
	mustAllow(t, l, "a", 2)
	mustRefuse(t, l, "a", time.Second)
	mustAllow(t, l, "b", 2)
	mustRefuse(t, l, "b", time.Second)
}

func TestLimiterPerCallerOverrides(t *testing.T) {
	l, clock := newLimiter(t, 1, 2)

	// "fast" has its own rate and burst; "slow" uses the defaults.
	for i := range 10 {
		if ok, retry := l.Allow("fast", 4, 10); !ok {
			t.Fatalf("Allow(fast) #%d = false, %v; want true", i+1, retry)
		}
	}
	if ok, retry := l.Allow("fast", 4, 10); ok || retry != 250*time.Millisecond {
		t.Fatalf("Allow(fast) = %v, %v; want false, 250ms", ok, retry)
	}
	mustAllow(t, l, "slow", 2)
	mustRefuse(t, l, "slow", time.Second)

	// Only the rate overridden: the burst is the default.
	l.Allow("rateonly", 5, 0)
	l.Allow("rateonly", 5, 0)
	if ok, retry := l.Allow("rateonly", 5, 0); ok || retry != 200*time.Millisecond {
		t.Fatalf("Allow(rateonly) = %v, %v; want false, 200ms", ok, retry)
	}

	// Shrinking a caller's burst caps the tokens it holds.
	clock.Advance(time.Hour)
	for i := range 3 {
		if ok, retry := l.Allow("fast", 4, 3); !ok {
			t.Fatalf("Allow(fast, burst 3) #%d = false, %v; want true", i+1, retry)
		}
	}
	if ok, _ := l.Allow("fast", 4, 3); ok {
		t.Fatal("Allow(fast, burst 3) #4 = true, want false")
	}
}

func TestLimiterSweep(t *testing.T) {
	clock := newFakeClock()
	l := callers.NewLimiter(callers.LimiterConfig{PerSecond: 1, Burst: 2, Now: clock.Now, MaxIdle: time.Minute})

	mustAllow(t, l, "full", 1)   // full again within 1 s
	mustAllow(t, l, "recent", 1) // used again just before the sweep
	if ok, _ := l.Allow("slow", 0.01, 100); !ok {
		t.Fatal("Allow(slow) = false, want true")
	}
	mustAllow(t, l, "drained", 2)
	for range 99 {
		l.Allow("slow", 0.01, 100) // drain: 100 tokens at 0.01/s refill in 10000 s
	}

	if n := l.Sweep(); n != 0 {
		t.Fatalf("Sweep() before MaxIdle = %d, want 0", n)
	}
	clock.Advance(time.Minute - time.Second)
	mustAllow(t, l, "recent", 1)
	clock.Advance(time.Second)

	// full and drained are idle and full; recent is not idle; slow is idle but not full.
	if n := l.Sweep(); n != 2 {
		t.Fatalf("Sweep() = %d, want 2", n)
	}
	if n := l.Sweep(); n != 0 {
		t.Fatalf("second Sweep() = %d, want 0", n)
	}

	// An evicted caller starts again with a full bucket.
	mustAllow(t, l, "drained", 2)
	mustRefuse(t, l, "drained", time.Second)

	// slow kept its state: it was drained and earned only 0.6 tokens in 60 s.
	if ok, retry := l.Allow("slow", 0.01, 100); ok || retry != 40*time.Second {
		t.Fatalf("Allow(slow) = %v, %v; want false, 40s", ok, retry)
	}

	// Once slow is full it goes too.
	clock.Advance(10000 * time.Second)
	if n := l.Sweep(); n != 3 {
		t.Fatalf("Sweep() after long idle = %d, want 3", n)
	}
}

func TestLimiterConcurrentFrozenClock(t *testing.T) {
	const burst = 10
	l, _ := newLimiter(t, 1, burst)
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 5 {
				if ok, _ := l.Allow("a", 0, 0); ok {
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := granted.Load(); got != burst {
		t.Fatalf("granted %d tokens with a frozen clock, want %d", got, burst)
	}
}

func TestLimiterConfigPanics(t *testing.T) {
	for _, cfg := range []callers.LimiterConfig{
		{PerSecond: 0, Burst: 1},
		{PerSecond: -1, Burst: 1},
		{PerSecond: 1, Burst: 0},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewLimiter(%+v) did not panic", cfg)
				}
			}()
			callers.NewLimiter(cfg)
		}()
	}
}

func TestInFlightCapAndRelease(t *testing.T) {
	f := callers.NewInFlight(2)
	for i := range 2 {
		if !f.Acquire("a") {
			t.Fatalf("Acquire(a) #%d = false, want true", i+1)
		}
	}
	if f.Acquire("a") {
		t.Fatal("Acquire(a) #3 = true, want false")
	}
	if !f.Acquire("b") {
		t.Fatal("Acquire(b) = false, want true (callers are independent)")
	}
	f.Release("a")
	if !f.Acquire("a") {
		t.Fatal("Acquire(a) after Release = false, want true")
	}
	if f.Acquire("a") {
		t.Fatal("Acquire(a) over the cap after Release = true, want false")
	}
	f.Release("a")
	f.Release("a")
	f.Release("b")
	// All slots are back.
	for i := range 2 {
		if !f.Acquire("a") {
			t.Fatalf("Acquire(a) #%d after releasing all = false, want true", i+1)
		}
	}
}

func TestInFlightReleaseWithoutAcquirePanics(t *testing.T) {
	f := callers.NewInFlight(1)
	defer func() {
		if recover() == nil {
			t.Fatal("Release without Acquire did not panic")
		}
	}()
	f.Release("a")
}

func TestInFlightConcurrent(t *testing.T) {
	const max = 3
	f := callers.NewInFlight(max)
	var running, peak, acquired atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 100 {
				if !f.Acquire("a") {
					continue
				}
				acquired.Add(1)
				n := running.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				running.Add(-1)
				f.Release("a")
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > max {
		t.Fatalf("peak concurrent calls = %d, want <= %d", p, max)
	}
	if acquired.Load() == 0 {
		t.Fatal("no Acquire succeeded")
	}
	// Everything was released: the full cap is available again.
	for i := range max {
		if !f.Acquire("a") {
			t.Fatalf("Acquire #%d after the run = false, want true", i+1)
		}
	}
	if f.Acquire("a") {
		t.Fatal("Acquire over the cap after the run = true, want false")
	}
}
