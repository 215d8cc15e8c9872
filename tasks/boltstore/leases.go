package boltstore

import (
	"context"
	"sync"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// Leases and runners (tasks.Leases) are kept in memory, not in the file:
// one process holds a file (flock), so a runner or a lease an earlier
// process recorded is dead by definition. A store opened again has none,
// and every task left submitted or working is an orphan, as recovery at
// start wants.

// leases are a store's runners and leases.
type leases struct {
	mu      sync.Mutex
	runners map[string]string    // taskID → its runner, for tasks that have one
	until   map[string]time.Time // replica → when its lease lapses
}

var _ tasks.Leases = (*Store)(nil)

// runner returns task id's runner, "" for none.
func (l *leases) runner(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runners[id]
}

// set makes runner task id's runner ("": none). It is called in the
// transaction that writes the task's change, as its last step, so that a
// change is never seen without it; a write that runs again sets it again.
func (l *leases) set(id, runner string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if runner == "" {
		delete(l.runners, id)
		return
	}
	if l.runners == nil {
		l.runners = make(map[string]string)
	}
	l.runners[id] = runner
}

// undo gives task id its runner prev again, after a commit that failed,
// unless a later write changed it from runner.
func (l *leases) undo(id, runner, prev string) {
	l.mu.Lock()
	cur := l.runners[id]
	l.mu.Unlock()
	if cur == runner {
		l.set(id, prev)
	}
}

// held reports whether replica holds a lease that lapsed less than
// grace before now, or lives.
func (l *leases) held(replica string, now time.Time, grace time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	until, ok := l.until[replica]
	return ok && now.Add(-grace).Before(until)
}

// Heartbeat implements tasks.Leases.
func (s *Store) Heartbeat(ctx context.Context, replica string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.Closed() {
		return tasks.ErrClosed
	}
	s.lease.mu.Lock()
	defer s.lease.mu.Unlock()
	if ttl <= 0 {
		delete(s.lease.until, replica)
		return nil
	}
	if s.lease.until == nil {
		s.lease.until = make(map[string]time.Time)
	}
	s.lease.until[replica] = time.Now().Add(ttl)
	return nil
}

// Orphans implements tasks.Leases, from the non-terminal index.
func (s *Store) Orphans(ctx context.Context, grace time.Duration, limit int) ([]*tasks.Record, error) {
	active, err := s.Active(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []*tasks.Record
	for _, r := range active {
		if len(out) == limit {
			break
		}
		if st := r.State(); st != a2a.StateSubmitted && st != a2a.StateWorking {
			continue
		}
		if r.Runner == "" || !s.lease.held(r.Runner, now, grace) {
			out = append(out, r)
		}
	}
	return out, nil
}
