package callers

import (
	"sync"
	"time"
)

// summary counts the refusals of one key (an address, a caller) for
// reports of them at most once per window rather than one by one: the
// first refusal after a quiet window is reported at once, the next ones
// with the first refusal after the window has passed. Throttle and
// Reports keep one each; it is the one home of the audit's summaries.
type summary struct {
	refused  int       // refusals since the last report
	reported time.Time // when they were last reported; zero: never
}

// count counts one refusal at now and returns how many refusals (this one
// included) a report written now stands for, or 0 when the last report is
// more recent than every.
func (s *summary) count(now time.Time, every time.Duration) (report int) {
	s.refused++
	if s.reported.IsZero() || now.Sub(s.reported) >= every {
		report, s.refused, s.reported = s.refused, 0, now
	}
	return report
}

// Reports summarises refusals by key (a caller and what refused it) for
// the audit, as a Throttle does failed authentications per address: one
// report per key per ReportEvery, counting the refusals it stands for.
// The keys are bounded (MaxKeys): past it the least recently used key is
// forgotten, with its unreported refusals, which a later refusal of that
// key then reports from a fresh window. A Reports is safe for concurrent
// use.
type Reports struct {
	mu    sync.Mutex
	keys  lru[summary]
	every time.Duration
	max   int
	now   func() time.Time
}

// NewReports returns a Reports reporting each key at most once per every
// (DefaultReportEvery when 0), tracking at most max keys (0: no cap).
func NewReports(every time.Duration, max int, now func() time.Time) *Reports {
	if every <= 0 {
		every = DefaultReportEvery
	}
	if now == nil {
		now = time.Now
	}
	return &Reports{keys: newLRU[summary](), every: every, max: max, now: now}
}

// Refused counts a refusal of key and returns how many refusals a record
// written now stands for: 0 when none is due.
func (r *Reports) Refused(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.keys.get(key)
	if s == nil {
		if r.max > 0 && r.keys.len() >= r.max {
			r.keys.remove(r.keys.oldest())
		}
		s = r.keys.add(key, summary{})
	}
	return s.count(r.now(), r.every)
}

// Sweep forgets the keys not reported for DefaultMaxIdle: their
// unreported refusals, if any, are dropped. It returns how many it
// forgot.
func (r *Reports) Sweep() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	now, n := r.now(), 0
	for e := r.keys.oldest(); e != nil && now.Sub(e.val.reported) >= DefaultMaxIdle; e = r.keys.oldest() {
		r.keys.remove(e)
		n++
	}
	return n
}
