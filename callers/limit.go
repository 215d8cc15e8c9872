package callers

import (
	"math"
	"sync"
	"time"
)

// Limiter is a per-caller token bucket: each caller gets its own bucket,
// created full on first use. A bucket of size burst refills continuously at
// perSecond tokens a second up to burst, and each allowed request takes one
// token. A Limiter is safe for concurrent use.
//
// With MaxBuckets set, the Limiter holds at most that many buckets. When a
// new caller arrives at a full map, the least recently used bucket is
// forgotten if it is full again: forgetting it loses nothing, as a new
// bucket starts full. If even that one is not full, every bucket in the
// map is in use, and the new caller shares one overflow bucket with every
// other caller that finds the map so: no caller ever gets a fresh bucket
// by crowding out an active one, so many addresses cannot bypass a limit.
type Limiter struct {
	mu       sync.Mutex
	buckets  lru[bucket]
	overflow *bucket // shared by callers that found the map full of active buckets
	rate     float64
	burst    int
	max      int // 0: no bound
	now      func() time.Time
	maxIdle  time.Duration
}

// LimiterConfig configures a Limiter.
type LimiterConfig struct {
	PerSecond float64          // default refill rate for callers without their own; > 0
	Burst     int              // default bucket size; >= 1
	Now       func() time.Time // default time.Now
	MaxIdle   time.Duration    // buckets unused this long (and full) are evicted on a sweep; default 10m
	// MaxBuckets caps the buckets held; 0 means no cap (for a bounded
	// set of callers, such as the keys of a keys file).
	MaxBuckets int
}

// DefaultMaxIdle is the MaxIdle a Limiter uses when LimiterConfig.MaxIdle is
// zero or negative.
const DefaultMaxIdle = 10 * time.Minute

// bucket is one caller's token bucket. last is the time of the last refill,
// which is also the time of the last use.
type bucket struct {
	tokens float64
	last   time.Time
	rate   float64
	burst  int
}

// NewLimiter returns a Limiter with no buckets. It panics if cfg.PerSecond is
// not a finite positive number, cfg.Burst is less than 1 or cfg.MaxBuckets
// is negative, as these are programming errors that configuration
// validation should have caught.
func NewLimiter(cfg LimiterConfig) *Limiter {
	if !validRate(cfg.PerSecond) {
		panic("callers: LimiterConfig.PerSecond must be finite and > 0")
	}
	if cfg.Burst < 1 {
		panic("callers: LimiterConfig.Burst must be >= 1")
	}
	if cfg.MaxBuckets < 0 {
		panic("callers: LimiterConfig.MaxBuckets must be >= 0")
	}
	l := &Limiter{
		buckets: newLRU[bucket](),
		rate:    cfg.PerSecond,
		burst:   cfg.Burst,
		max:     cfg.MaxBuckets,
		now:     cfg.Now,
		maxIdle: cfg.MaxIdle,
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.maxIdle <= 0 {
		l.maxIdle = DefaultMaxIdle
	}
	return l
}

// Allow takes one token from caller's bucket, whose refill rate is perSecond
// and size is burst; a zero (or negative, or non-finite) perSecond and a zero
// (or negative) burst mean the Limiter's defaults. A caller's rate and size
// may change between calls: the bucket is refilled at the old rate up to now,
// then capped at the new size.
//
// Allow returns true if a token was taken. Otherwise it returns false and the
// time to wait before a retry would succeed, rounded up to the millisecond,
// so a retry after exactly retryAfter succeeds if nothing else takes the
// token first.
func (l *Limiter) Allow(caller string, perSecond float64, burst int) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()

	b := l.bucketAt(caller, perSecond, burst)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, b.retryAfter()
}

// Take charges n tokens to caller's bucket (refill rate perSecond, size
// burst, as Allow takes them), unless the bucket is in debt: a bucket may
// hold fewer than zero tokens, as a charge may exceed what it holds. In
// debt, Take charges nothing and returns false and the time to wait
// before the debt is paid, rounded up to the millisecond. A bucket is
// made (full) for a caller that has none, so n may be charged at once.
// Buckets of Take and Allow are the same: use a Limiter for one or the
// other.
func (l *Limiter) Take(caller string, perSecond float64, burst int, n int64) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucketAt(caller, perSecond, burst)
	if b.tokens < 0 {
		return false, b.wait(0)
	}
	b.tokens -= float64(n)
	return true, 0
}

// Charge charges n more tokens to caller's bucket whatever it holds, or
// gives back -n (up to its size).
func (l *Limiter) Charge(caller string, perSecond float64, burst int, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucketAt(caller, perSecond, burst)
	b.tokens = math.Min(b.tokens-float64(n), float64(b.burst))
}

// bucketAt returns caller's bucket refilled to now, at the rate and size
// given (zero: the defaults), making it if needed. The caller holds mu.
func (l *Limiter) bucketAt(caller string, perSecond float64, burst int) *bucket {
	if !validRate(perSecond) {
		perSecond = l.rate
	}
	if burst < 1 {
		burst = l.burst
	}
	now := l.now()
	b := l.buckets.get(caller)
	if b == nil {
		return l.newBucket(caller, now, perSecond, burst)
	}
	b.refill(now)
	b.rate, b.burst = perSecond, burst
	b.tokens = math.Min(b.tokens, float64(burst))
	return b
}

// newBucket makes room for caller's bucket and returns it, full; or, when
// every bucket held is in use, the overflow bucket, refilled to now. The
// caller holds mu.
func (l *Limiter) newBucket(caller string, now time.Time, perSecond float64, burst int) *bucket {
	fresh := bucket{tokens: float64(burst), last: now, rate: perSecond, burst: burst}
	if l.max > 0 && l.buckets.len() >= l.max {
		if old := l.buckets.oldest(); old.val.fullAt(now) {
			l.buckets.remove(old)
		} else {
			if l.overflow == nil {
				l.overflow = &fresh
			}
			b := l.overflow
			b.refill(now)
			b.rate, b.burst = perSecond, burst
			b.tokens = math.Min(b.tokens, float64(burst))
			return b
		}
	}
	return l.buckets.add(caller, fresh)
}

// Len returns the number of buckets held, the overflow bucket aside.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.len()
}

// Sweep evicts the buckets that have been unused for at least MaxIdle and are
// full again, so forgetting them loses nothing: a new bucket starts full. It
// returns how many buckets were evicted. The owner of the Limiter calls Sweep
// periodically, for example from a ticker.
func (l *Limiter) Sweep() int {
	l.mu.Lock()
	defer l.mu.Unlock()

	now := l.now()
	n := sweepLRU(&l.buckets, now, l.maxIdle, func(b *bucket) *bucket { return b })
	if l.overflow != nil && l.overflow.forgettable(now, l.maxIdle) {
		l.overflow = nil
	}
	return n
}

// sweepLRU forgets the entries of m whose buckets (bucketOf) have been
// unused for at least maxIdle and are full again at now, and returns how
// many it forgot. It goes from the least recently used on, up to the
// first one used within maxIdle: the rest are more recent still.
func sweepLRU[V any](m *lru[V], now time.Time, maxIdle time.Duration, bucketOf func(*V) *bucket) int {
	n := 0
	for e := m.oldest(); e != nil && now.Sub(bucketOf(&e.val).last) >= maxIdle; {
		prev := e.prev
		if bucketOf(&e.val).fullAt(now) {
			m.remove(e)
			n++
		}
		e = prev
	}
	return n
}

// forgettable reports whether b has been unused for at least maxIdle and
// is full again at now, so that forgetting it loses nothing: a new bucket
// starts full.
func (b *bucket) forgettable(now time.Time, maxIdle time.Duration) bool {
	return now.Sub(b.last) >= maxIdle && b.fullAt(now)
}

// fullAt reports whether b holds burst tokens again at now.
func (b *bucket) fullAt(now time.Time) bool {
	return b.tokens+b.gain(now.Sub(b.last)) >= float64(b.burst)
}

// refill adds the tokens earned since b.last, capped at b.burst, and moves
// b.last to now. A clock that went backwards adds nothing and leaves b.last.
func (b *bucket) refill(now time.Time) {
	elapsed := now.Sub(b.last)
	if elapsed <= 0 {
		return
	}
	b.tokens = math.Min(float64(b.burst), b.tokens+b.gain(elapsed))
	b.last = now
}

// gain is the number of tokens b earns in d.
func (b *bucket) gain(d time.Duration) float64 {
	return d.Seconds() * b.rate
}

// maxRetryMs is the largest whole number of milliseconds a time.Duration holds.
const maxRetryMs = math.MaxInt64 / int64(time.Millisecond)

// retryAfter returns the shortest whole number of milliseconds after which
// b holds at least one token, for a bucket holding less than one.
func (b *bucket) retryAfter() time.Duration { return b.wait(1) }

// wait returns the shortest whole number of milliseconds (at least one)
// after which b holds at least target tokens, for a bucket holding fewer:
// ceil((target − tokens) / rate · 1000) ms. The estimate is corrected with
// the same arithmetic refill uses, so a retry at exactly that time
// succeeds.
func (b *bucket) wait(target float64) time.Duration {
	est := math.Ceil((target - b.tokens) / b.rate * 1000)
	if est >= float64(maxRetryMs) {
		return time.Duration(maxRetryMs) * time.Millisecond
	}
	ms := max(int64(est), 1)
	enough := func(ms int64) bool {
		return b.tokens+b.gain(time.Duration(ms)*time.Millisecond) >= target
	}
	for ms > 1 && enough(ms-1) {
		ms--
	}
	for !enough(ms) && ms < maxRetryMs {
		ms++
	}
	return time.Duration(ms) * time.Millisecond
}

// validRate reports whether r is usable as a refill rate.
func validRate(r float64) bool {
	return r > 0 && !math.IsInf(r, 0) // NaN fails r > 0
}

// InFlight caps concurrent calls per caller. It is safe for concurrent use.
type InFlight struct {
	mu    sync.Mutex
	max   int
	count map[string]int
}

// NewInFlight returns an InFlight allowing each caller max concurrent calls.
// It panics if max is less than 1.
func NewInFlight(max int) *InFlight {
	if max < 1 {
		panic("callers: NewInFlight max must be >= 1")
	}
	return &InFlight{max: max, count: make(map[string]int)}
}

// Acquire takes one of caller's slots. It returns false, taking nothing, if
// caller already has max calls running. Each successful Acquire must be
// matched by one Release.
func (f *InFlight) Acquire(caller string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.count[caller] >= f.max {
		return false
	}
	f.count[caller]++
	return true
}

// Release gives back one of caller's slots. It panics if caller holds none,
// as sync.WaitGroup does for a negative counter.
func (f *InFlight) Release(caller string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.count[caller]
	if !ok {
		panic("callers: InFlight.Release without Acquire")
	}
	if n <= 1 {
		delete(f.count, caller)
		return
	}
	f.count[caller] = n - 1
}
