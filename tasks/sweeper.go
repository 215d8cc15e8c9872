package tasks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/tick"
)

// sweeper keeps the store in order around the runs, in one place. It
// holds this replica's lease on the calls it runs (heartbeat), and settles
// the orphans: tasks left submitted or working by a replica whose lease
// lapsed, a process that crashed or stopped (recover), at start and then
// every third of the lease's ttl, killing first what is left of their
// exec calls' process groups; and it deletes the terminal tasks past
// their retention (sweep). It runs no call itself: the service says which
// recovered calls run again (rerun) and starts them (resume).
type sweeper struct {
	store     Store
	broker    *Broker
	log       zerolog.Logger
	now       func() time.Time
	retention time.Duration // how long terminal tasks are kept
	interval  time.Duration // how often they are swept
	batch     int           // tasks deleted per transaction
	lease     *lease        // this replica's id, the runner of the calls it runs, and its lease
	ttl       time.Duration // how long its lease lasts without a heartbeat

	// rerun returns the function of rec, a task a restart cut short, if
	// it is to run again: retry-safe and still callable by rec's owner;
	// nil fails rec.
	rerun func(ctx context.Context, rec *Record) *functions.Function
	// resume starts the call of rec, resubmitted, again; false if the
	// service closed meanwhile (the next start recovers it).
	resume func(rec *Record, fn *functions.Function) bool
	// fenced stops the runs of this replica, whose lease may have lapsed;
	// nil on a store one process holds, where no other replica could take
	// them over (a process that was suspended keeps its runs).
	fenced func()

	ctx    context.Context // the lifetime of the loops
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// orphanBatch is how many orphans one read returns.
const orphanBatch = 256

// start runs the retention and lease loops until Close.
func (sw *sweeper) start() {
	sw.wg.Add(2)
	go func() { defer sw.wg.Done(); sw.loop() }()
	go func() { defer sw.wg.Done(); sw.leaseLoop() }()
	if sw.fenced != nil {
		sw.wg.Add(1)
		go func() { defer sw.wg.Done(); sw.fenceLoop() }()
	}
}

// Close stops the loops and waits for them. The lease stays held until
// release or until it lapses.
func (sw *sweeper) Close() {
	sw.cancel()
	sw.wg.Wait()
}

// release ends this replica's lease, once its calls have ended, so that
// another replica takes over at once what they left unfinished.
func (sw *sweeper) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sw.store.Heartbeat(ctx, sw.lease.replica(), 0); err != nil && !errors.Is(err, ErrClosed) {
		sw.log.Warn().Err(err).Msg("end the replica's lease; other replicas wait for it to lapse")
	}
}

// leaseLoop renews the lease and settles the orphans every third of its
// ttl; a beat that fails skips the orphans (the store is likely down).
func (sw *sweeper) leaseLoop() {
	tick.Every(sw.ctx.Done(), max(sw.ttl/3, time.Millisecond), func() {
		err := sw.heartbeat(sw.ctx)
		if err == nil {
			err = sw.recover(sw.ctx)
		}
		if err != nil && sw.ctx.Err() == nil {
			sw.log.Error().Err(err).Msg("lease and recovery")
		}
	})
}

// recover settles the orphans, the tasks left unfinished by a replica
// whose lease lapsed (an earlier process of this one included; see lease
// for when a lapse is one): calls
// that were submitted or working fail with "interrupted: replica lost"
// ("server restarted" when no runner was recorded, as in a store one
// process holds), unless their function is retry-safe, in which case they
// run again here. Before either, what is left running of an exec call's
// process group is killed, if it ran on this host. Tasks waiting for
// input keep waiting; tasks of live replicas are not touched.
func (sw *sweeper) recover(ctx context.Context) error {
	var failed, rerun int
	defer func() {
		if failed+rerun > 0 {
			sw.log.Warn().Int("failed", failed).Int("rerun", rerun).Msg("recovered tasks interrupted by a lost replica or a restart")
		}
	}()
	for {
		orphans, err := sw.store.Orphans(ctx, sw.lease.grace(time.Now()), orphanBatch)
		if err != nil {
			return fmt.Errorf("read orphaned tasks: %w", err)
		}
		f, r, err := sw.settleAll(ctx, orphans)
		failed, rerun = failed+f, rerun+r
		// A full page may hide more; one that settled nothing would come
		// back the same.
		if err != nil || len(orphans) < orphanBatch || f+r == 0 {
			return err
		}
	}
}

// settleAll settles orphans concurrently, so that the store groups their
// writes into a few commits instead of one fsync each.
func (sw *sweeper) settleAll(ctx context.Context, orphans []*Record) (failed, rerun int, err error) {
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		sem = make(chan struct{}, 64)
	)
	self := sw.lease.replica()
	for _, rec := range orphans {
		if rec.Runner == self {
			continue // this replica's own lease lapsed: another may take them, not it
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			retried, settled, serr := sw.settle(ctx, rec)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case serr != nil:
				err = cmp.Or(err, serr)
			case !settled:
			case retried:
				rerun++
			default:
				failed++
			}
		}()
	}
	wg.Wait()
	return failed, rerun, err
}

// settle fails rec, an orphan, or submits it again here if its function
// is retry-safe (and still callable by its owner), once the process group
// of its call, if one was recorded on this host, is killed. Of replicas
// that settle one orphan at once, one does (settled); the others find
// that its runner changed.
func (sw *sweeper) settle(ctx context.Context, rec *Record) (retried, settled bool, err error) {
	if g := rec.Group; g != nil {
		// KillLeftover kills nothing of a group another host (another
		// boot id) started: there, the call's child died with its a2ad
		// (Pdeathsig), and what it started itself runs on until it ends.
		log := sw.log.With().Str("task_id", rec.Task.ID).Int("pgid", g.ID).Logger()
		switch killed, err := functions.KillLeftover(*g); {
		case err != nil:
			// The task is settled all the same: a start must not hang on
			// one unreadable process.
			log.Error().Err(err).Msg("kill what an interrupted call left running")
		case killed:
			log.Warn().Msg("killed what an interrupted call left running")
		}
	}
	var fn *functions.Function
	if rec.FunctionID != "" {
		fn = sw.rerun(ctx, rec)
	}
	why := "replica lost"
	if rec.Runner == "" {
		why = "server restarted"
	}
	status := a2a.TaskStatus{State: a2a.StateFailed, Timestamp: a2a.Timestamp(sw.now()),
		Message: failure(rec.Task.ID, rec.Task.ContextID, "interrupted: "+why, FailureInterrupted)}
	if fn != nil {
		status = a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: status.Timestamp,
			Message: agentText(rec.Task.ID, rec.Task.ContextID, "Resubmitted: "+why)}
	}
	st, sc, self := rec.State(), Head, sw.lease.replica()
	if fn != nil {
		sc = Scope{History: -1} // the call's attempt and key come from its history
	}
	r, events, _, err := sw.store.Update(ctx, rec.Owner, rec.Task.ID, nil, sc, func(r *Record) ([]Event, error) {
		if r.State() != st || r.Runner != rec.Runner { // moved on, or taken over, since Orphans read it
			return nil, errSkip
		}
		if err := advance(r, onRecover, status, sw.now(), self); err != nil {
			return nil, err
		}
		r.Group = nil
		return []Event{{Status: &status}}, nil
	})
	if errors.Is(err, errSkip) || errors.Is(err, ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	sw.broker.Publish(r.Task.ID, events)
	if fn == nil {
		return false, true, nil
	}
	r.Input = rec.Input // an update reads the head only
	return sw.resume(r, fn), true, nil
}

func (sw *sweeper) loop() {
	sweep := func() {
		if err := sw.sweep(sw.ctx); err != nil && sw.ctx.Err() == nil {
			sw.log.Error().Err(err).Msg("retention sweep")
		}
	}
	sweep() // at start, then every interval
	tick.Every(sw.ctx.Done(), sw.interval, sweep)
}

// sweep deletes the terminal tasks older than the retention period, in
// small transactions.
func (sw *sweeper) sweep(ctx context.Context) error {
	cutoff := sw.now().Add(-sw.retention)
	total := 0
	for ctx.Err() == nil {
		n, err := sw.store.Expire(ctx, cutoff, sw.batch)
		if err != nil {
			return err
		}
		total += n
		if n < sw.batch {
			break
		}
	}
	if total > 0 {
		sw.log.Info().Int("deleted", total).Msg("expired tasks deleted")
	}
	return nil
}
