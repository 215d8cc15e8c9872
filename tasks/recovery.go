package tasks

import (
	"context"
	"errors"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// recover settles the tasks a previous process left unfinished: calls
// that were submitted or working fail with "interrupted: server
// restarted", unless their function is retry-safe, in which case they run
// again. Tasks waiting for input keep waiting.
func (s *Service) recover(ctx context.Context) error {
	active, err := s.store.Active(ctx)
	if err != nil {
		return err
	}
	var failed, rerun int
	for _, rec := range active {
		st := rec.State()
		if st != a2a.StateSubmitted && st != a2a.StateWorking {
			continue
		}
		caller := Caller{ID: rec.Owner, Tier: rec.CallerTier}
		var fn *functions.Function
		if rec.FunctionID != "" {
			if f, denial := s.authorize(caller, rec.FunctionID); denial == "" && f.RetrySafe {
				fn = f
			}
		}
		var status a2a.TaskStatus
		if fn != nil {
			status = s.status(a2a.StateSubmitted, agentText(rec.Task.ID, rec.Task.ContextID, "Resubmitted: server restarted"))
		} else {
			status = s.status(a2a.StateFailed, agentText(rec.Task.ID, rec.Task.ContextID, "interrupted: server restarted"))
		}
		r, events, _, err := s.store.Update(ctx, rec.Owner, rec.Task.ID, nil, func(r *Record) ([]Event, error) {
			if r.State() != st {
				return nil, errSkip
			}
			s.setStatus(r, status)
			return []Event{{Status: &status}}, nil
		})
		if errors.Is(err, errSkip) {
			continue
		}
		if err != nil {
			return err
		}
		s.broker.Publish(r.Task.ID, events)
		if fn != nil {
			s.mu.Lock()
			s.inflight++
			s.mu.Unlock()
			s.start(r, fn, nil)
			rerun++
		} else {
			failed++
		}
	}
	if failed+rerun > 0 {
		s.log.Warn().Int("failed", failed).Int("rerun", rerun).Msg("recovered tasks interrupted by a restart")
	}
	return nil
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
