package callers

import (
	"sync"
	"time"
)

// Gate admits requests: a token bucket per caller, a cap on each caller's
// requests in flight and a cap on all requests in flight; and it keeps
// each caller's budget of request bytes (TakeBytes). Callers known by
// a key and callers known only by their address have their buckets apart:
// the addresses' are bounded (GateConfig.MaxAddresses), the keys' are as
// many as the keys file has. It is safe for concurrent use.
type Gate struct {
	limiter   *Limiter  // one bucket per key
	addrs     *Limiter  // one bucket per client address, bounded
	noDefault bool      // callers without their own rate are not limited
	perCaller *InFlight // nil: no per-caller cap
	bytes     *Limiter  // one byte budget per key
	byteAddrs *Limiter  // one byte budget per client address, bounded

	mu     sync.Mutex
	max    int // 0: no global cap
	active int
}

// GateConfig configures a Gate.
type GateConfig struct {
	// PerSecond and Burst are the rate of callers without their own.
	// PerSecond 0 leaves those callers unlimited (a key's own rate still
	// applies); otherwise PerSecond > 0 and Burst >= 1.
	PerSecond float64
	Burst     int
	// MaxInFlightPerCaller caps each caller's concurrent requests; 0
	// means no cap.
	MaxInFlightPerCaller int
	// MaxInFlight caps all concurrent requests; 0 means no cap.
	MaxInFlight int
	// MaxAddresses caps the buckets of callers known by their address
	// (see Limiter and MaxBuckets); 0 means no cap.
	MaxAddresses int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// BytesBurst is the size of each caller's budget of request bytes
	// (see TakeBytes); the rate is the caller's own. 0 means 8 MiB.
	BytesBurst int
}

// DefaultBytesBurst is the GateConfig.BytesBurst of 0.
const DefaultBytesBurst = 8 << 20

// InFlightRetry is the Retry-After given for an in-flight cap: requests in
// flight end at no predictable time, so this is a hint.
const InFlightRetry = time.Second

// Denial says why Admit refused a request.
type Denial struct {
	RateLimited bool          // the bucket is empty; else an in-flight cap
	Global      bool          // the server-wide cap, not the caller's own
	RetryAfter  time.Duration // when a retry may succeed
}

// NewGate returns a Gate. It panics on an invalid rate, as NewLimiter does.
func NewGate(cfg GateConfig) *Gate {
	g := &Gate{max: max(cfg.MaxInFlight, 0)}
	if cfg.PerSecond == 0 {
		// Only keys with a rate of their own are limited; the defaults
		// below are never used.
		g.noDefault = true
		cfg.PerSecond, cfg.Burst = 1, 1
	}
	g.limiter = NewLimiter(LimiterConfig{PerSecond: cfg.PerSecond, Burst: cfg.Burst, Now: cfg.Now})
	g.addrs = NewLimiter(LimiterConfig{PerSecond: cfg.PerSecond, Burst: cfg.Burst, Now: cfg.Now, MaxBuckets: cfg.MaxAddresses})
	if cfg.MaxInFlightPerCaller > 0 {
		g.perCaller = NewInFlight(cfg.MaxInFlightPerCaller)
	}
	if cfg.BytesBurst <= 0 {
		cfg.BytesBurst = DefaultBytesBurst
	}
	// Every budget has its caller's own rate: the default rate is never
	// used.
	g.bytes = NewLimiter(LimiterConfig{PerSecond: 1, Burst: cfg.BytesBurst, Now: cfg.Now})
	g.byteAddrs = NewLimiter(LimiterConfig{PerSecond: 1, Burst: cfg.BytesBurst, Now: cfg.Now, MaxBuckets: cfg.MaxAddresses})
	return g
}

// TakeBytes charges n bytes, the declared length of a request body (0
// when unknown), to key's budget of request bytes, which refills at
// perSecond bytes a second up to GateConfig.BytesBurst and may go into
// debt; perSecond 0 means no limit (nothing is charged). While the budget
// is in debt, it charges nothing and returns false and the time until the
// debt is paid. Once the body is read, ChargeBytes settles the
// difference. Charging ahead keeps many bodies sent at once from all
// passing a budget that is nearly spent.
func (g *Gate) TakeBytes(key string, perSecond int64, n int64) (retryAfter time.Duration, ok bool) {
	return takeBytes(g.bytes, key, perSecond, n)
}

// TakeAddressBytes is TakeBytes for a caller known only by its address:
// its budget is one of the bounded set of address budgets
// (GateConfig.MaxAddresses), as AdmitAddress's buckets are.
func (g *Gate) TakeAddressBytes(key string, perSecond int64, n int64) (retryAfter time.Duration, ok bool) {
	return takeBytes(g.byteAddrs, key, perSecond, n)
}

// ChargeBytes charges n more bytes to key's budget, or gives back -n:
// what a body held less what TakeBytes charged for it.
func (g *Gate) ChargeBytes(key string, perSecond int64, n int64) {
	if perSecond > 0 {
		g.bytes.Charge(key, float64(perSecond), 0, n)
	}
}

// ChargeAddressBytes is ChargeBytes for a caller known by its address.
func (g *Gate) ChargeAddressBytes(key string, perSecond int64, n int64) {
	if perSecond > 0 {
		g.byteAddrs.Charge(key, float64(perSecond), 0, n)
	}
}

func takeBytes(l *Limiter, key string, perSecond, n int64) (time.Duration, bool) {
	if perSecond <= 0 {
		return 0, true
	}
	ok, retry := l.Take(key, float64(perSecond), 0, n)
	return retry, ok
}

// Admit takes a token from key's bucket (at rate, or the defaults when
// rate is nil) and a slot under each in-flight cap. On success it returns
// the func that gives the slots back, to call once when the request ends.
// Otherwise it takes nothing (a refused request spends its token, so a
// flood stays limited) and says why.
func (g *Gate) Admit(key string, rate *Rate) (release func(), d Denial, ok bool) {
	return g.admit(g.limiter, key, rate)
}

// AdmitAddress is Admit for a caller known only by its address (an
// anonymous one), at the default rate: its bucket is one of the bounded
// set of address buckets. key names both the bucket and the in-flight
// count, which it shares with Admit's: keep the two sets of names apart.
func (g *Gate) AdmitAddress(key string) (release func(), d Denial, ok bool) {
	return g.admit(g.addrs, key, nil)
}

func (g *Gate) admit(limiter *Limiter, key string, rate *Rate) (release func(), d Denial, ok bool) {
	var perSecond float64
	var burst int
	if rate != nil {
		perSecond, burst = rate.PerSecond, rate.Burst
	}
	if rate != nil || !g.noDefault {
		if ok, retry := limiter.Allow(key, perSecond, burst); !ok {
			return nil, Denial{RateLimited: true, RetryAfter: retry}, false
		}
	}
	if g.perCaller != nil && !g.perCaller.Acquire(key) {
		return nil, Denial{RetryAfter: InFlightRetry}, false
	}
	if g.max > 0 {
		g.mu.Lock()
		if g.active >= g.max {
			g.mu.Unlock()
			if g.perCaller != nil {
				g.perCaller.Release(key)
			}
			return nil, Denial{Global: true, RetryAfter: InFlightRetry}, false
		}
		g.active++
		g.mu.Unlock()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if g.max > 0 {
				g.mu.Lock()
				g.active--
				g.mu.Unlock()
			}
			if g.perCaller != nil {
				g.perCaller.Release(key)
			}
		})
	}, Denial{}, true
}

// Sweep forgets idle, full buckets (see Limiter.Sweep). The Gate's owner
// calls it now and then.
func (g *Gate) Sweep() int {
	return g.limiter.Sweep() + g.addrs.Sweep() + g.bytes.Sweep() + g.byteAddrs.Sweep()
}

// Addresses returns the number of address buckets held (of requests; the
// budgets of bytes are as many at most).
func (g *Gate) Addresses() int { return g.addrs.Len() }

// ByteAddresses returns the number of address budgets of bytes held.
func (g *Gate) ByteAddresses() int { return g.byteAddrs.Len() }
