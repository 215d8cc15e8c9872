package push_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/push"
)

// claimingOutbox is a MemOutbox whose claims the sender renews
// (push.Claims): it records each Renew.
type claimingOutbox struct {
	*MemOutbox
	mu      sync.Mutex
	renewed [][]uint64
	at      []time.Time // when each Renew was called
	fail    int         // how many Renew calls fail, from the first
}

var _ push.Claims = (*claimingOutbox)(nil)

func (o *claimingOutbox) Renew(ctx context.Context, ids []uint64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.at = append(o.at, time.Now())
	if len(o.at) <= o.fail {
		return errors.New("the database is away")
	}
	o.renewed = append(o.renewed, slices.Sorted(slices.Values(ids)))
	return nil
}

func (o *claimingOutbox) renewals() [][]uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.renewed)
}

// TestSenderRenewsClaimsInFlight: while every slot is taken by an attempt
// that hangs (so no poll calls Due), the sender still renews its claims on
// the deliveries in flight, every poll interval or so, and only on those;
// once they end, it renews nothing.
func TestSenderRenewsClaimsInFlight(t *testing.T) {
	release := make(chan struct{})
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) { hang(r, release) })
	o := &claimingOutbox{MemOutbox: NewMemOutbox()}
	a := o.Add(push.Delivery{TaskID: "ta", ConfigID: "c1", URL: srv.URL, Task: &a2a.Task{ID: "ta"}})
	b := o.Add(push.Delivery{TaskID: "tb", ConfigID: "c1", URL: srv.URL, Task: &a2a.Task{ID: "tb"}})
	o.Add(push.Delivery{TaskID: "tc", ConfigID: "c1", URL: srv.URL, Task: &a2a.Task{ID: "tc"}}) // waits for a slot
	cfg := testSenderConfig(o.MemOutbox)
	cfg.Outbox = o
	cfg.Concurrency = 2
	cfg.PollInterval = 20 * time.Millisecond
	MustStartSender(t, cfg)

	waitFor(t, "5 renewals while both slots hang", func() bool { return len(o.renewals()) >= 5 })
	for i, ids := range o.renewals() {
		if !slices.Equal(ids, []uint64{a, b}) {
			t.Fatalf("renewal %d of %v, want the deliveries in flight %v", i, ids, []uint64{a, b})
		}
	}
	close(release)
	waitFor(t, "3 deliveries", func() bool { return len(o.DeliveredIDs()) == 3 })
	n := len(o.renewals())
	time.Sleep(100 * time.Millisecond) // five poll intervals with nothing in flight
	if got := len(o.renewals()); got != n {
		t.Fatalf("%d renewals with nothing in flight", got-n)
	}
}

// TestSenderRenewsClaimsAfterAFailure: a renewal that fails is tried
// again at the next poll interval, not after the doubling delay of a
// failing Due: with claims lasting three intervals (--lease-ttl), two
// failures would otherwise leave the deliveries in flight unclaimed for
// as long again, for another replica to send at the same time.
func TestSenderRenewsClaimsAfterAFailure(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) { hang(r, release) })
	o := &claimingOutbox{MemOutbox: NewMemOutbox(), fail: 3}
	o.Add(push.Delivery{TaskID: "ta", ConfigID: "c1", URL: srv.URL, Task: &a2a.Task{ID: "ta"}})
	cfg := testSenderConfig(o.MemOutbox)
	cfg.Outbox = o
	cfg.PollInterval = 50 * time.Millisecond
	MustStartSender(t, cfg)

	waitFor(t, "a renewal after three failed", func() bool { return len(o.renewals()) >= 1 })
	o.mu.Lock()
	at := slices.Clone(o.at)
	o.mu.Unlock()
	// Four calls, three intervals apart; 700 ms with the doubling delay.
	if took := at[3].Sub(at[0]); took > 350*time.Millisecond {
		t.Fatalf("the first renewal after three failures came %v after the first failure; want about 150ms", took)
	}
}

// TestSenderRenewsClaimsWhileClosing: while Close waits for the attempts
// in flight (a2ad gives them 2 s, past a short --lease-ttl), it renews
// their claims, as the loop did: else another process would send the
// deliveries while these attempts still run. Once they end it stops.
func TestSenderRenewsClaimsWhileClosing(t *testing.T) {
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) { hang(r, nil) })
	o := &claimingOutbox{MemOutbox: NewMemOutbox()}
	a := o.Add(push.Delivery{TaskID: "ta", ConfigID: "c1", URL: srv.URL, Task: &a2a.Task{ID: "ta"}})
	cfg := testSenderConfig(o.MemOutbox)
	cfg.Outbox = o
	cfg.PollInterval = 20 * time.Millisecond
	s := push.NewSender(cfg)
	s.Start()
	waitFor(t, "a renewal", func() bool { return len(o.renewals()) >= 1 })
	before := len(o.renewals())
	cctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the attempt cut short", err)
	}
	got := o.renewals()
	if len(got)-before < 5 {
		t.Fatalf("%d renewals while Close waited 300 ms for the attempt, want one every 20 ms or so", len(got)-before)
	}
	for i, ids := range got {
		if !slices.Equal(ids, []uint64{a}) {
			t.Fatalf("renewal %d of %v, want %v", i, ids, []uint64{a})
		}
	}
	n := len(o.renewals())
	time.Sleep(100 * time.Millisecond)
	if len(o.renewals()) != n {
		t.Fatal("renewals after Close returned")
	}
}
