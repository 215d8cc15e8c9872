package tasks

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// sweeper keeps the store in order around the runs, in one place: at
// start it settles the tasks a previous process left submitted or working
// (recover), killing first what is left of their exec calls' process
// groups; while the service runs it deletes the terminal tasks past their
// retention (sweep). It runs no call itself: the service says which
// recovered calls run again (rerun) and starts them (resume).
type sweeper struct {
	store     Store
	broker    *Broker
	log       zerolog.Logger
	now       func() time.Time
	retention time.Duration // how long terminal tasks are kept
	interval  time.Duration // how often they are swept
	batch     int           // tasks deleted per transaction

	// rerun returns the function of rec, a task a restart cut short, if
	// it is to run again: retry-safe and still callable by rec's owner;
	// nil fails rec.
	rerun func(ctx context.Context, rec *Record) *functions.Function
	// resume starts the call of rec, resubmitted, again; false if the
	// service closed meanwhile (the next start recovers it).
	resume func(rec *Record, fn *functions.Function) bool

	ctx    context.Context // the lifetime of the retention loop
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start runs the retention loop until Close.
func (sw *sweeper) start() {
	sw.wg.Add(1)
	go func() { defer sw.wg.Done(); sw.loop() }()
}

// Close stops the retention loop and waits for it.
func (sw *sweeper) Close() {
	sw.cancel()
	sw.wg.Wait()
}

// recover settles the tasks a previous process left unfinished: calls
// that were submitted or working fail with "interrupted: server
// restarted", unless their function is retry-safe, in which case they run
// again. Before either, what is left running of an exec call's process
// group is killed. Tasks waiting for input keep waiting.
func (sw *sweeper) recover(ctx context.Context) error {
	active, err := sw.store.Active(ctx)
	if err != nil {
		return err
	}
	// The tasks are settled concurrently, so that the store groups their
	// writes into a few commits instead of one fsync each.
	var (
		wg            sync.WaitGroup
		mu            sync.Mutex
		failed, rerun int
		firstErr      error
		sem           = make(chan struct{}, 64)
	)
	for _, rec := range active {
		st := rec.State()
		if st != a2a.StateSubmitted && st != a2a.StateWorking {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			retried, err := sw.settle(ctx, rec, st)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				firstErr = cmp.Or(firstErr, err)
			case retried:
				rerun++
			default:
				failed++
			}
		}()
	}
	wg.Wait()
	if failed+rerun > 0 {
		sw.log.Warn().Int("failed", failed).Int("rerun", rerun).Msg("recovered tasks interrupted by a restart")
	}
	return firstErr
}

// settle fails rec, left in st by a previous process, or submits it again
// if its function is retry-safe (and still callable by its owner), once
// the process group of its call, if one was recorded, is killed.
func (sw *sweeper) settle(ctx context.Context, rec *Record, st a2a.TaskState) (retried bool, err error) {
	if g := rec.Group; g != nil {
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
	status := a2a.TaskStatus{State: a2a.StateFailed, Timestamp: a2a.Timestamp(sw.now()),
		Message: failure(rec.Task.ID, rec.Task.ContextID, "interrupted: server restarted", FailureInterrupted)}
	if fn != nil {
		status = a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: status.Timestamp,
			Message: agentText(rec.Task.ID, rec.Task.ContextID, "Resubmitted: server restarted")}
	}
	r, events, _, err := sw.store.Update(ctx, rec.Owner, rec.Task.ID, nil, Head, func(r *Record) ([]Event, error) {
		if r.State() != st { // moved on since Active read it
			return nil, errSkip
		}
		if err := advance(r, onRecover, status, sw.now()); err != nil {
			return nil, err
		}
		r.Group = nil
		return []Event{{Status: &status}}, nil
	})
	if errors.Is(err, errSkip) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	sw.broker.Publish(r.Task.ID, events)
	if fn == nil {
		return false, nil
	}
	r.Input = rec.Input // an update reads the head only
	return sw.resume(r, fn), nil
}

func (sw *sweeper) loop() {
	t := time.NewTicker(sw.interval)
	defer t.Stop()
	for {
		if err := sw.sweep(sw.ctx); err != nil && sw.ctx.Err() == nil {
			sw.log.Error().Err(err).Msg("retention sweep")
		}
		select {
		case <-sw.ctx.Done():
			return
		case <-t.C:
		}
	}
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
