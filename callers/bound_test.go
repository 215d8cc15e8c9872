package callers_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
)

// TestLimiterBoundedNoBypass fills a bounded Limiter with active buckets:
// new callers share the overflow bucket rather than crowd one out, so a
// flood of new addresses stays limited; buckets full again make room.
func TestLimiterBoundedNoBypass(t *testing.T) {
	clock := newFakeClock()
	l := callers.NewLimiter(callers.LimiterConfig{PerSecond: 1, Burst: 2, Now: clock.Now, MaxBuckets: 3})
	for _, c := range []string{"a", "b", "c"} {
		mustAllow(t, l, c, 1)
	}
	// The map is full of buckets in use: d, e and f share one bucket of 2.
	mustAllow(t, l, "d", 1)
	mustAllow(t, l, "e", 1)
	mustRefuse(t, l, "f", time.Second)
	mustRefuse(t, l, "d", time.Second)
	if n := l.Len(); n != 3 {
		t.Fatalf("Len() = %d, want 3", n)
	}
	// a kept its own bucket: one token left.
	mustAllow(t, l, "a", 1)
	mustRefuse(t, l, "a", time.Second)

	// Two seconds on, every bucket is full again: the least recently used
	// (b) makes room for g, which gets a full bucket of its own.
	clock.Advance(2 * time.Second)
	mustAllow(t, l, "g", 2)
	mustRefuse(t, l, "g", time.Second)
	if n := l.Len(); n != 3 {
		t.Fatalf("Len() = %d, want 3", n)
	}
	// b was forgotten with a full bucket: it loses nothing.
	mustAllow(t, l, "b", 2)
}

// TestLimiterMemoryBounded is the attack of issue 13 item 6 on the bucket
// map: a million addresses (the attack used 1.2 million, taking the RSS
// from 28 MB to 763 MB) leave at most MaxBuckets buckets and a heap that
// grows by a bounded amount, whether the addresses come slowly (old
// buckets are full again and make room) or all at once (new ones share the
// overflow bucket).
func TestLimiterMemoryBounded(t *testing.T) {
	addresses, max := 1_000_000, 100_000
	if raceEnabled {
		addresses, max = 200_000, 20_000 // the same shape, five times smaller
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	clock := newFakeClock()
	l := callers.NewLimiter(callers.LimiterConfig{PerSecond: 100, Burst: 200, Now: clock.Now, MaxBuckets: max})
	refused := 0
	for i := range addresses {
		if i < addresses/2 {
			clock.Advance(time.Millisecond) // a bucket is full again after 10 ms
		}
		if ok, _ := l.Allow(fmt.Sprintf("anon:10.%d.%d.%d", i>>16&255, i>>8&255, i&255), 0, 0); !ok {
			refused++
		}
	}
	if n := l.Len(); n != max {
		t.Errorf("Len() = %d after %d addresses, want the cap %d", n, addresses, max)
	}
	// The second half came with the clock stopped. Its first comers took
	// the places of the first half's buckets, full again, but for the last
	// 10 (used less than 10 ms before); once the map held only buckets in
	// use, the rest shared the overflow bucket's burst of 200 and were
	// refused beyond it.
	if want := addresses/2 - (max - 10) - 200; refused != want {
		t.Errorf("%d requests refused, want %d", refused, want)
	}

	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(l)
	// About 16 MiB for 100,000 buckets; unbounded, a million take ten
	// times that. The bound is generous, the shape is what counts.
	bound := int64(64<<20) * int64(max) / 100_000
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > bound {
		t.Errorf("the heap grew by %d MiB for %d addresses, want at most %d MiB", grew>>20, addresses, bound>>20)
	} else {
		t.Logf("the heap grew by %.1f MiB for %d addresses (%d buckets held)", float64(grew)/(1<<20), addresses, l.Len())
	}
}

func TestThrottle(t *testing.T) {
	clock := newFakeClock()
	th := callers.NewThrottle(callers.ThrottleConfig{PerSecond: 0.01, Burst: 3, ReportEvery: 10 * time.Second, Now: clock.Now})
	check := func(addr string) (time.Duration, int, bool) { return th.Check(addr) }

	// An address that never failed costs nothing.
	if _, _, ok := check("192.0.2.1"); !ok || th.Len() != 0 {
		t.Fatalf("Check of a new address: ok=%v, %d tracked", ok, th.Len())
	}
	for range 3 {
		if _, _, ok := check("192.0.2.1"); !ok {
			t.Fatal("refused within the burst")
		}
		th.Fail("192.0.2.1")
	}
	// The burst is spent: refused, and the first refusal is reported at once.
	if retry, report, ok := check("192.0.2.1"); ok || report != 1 || retry != 100*time.Second {
		t.Fatalf("Check after the burst = %v, %d, %v; want 100s, 1, false", retry, report, ok)
	}
	for i := range 5 {
		if _, report, ok := check("192.0.2.1"); ok || report != 0 {
			t.Fatalf("refusal %d: report %d ok %v, want 0 false (reported with a later one)", i, report, ok)
		}
	}
	// Another address is not held up.
	if _, _, ok := check("192.0.2.2"); !ok {
		t.Fatal("another address refused")
	}
	// ReportEvery later the next refusal reports the five held and itself.
	clock.Advance(10 * time.Second)
	if _, report, ok := check("192.0.2.1"); ok || report != 6 {
		t.Fatalf("refusal after ReportEvery: report %d ok %v, want 6 false", report, ok)
	}
	// A token back after 100 s: one more attempt may be checked.
	clock.Advance(90 * time.Second)
	if _, _, ok := check("192.0.2.1"); !ok {
		t.Fatal("refused after the refill")
	}
	th.Fail("192.0.2.1")
	if _, _, ok := check("192.0.2.1"); ok {
		t.Fatal("a second attempt from one token")
	}
}

// TestThrottleBounded: a full map of addresses that keep failing makes
// new failing addresses share one overflow bucket; addresses full again
// make room.
func TestThrottleBounded(t *testing.T) {
	clock := newFakeClock()
	th := callers.NewThrottle(callers.ThrottleConfig{PerSecond: 1, Burst: 1, MaxAddresses: 2, Now: clock.Now})
	th.Fail("a")
	th.Fail("b")
	// The map is full of empty buckets: c's failure goes to the overflow,
	// and c, d and every new address share it from then on.
	th.Fail("c")
	for _, addr := range []string{"c", "d"} {
		if _, _, ok := th.Check(addr); ok {
			t.Errorf("Check(%s) passed on an empty overflow bucket", addr)
		}
	}
	if n := th.Len(); n != 2 {
		t.Fatalf("Len() = %d, want 2", n)
	}
	clock.Advance(time.Second)
	th.Fail("e") // a is full again: it makes room
	if _, _, ok := th.Check("e"); ok {
		t.Error("e's own bucket was not used")
	}
	if _, _, ok := th.Check("a"); !ok {
		t.Error("a, forgotten full, refused")
	}
	if n := th.Len(); n != 2 {
		t.Fatalf("Len() = %d, want 2", n)
	}
}
