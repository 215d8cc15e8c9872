package admin

import (
	"context"
	"sync"
	"time"
)

// Pinger is a store that can say whether it answers: nil, or why not.
type Pinger interface {
	Ping(ctx context.Context) error
}

// StoreProbe is the store's part of /readyz: whether it answered its last
// ping. A ping is made at most once per TTL, bounded by Timeout, however
// many probes come, so that a load balancer's probes under load cost the
// database nothing to speak of.
type StoreProbe struct {
	store   Pinger
	ttl     time.Duration
	timeout time.Duration
	now     func() time.Time

	mu     sync.Mutex // held through a ping: probes meanwhile wait for its answer
	at     time.Time  // of the last ping; zero before the first
	reason string
}

// Store probe defaults: a ping's answer is kept a second, and a ping that
// takes half a second counts as none.
const (
	ProbeTTL     = time.Second
	ProbeTimeout = 500 * time.Millisecond
)

// NewStoreProbe returns the probe of store; now is the clock (nil means
// time.Now).
func NewStoreProbe(store Pinger, now func() time.Time) *StoreProbe {
	if now == nil {
		now = time.Now
	}
	return &StoreProbe{store: store, ttl: ProbeTTL, timeout: ProbeTimeout, now: now}
}

// NotReady is "store unreachable" while the store did not answer its
// last ping, "" while it did.
func (p *StoreProbe) NotReady() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := p.now(); p.at.IsZero() || now.Sub(p.at) >= p.ttl {
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		err := p.store.Ping(ctx)
		cancel()
		p.at, p.reason = p.now(), ""
		if err != nil {
			p.reason = "store unreachable"
		}
	}
	return p.reason
}
