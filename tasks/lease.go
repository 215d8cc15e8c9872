package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The lease rule. A replica's lease is a row the store times by its own
// clock: each heartbeat holds it for a ttl from the store's now. Its
// holder only measures durations on its own monotonic clock, from the
// start of its last heartbeat that succeeded (an underestimate of when the
// store's lease runs out), so no two clocks are ever compared:
//
//   - held: a replica takes new work (and is ready) only while its last
//     good beat started less than 2/3 of a ttl ago; past that it renews
//     before it takes any, and refuses work (ErrStoreUnavailable) while
//     it cannot.
//   - fenced (on a store several processes share; a process that holds
//     its store alone keeps its runs whatever the pause): once its last
//     good beat started 1.5 ttl ago, its lease may
//     have lapsed half a ttl ago: it stops its runs, which report nothing,
//     and goes on under a new replica id, so that what it ran becomes the
//     orphans of a replica that is gone. A result that a call produced
//     before is still stored if its task is still the old id's (see
//     finish): no one adopted it yet.
//   - adopt: a task whose runner holds a lease is adopted only once that
//     lease lapsed a ttl ago by the store's clock, and only by a replica
//     that has itself held its lease without a break for a ttl (so that
//     after an outage every replica shared, each has a ttl to renew before
//     anyone adopts its calls; nobody's lapse alone proves it dead). A
//     task whose runner holds no lease at all (it never did, or ended it
//     on a clean stop) is adopted at once.
//
// A runner is fenced at 1.5 ttl after its last beat began; its lease
// lapses no sooner than a ttl after it, and is adopted a ttl after that:
// half a ttl separates the end of a run from the start of its successor.

// errFenced is the cause of the runs a replica stops when its lease may
// have lapsed.
var errFenced = errors.New("replica's lease may have lapsed")

// lease is this replica's view of its own lease.
type lease struct {
	ttl time.Duration

	mu    sync.Mutex
	id    string          // the replica id the lease is held under
	beat  time.Time       // when the last good beat of id started; zero: none yet
	since time.Time       // since when the lease has held without a break; zero: none
	gone  map[string]bool // the ids this replica was fenced from

	renewing sync.Mutex // one renewal on demand at a time
}

// replica returns the id this replica runs calls under now.
func (l *lease) replica() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id
}

// beaten records that a beat of id that started at start succeeded at
// end. The lease held without a break if end is within a ttl of the
// previous beat's start (the store's lease ran from that beat's commit).
func (l *lease) beaten(id string, start, end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id != l.id {
		return // a late beat of an id fenced meanwhile
	}
	if l.beat.IsZero() || end.Sub(l.beat) >= l.ttl {
		l.since = end
	}
	l.beat = start
}

// held reports whether this replica may take new work now: its last good
// beat started less than 2/3 of a ttl ago.
func (l *lease) held(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.beat.IsZero() && now.Sub(l.beat) < l.ttl*2/3
}

// grace is how long ago a lease must have lapsed for this replica to adopt
// its calls: a ttl once this replica's own lease has held for a ttl;
// before that, forever (it adopts only the calls of runners that hold no
// lease at all).
func (l *lease) grace(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.since.IsZero() && now.Sub(l.since) >= l.ttl && now.Sub(l.beat) < l.ttl {
		return l.ttl
	}
	return forever
}

// forever is a grace no lease reaches.
const forever = 100 * 365 * 24 * time.Hour

// fence switches to a new replica id if the last good beat started 1.5
// ttl ago or more, and returns the id left; "" if it did not.
func (l *lease) fence(now time.Time, newID func() string) (old string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.beat.IsZero() || now.Sub(l.beat) < l.ttl*3/2 {
		return ""
	}
	old = l.id
	if l.gone == nil {
		l.gone = make(map[string]bool)
	}
	l.gone[old] = true
	l.id, l.beat, l.since = newID(), time.Time{}, time.Time{}
	return old
}

// runnerOf returns the id under which this replica takes step on of a
// task whose runner is runner: a step of a call (start, progress,
// result) of a task it ran under an id it was fenced from is taken under
// that id, so that a result its call produced is stored unless another
// replica adopted the task meanwhile (its runner changed); any other
// step is taken under the current id.
func (l *lease) runnerOf(runner string, on trigger) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch on {
	case onStart, onProgress, onResult:
		if l.gone[runner] {
			return runner
		}
	}
	return l.id
}

// heartbeat renews this replica's lease.
func (sw *sweeper) heartbeat(ctx context.Context) error {
	id, start := sw.lease.replica(), time.Now()
	if err := sw.store.Heartbeat(ctx, id, sw.ttl); err != nil {
		return fmt.Errorf("renew the replica's lease: %w", err)
	}
	sw.lease.beaten(id, start, time.Now())
	return nil
}

// ensure returns nil if this replica holds its lease now, renewing it
// first if its last beat is too old; ErrStoreUnavailable if it cannot.
func (sw *sweeper) ensure(ctx context.Context) error {
	if sw.lease.held(time.Now()) {
		return nil
	}
	sw.lease.renewing.Lock()
	defer sw.lease.renewing.Unlock()
	if sw.lease.held(time.Now()) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, sw.ttl/3)
	defer cancel()
	err := sw.heartbeat(ctx)
	if errors.Is(err, ErrClosed) {
		return err
	}
	if err != nil || !sw.lease.held(time.Now()) {
		return fmt.Errorf("%w: the replica's lease is not held (%v)", ErrStoreUnavailable, err)
	}
	return nil
}

// fenceLoop fences this replica (see lease.fence) as soon as its lease may
// have lapsed, stopping its runs with errFenced.
func (sw *sweeper) fenceLoop() {
	every := max(sw.ttl/10, time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-sw.ctx.Done():
			return
		case <-tick.C:
		}
		if old := sw.lease.fence(time.Now(), newID); old != "" {
			sw.log.Error().Str("replica", old).Str("new_replica", sw.lease.replica()).
				Msg("lease not renewed for 1.5 ttl: running calls stopped, another replica takes them over; going on under a new replica id")
			sw.fenced()
		}
	}
}
