package pgstore_test

import (
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// TestClaimsHoldAcrossSkewedClocks: replicas whose hosts' clocks differ
// by more than ClaimTTL (now --lease-ttl, as short as 100ms) never send
// one delivery at once: a claim, and its renewal, are timed by the
// database's clock, as leases are. It still lapses ClaimTTL after its
// last renewal.
func TestClaimsHoldAcrossSkewedClocks(t *testing.T) {
	dsn := pgtest.Schema(t)
	const ttl = 600 * time.Millisecond
	open := func(skew time.Duration) *pgstore.Store {
		s, err := pgstore.Open(ctx, dsn, pgstore.Options{ClaimTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		s.SetClock(func() time.Time { return time.Now().Add(skew) })
		return s
	}
	// a's host is 5 s behind, b's 5 s ahead.
	a, b := open(-5*time.Second), open(5*time.Second)
	storetest.WithHooks(t, a, "t1", 1)
	storetest.MustUpdate(t, a, "o", "t1", storetest.Flip(a2a.StateCompleted))
	due, err := a.Due(ctx, time.Now(), 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("a's Due = %v, %v; want the delivery", due, err)
	}
	if due, err := b.Due(ctx, time.Now().Add(5*time.Second), 10); err != nil || len(due) != 0 {
		t.Fatalf("b's Due right after a claimed the delivery = %v, %v; want none", due, err)
	}
	if err := a.Renew(ctx, []uint64{due[0].ID}); err != nil {
		t.Fatal(err)
	}
	if due, err := b.Due(ctx, time.Now().Add(5*time.Second), 10); err != nil || len(due) != 0 {
		t.Fatalf("b's Due right after a renewed its claim = %v, %v; want none", due, err)
	}
	renewed := time.Now()
	time.Sleep(ttl + 200*time.Millisecond)
	if due, err := b.Due(ctx, time.Now().Add(5*time.Second), 10); err != nil || len(due) != 1 {
		t.Fatalf("b's Due %v after a last renewed its claim = %v, %v; want the delivery", time.Since(renewed), due, err)
	}
}
