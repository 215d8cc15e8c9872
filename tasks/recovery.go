package tasks

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// recover settles the tasks a previous process left unfinished: calls
// that were submitted or working fail with "interrupted: server
// restarted", unless their function is retry-safe, in which case they run
// again. Before either, what is left running of an exec call's process
// group is killed. Tasks waiting for input keep waiting.
func (s *Service) recover(ctx context.Context) error {
	active, err := s.store.Active(ctx)
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
			retried, err := s.settle(ctx, rec, st)
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
		s.log.Warn().Int("failed", failed).Int("rerun", rerun).Msg("recovered tasks interrupted by a restart")
	}
	return firstErr
}

// settle fails rec, left in st by a previous process, or submits it again
// if its function is retry-safe (and still callable by its owner), once
// the process group of its call, if one was recorded, is killed.
func (s *Service) settle(ctx context.Context, rec *Record, st a2a.TaskState) (retried bool, err error) {
	if g := rec.Group; g != nil {
		log := s.log.With().Str("task_id", rec.Task.ID).Int("pgid", g.ID).Logger()
		switch killed, err := functions.KillLeftover(*g); {
		case err != nil:
			// The task is settled all the same: a start must not hang on
			// one unreadable process.
			log.Error().Err(err).Msg("kill what an interrupted call left running")
		case killed:
			log.Warn().Msg("killed what an interrupted call left running")
		}
	}
	caller := rec.Caller()
	var fn *functions.Function
	if rec.FunctionID != "" {
		if f, denial := s.authorize(ctx, caller, rec.FunctionID); denial == "" && f.RetrySafe {
			fn = f
		}
	}
	var status a2a.TaskStatus
	if fn != nil {
		status = s.status(a2a.StateSubmitted, agentText(rec.Task.ID, rec.Task.ContextID, "Resubmitted: server restarted"))
	} else {
		status = s.status(a2a.StateFailed, failure(rec.Task.ID, rec.Task.ContextID, "interrupted: server restarted", FailureInterrupted))
	}
	r, events, _, err := s.store.Update(ctx, rec.Owner, rec.Task.ID, nil, Head, func(r *Record) ([]Event, error) {
		if r.State() != st { // moved on since Active read it
			return nil, errSkip
		}
		if err := s.move(r, onRecover, status); err != nil {
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
	s.broker.Publish(r.Task.ID, events)
	if fn == nil {
		return false, nil
	}
	// A recovered call counts for its owner (anonymous ones in a group
	// of their own), but is never refused: it was accepted before.
	r.Input = rec.Input // an update reads the head only
	ck := callKey{owner: r.Owner}
	if !s.ex.hold(ck) {
		return false, nil // closed meanwhile: the next start recovers it
	}
	s.start(ck, r, fn, nil)
	return true, nil
}

func (s *Service) sweepLoop() {
	t := time.NewTicker(s.cfg.RetentionInterval)
	defer t.Stop()
	for {
		if err := s.Sweep(s.ctx); err != nil && s.ctx.Err() == nil {
			s.log.Error().Err(err).Msg("retention sweep")
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep deletes the terminal tasks older than the retention period, in
// small transactions.
func (s *Service) Sweep(ctx context.Context) error {
	cutoff := s.cfg.Now().Add(-s.cfg.Retention)
	total := 0
	for ctx.Err() == nil {
		n, err := s.store.Expire(ctx, cutoff, s.cfg.RetentionBatch)
		if err != nil {
			return err
		}
		total += n
		if n < s.cfg.RetentionBatch {
			break
		}
	}
	if total > 0 {
		s.log.Info().Int("deleted", total).Msg("expired tasks deleted")
	}
	return nil
}
