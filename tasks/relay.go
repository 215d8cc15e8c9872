package tasks

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
)

// Shared is a Store that other processes write too (several a2ad on one
// database). It tells of their commits, so that this process's streams,
// waiters and running calls hear of what happens to their tasks
// elsewhere: a stream of a task running on another replica, a cancel
// sent to another replica. It is an optional ability of a Backend, which
// NewService asserts.
type Shared interface {
	Store
	// Follow has the store call fn, from a goroutine of its own, for the
	// commits of other processes that added events to a task: its id and
	// the sequences of the first and last events added. Notices may be
	// merged, late or out of order, and some may be lost; after a time in
	// which some may have been (a reconnect), fn is called with id "".
	// fn must not block. Follow is called once; Close stops the calls.
	Follow(fn func(id string, first, last uint64))
	// Seqs returns the sequence of the last event of each task of ids;
	// tasks that do not exist are left out.
	Seqs(ctx context.Context, ids []string) (map[string]uint64, error)
}

// DefaultSharedPoll is how often, on a shared store, the tasks this
// process follows are read again, in case a notice was lost.
const DefaultSharedPoll = time.Second

// relay brings the events other processes commit to a shared store to
// this process's broker, and stops a local call whose task another
// process canceled. It reads only the tasks followed here: those of
// running calls, streams and blocking waiters. The broker stays the one
// fan-out: the relay publishes to it what it reads from the store, and
// Watch and wait take events from there as they take local ones (a
// duplicate is skipped; a gap is read from the store).
type relay struct {
	shared Shared
	broker *Broker
	stop   func(id string) // stops the local call of a canceled task
	poll   time.Duration
	log    zerolog.Logger

	mu      sync.Mutex
	follows map[string]*follow
	pending map[string]uint64 // task id → the sequence its notified events follow
	resync  bool              // notices may have been lost: read every followed task
	lastErr time.Time         // when a failed read was last logged
	wake    chan struct{}

	ctx    context.Context // the relay's life: start to close
	cancel context.CancelFunc
	done   chan struct{}
}

// follow is the interest of this process in one task.
type follow struct {
	n    int    // followers: calls, streams, waiters
	last uint64 // the last event published here
}

func newRelay(shared Shared, broker *Broker, stop func(string), poll time.Duration, log zerolog.Logger) *relay {
	if poll <= 0 {
		poll = DefaultSharedPoll
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &relay{
		shared: shared, broker: broker, stop: stop, poll: poll, log: log,
		follows: make(map[string]*follow),
		pending: make(map[string]uint64),
		wake:    make(chan struct{}, 1),
		ctx:     ctx, cancel: cancel,
		done: make(chan struct{}),
	}
	broker.seen = r.seen
	return r
}

// start begins relaying; close stops it. Both do nothing on a nil relay
// (a store of one process).
func (r *relay) start() {
	if r == nil {
		return
	}
	go r.loop()
	r.shared.Follow(r.notified)
}

func (r *relay) close() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

func nop() {}

// follow makes task id followed until the returned func is called; seq
// is the last of its events the follower has (0: none). It counts only
// for the task's first follower: the others may not have what it read.
func (r *relay) follow(id string, seq uint64) (unfollow func()) {
	if r == nil {
		return nop
	}
	r.mu.Lock()
	f := r.follows[id]
	if f == nil {
		f = &follow{last: seq}
		r.follows[id] = f
	}
	f.n++
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		if f.n--; f.n == 0 {
			delete(r.follows, id)
		}
		r.mu.Unlock()
	}
}

// seen records that the events of task id up to last were published
// here: the broker tells of each Publish.
func (r *relay) seen(id string, last uint64) {
	r.mu.Lock()
	if f := r.follows[id]; f != nil && last > f.last {
		f.last = last
	}
	r.mu.Unlock()
}

// notified is the store's notice of another process's commit.
func (r *relay) notified(id string, first, last uint64) {
	r.mu.Lock()
	if id == "" {
		r.resync = true
	} else if f := r.follows[id]; f != nil && last > f.last {
		from := f.last
		if first > 0 {
			from = max(from, first-1)
		}
		if p, ok := r.pending[id]; ok {
			from = min(from, p)
		}
		r.pending[id] = from
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *relay) loop() {
	defer close(r.done)
	t := time.NewTicker(r.poll)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.wake:
			r.mu.Lock()
			var pend map[string]uint64
			if len(r.pending) > 0 {
				pend, r.pending = r.pending, make(map[string]uint64)
			}
			resync := r.resync
			r.resync = false
			r.mu.Unlock()
			if resync {
				r.check()
			}
			for id, from := range pend {
				r.relay(id, from)
			}
		case <-t.C:
			r.check()
		}
	}
}

// check reads the last sequence of every followed task and relays the
// events not yet published here: the safety net for a lost notice.
func (r *relay) check() {
	r.mu.Lock()
	ids := make([]string, 0, len(r.follows))
	for id := range r.follows {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	seqs, err := r.shared.Seqs(r.ctx, ids)
	if err != nil {
		r.failed(err)
		return
	}
	for id, seq := range seqs {
		r.mu.Lock()
		f := r.follows[id]
		behind := f != nil && seq > f.last
		var from uint64
		if behind {
			from = f.last
		}
		r.mu.Unlock()
		if behind {
			r.relay(id, from)
		}
	}
}

// relay publishes the events of task id after from, if it is still
// followed, and stops its local call if they cancel it.
func (r *relay) relay(id string, from uint64) {
	r.mu.Lock()
	f := r.follows[id]
	if f != nil {
		from = max(from, f.last)
	}
	r.mu.Unlock()
	if f == nil {
		return
	}
	evs, err := r.shared.Events(r.ctx, id, from)
	if err != nil {
		r.failed(err)
		return
	}
	if len(evs) == 0 {
		return
	}
	r.broker.Publish(id, evs)
	for _, e := range evs {
		if e.Status != nil && e.Status.State == a2a.StateCanceled {
			r.stop(id)
		}
	}
}

// failed logs a failed read, at most once per ten polls.
func (r *relay) failed(err error) {
	if r.ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	quiet := time.Since(r.lastErr) < 10*r.poll
	if !quiet {
		r.lastErr = time.Now()
	}
	r.mu.Unlock()
	if !quiet {
		r.log.Warn().Err(err).Msg("read the events of a task followed on a shared store")
	}
}
