package callers_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
)

// TestLimiterTakeGoesIntoDebt: Take charges whatever is asked while the
// bucket holds zero tokens or more; in debt it charges nothing and says
// when the debt is paid; Charge settles a difference either way, a refund
// never past the bucket's size.
func TestLimiterTakeGoesIntoDebt(t *testing.T) {
	l, clock := newLimiter(t, 1000, 4000) // 1000 bytes/s, 4000 at once
	take := func(n int64) (bool, time.Duration) { return l.Take("a", 0, 0, n) }

	if ok, _ := take(3000); !ok {
		t.Fatal("3000 of a full budget of 4000 refused")
	}
	// 1000 left: a charge past it is taken, into debt.
	if ok, _ := take(2500); !ok {
		t.Fatal("2500 with 1000 left refused: a budget not in debt takes any charge")
	}
	// 1500 in debt: 1.5 s to pay it, and nothing is charged meanwhile.
	for range 2 {
		if ok, retry := take(10); ok || retry != 1500*time.Millisecond {
			t.Fatalf("in debt of 1500: Take = %v, %v; want false, 1.5s", ok, retry)
		}
	}
	clock.Advance(1499 * time.Millisecond)
	if ok, retry := take(10); ok || retry != time.Millisecond {
		t.Fatalf("1 byte still owed: Take = %v, %v; want false, 1ms", ok, retry)
	}
	clock.Advance(time.Millisecond)
	if ok, _ := take(10); !ok {
		t.Fatal("refused at exactly retryAfter")
	}
	// A refund (the body was shorter than declared) pays the debt back.
	l.Charge("a", 0, 0, -10)
	if ok, _ := take(0); !ok {
		t.Fatal("refused after the refund")
	}
	// A refund never fills a budget past its size.
	l.Charge("a", 0, 0, -1_000_000)
	if ok, _ := take(4000); !ok {
		t.Fatal("a full budget refused its size")
	}
	if ok, retry := take(1); !ok {
		t.Fatalf("a budget at zero refused: %v", retry)
	}
	if ok, retry := take(1); ok || retry != time.Millisecond {
		t.Fatalf("a budget 1 in debt: Take = %v, %v; want false, 1ms", ok, retry)
	}
	// Another caller has its own budget.
	if ok, _ := l.Take("b", 0, 0, 4000); !ok {
		t.Error("b limited by a's debt")
	}
}

// TestGateBytes: a caller's budget has its own rate (0: no limit) and the
// gate's size; keys and addresses have budgets apart, the addresses' in
// the bounded set.
func TestGateBytes(t *testing.T) {
	clock := newFakeClock()
	g := callers.NewGate(callers.GateConfig{PerSecond: 100, Burst: 100, MaxAddresses: 2, Now: clock.Now, BytesBurst: 1000})

	if retry, ok := g.TakeBytes("key:a", 100, 1500); !ok {
		t.Fatalf("a full budget refused: %v", retry)
	}
	if retry, ok := g.TakeBytes("key:a", 100, 1); ok || retry != 5*time.Second {
		t.Fatalf("500 in debt at 100/s: %v, %v; want refused, 5s", retry, ok)
	}
	// The same name among the addresses is another budget.
	if _, ok := g.TakeAddressBytes("key:a", 100, 1); !ok {
		t.Fatal("an address budget limited by a key's")
	}
	// No rate: no limit, nothing charged.
	for range 3 {
		if _, ok := g.TakeBytes("key:b", 0, 1<<30); !ok {
			t.Fatal("a caller without a byte rate refused")
		}
	}
	g.ChargeBytes("key:b", 0, 1<<30)
	// Charged once read: a chunked body declares nothing.
	if _, ok := g.TakeBytes("key:c", 100, 0); !ok {
		t.Fatal("first request refused")
	}
	g.ChargeBytes("key:c", 100, 1200)
	if retry, ok := g.TakeBytes("key:c", 100, 0); ok || retry != 2*time.Second {
		t.Fatalf("200 in debt at 100/s: %v, %v; want refused, 2s", retry, ok)
	}
	g.ChargeAddressBytes("key:c", 100, 1) // an address of that name: its own budget
	if retry, ok := g.TakeBytes("key:c", 100, 0); ok || retry != 2*time.Second {
		t.Fatalf("the address's charge moved the key's budget: %v, %v", retry, ok)
	}

	// The address budgets are bounded, as the request buckets are.
	for i := range 50 {
		g.TakeAddressBytes(fmt.Sprintf("anon:10.0.0.%d", i), 100, 10)
	}
	if n := g.ByteAddresses(); n != 2 {
		t.Errorf("%d address budgets held, want the bound of 2", n)
	}
	// Once idle and paid, budgets are forgotten on a sweep.
	clock.Advance(callers.DefaultMaxIdle + time.Minute)
	g.Sweep()
	if n := g.ByteAddresses(); n != 0 {
		t.Errorf("%d address budgets held after a sweep, want 0", n)
	}
}

// TestGateBytesConcurrent charges one budget from many goroutines (run
// with -race): nothing is lost.
func TestGateBytesConcurrent(t *testing.T) {
	clock := newFakeClock()
	g := callers.NewGate(callers.GateConfig{Now: clock.Now, BytesBurst: 1 << 20})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if _, ok := g.TakeBytes("key:a", 1, 100); ok {
					g.ChargeBytes("key:a", 1, 28)
				}
			}
		})
	}
	wg.Wait()
	// 800 requests of 128 bytes: 102,400 of 1 MiB, none refused.
	if _, ok := g.TakeBytes("key:a", 1, 1<<20-102_400); !ok {
		t.Fatal("refused with budget left")
	}
	if _, ok := g.TakeBytes("key:a", 1, 0); !ok {
		t.Fatal("refused at exactly zero")
	}
	if _, ok := g.TakeBytes("key:a", 1, 1); !ok {
		t.Fatal("refused at zero")
	}
	if _, ok := g.TakeBytes("key:a", 1, 0); ok {
		t.Fatal("a budget in debt by one byte admitted: a charge was lost")
	}
}

// TestGateBytesAllocateNothing: charging a known caller's request bytes
// is on every request's path, and allocates nothing.
func TestGateBytesAllocateNothing(t *testing.T) {
	g := callers.NewGate(callers.GateConfig{MaxAddresses: 10})
	g.TakeBytes("key:a", 1<<20, 100)
	g.TakeAddressBytes("anon:10.0.0.1", 1<<20, 100)
	n := testing.AllocsPerRun(1000, func() {
		g.TakeBytes("key:a", 1<<20, 100)
		g.ChargeBytes("key:a", 1<<20, -100)
		g.TakeAddressBytes("anon:10.0.0.1", 1<<20, 100)
		g.ChargeAddressBytes("anon:10.0.0.1", 1<<20, -100)
	})
	if n != 0 {
		t.Errorf("%v allocations a request, want 0", n)
	}
}
