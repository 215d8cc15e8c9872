package callers

import (
	"sync"
	"time"
)

// Throttle limits failed authentications per client address: each address
// has a bucket of Burst failures, refilled at PerSecond a second. While an
// address's bucket is empty, its requests are refused before their
// credentials are looked at, and the refusals are counted so that they can
// be reported at most once per ReportEvery rather than one by one. An
// address that never fails costs nothing: it gets a bucket on its first
// failure.
//
// The buckets are bounded as a Limiter's are (MaxAddresses): when the map
// is full, the least recently used bucket is forgotten if it is full again;
// if not, new addresses share one overflow bucket. A Throttle is safe for
// concurrent use.
type Throttle struct {
	mu       sync.Mutex
	addrs    lru[failures]
	overflow *failures
	rate     float64
	burst    int
	every    time.Duration
	max      int
	now      func() time.Time
}

// ThrottleConfig configures a Throttle.
type ThrottleConfig struct {
	PerSecond float64 // failures a second an address may make, once its burst is spent; > 0
	Burst     int     // failures an address may make at once; >= 1
	// ReportEvery is the shortest time between two reports of refusals
	// from one address; default DefaultReportEvery.
	ReportEvery time.Duration
	// MaxAddresses caps the addresses tracked; 0 means no cap.
	MaxAddresses int
	Now          func() time.Time // default time.Now
}

// DefaultReportEvery is the ReportEvery of a Throttle when its config has
// none.
const DefaultReportEvery = 10 * time.Second

// failures is one address's bucket of failures and its refusals not yet
// reported.
type failures struct {
	bucket
	summary // its refusals not yet reported
}

// NewThrottle returns a Throttle. It panics on an invalid rate or burst, or
// a negative MaxAddresses, as NewLimiter does.
func NewThrottle(cfg ThrottleConfig) *Throttle {
	if !validRate(cfg.PerSecond) {
		panic("callers: ThrottleConfig.PerSecond must be finite and > 0")
	}
	if cfg.Burst < 1 {
		panic("callers: ThrottleConfig.Burst must be >= 1")
	}
	if cfg.MaxAddresses < 0 {
		panic("callers: ThrottleConfig.MaxAddresses must be >= 0")
	}
	t := &Throttle{addrs: newLRU[failures](), rate: cfg.PerSecond, burst: cfg.Burst,
		every: cfg.ReportEvery, max: cfg.MaxAddresses, now: cfg.Now}
	if t.every <= 0 {
		t.every = DefaultReportEvery
	}
	if t.now == nil {
		t.now = time.Now
	}
	return t
}

// Check reports whether a request from addr may try to authenticate. When
// it may not, the refusal is counted, retryAfter says when a retry may be
// checked again, and report is the number of refusals (this one included)
// that a record written now should stand for, or 0 when the last report of
// addr is more recent than ReportEvery: the refusal is then reported with
// a later one. The first refusal after a quiet time is reported at once.
func (t *Throttle) Check(addr string) (retryAfter time.Duration, report int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	f := t.addrs.get(addr)
	if f == nil {
		if !t.crowded(now) {
			return 0, 0, true // no failure on record: a full bucket
		}
		if f = t.overflow; f == nil {
			return 0, 0, true
		}
	}
	f.refill(now)
	if f.tokens >= 1 {
		return 0, 0, true
	}
	return f.retryAfter(), f.count(now, t.every), false
}

// Fail records a failed authentication from addr: it takes a token from
// addr's bucket, if there is one left.
func (t *Throttle) Fail(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	f := t.addrs.get(addr)
	if f == nil {
		fresh := failures{bucket: bucket{tokens: float64(t.burst), last: now, rate: t.rate, burst: t.burst}}
		if t.crowded(now) {
			if t.overflow == nil {
				t.overflow = &fresh
			}
			f = t.overflow
		} else {
			if t.max > 0 && t.addrs.len() >= t.max {
				t.addrs.remove(t.addrs.oldest()) // full again: nothing lost
			}
			f = t.addrs.add(addr, fresh)
		}
	}
	f.refill(now)
	if f.tokens >= 1 {
		f.tokens--
	}
}

// crowded reports whether the map is full and its least recently used
// bucket still in use, so a new address must share the overflow bucket.
// The caller holds mu.
func (t *Throttle) crowded(now time.Time) bool {
	return t.max > 0 && t.addrs.len() >= t.max && !t.addrs.oldest().val.fullAt(now)
}

// Len returns the number of addresses tracked, the overflow bucket aside.
func (t *Throttle) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.addrs.len()
}

// Sweep forgets the addresses whose buckets are full again, unused for
// DefaultMaxIdle: their unreported refusals, if any, are dropped. It
// returns how many it forgot.
func (t *Throttle) Sweep() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	n := sweepLRU(&t.addrs, now, DefaultMaxIdle, func(f *failures) *bucket { return &f.bucket })
	if t.overflow != nil && t.overflow.forgettable(now, DefaultMaxIdle) {
		t.overflow = nil
	}
	return n
}
