package admin_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/admin"
)

type pingFunc func(ctx context.Context) error

func (f pingFunc) Ping(ctx context.Context) error { return f(ctx) }

// TestStoreProbe: the probe pings at most once a second whatever the
// number of probes, says "store unreachable" while the store does not
// answer (a ping that hangs counts as none, after ProbeTimeout), and
// ready again once it does.
func TestStoreProbe(t *testing.T) {
	var (
		pings atomic.Int64
		down  atomic.Bool
		hang  atomic.Bool
		mu    sync.Mutex
		now   = time.Unix(1_000_000, 0)
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tick := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	p := admin.NewStoreProbe(pingFunc(func(ctx context.Context) error {
		pings.Add(1)
		if hang.Load() {
			<-ctx.Done()
			return ctx.Err()
		}
		if down.Load() {
			return errors.New("connection refused")
		}
		return nil
	}), clock)

	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if r := p.NotReady(); r != "" {
				t.Errorf("NotReady = %q while the store answers", r)
			}
		})
	}
	wg.Wait()
	if n := pings.Load(); n != 1 {
		t.Fatalf("50 probes within a second made %d pings, want 1", n)
	}
	down.Store(true)
	if r := p.NotReady(); r != "" {
		t.Fatalf("NotReady = %q within the second of a good ping, want the cached \"\"", r)
	}
	tick(admin.ProbeTTL)
	if r := p.NotReady(); r != "store unreachable" {
		t.Fatalf("NotReady = %q with the store down, want %q", r, "store unreachable")
	}
	down.Store(false)
	hang.Store(true)
	tick(admin.ProbeTTL)
	start := time.Now()
	if r := p.NotReady(); r != "store unreachable" {
		t.Fatalf("NotReady = %q with a ping that hangs", r)
	}
	if d := time.Since(start); d > admin.ProbeTimeout+time.Second {
		t.Fatalf("a hanging ping held the probe %s", d)
	}
	hang.Store(false)
	tick(admin.ProbeTTL)
	if r := p.NotReady(); r != "" {
		t.Fatalf("NotReady = %q once the store answers again", r)
	}
	if n := pings.Load(); n != 4 {
		t.Fatalf("%d pings, want 4", n)
	}
}
