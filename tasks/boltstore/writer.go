package boltstore

import (
	"context"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/tasks"
)

// The single writer: concurrent changes are grouped into one commit.

// write is one queued change. fn may run more than once: when a grouped
// transaction fails, it is rolled back and the other writes run again.
type write struct {
	fn   func(tx *bolt.Tx) error
	done chan error
}

var writePool = sync.Pool{New: func() any { return &write{done: make(chan error, 1)} }}

// update runs fn in a write transaction shared with other concurrent
// writes, and returns when it is committed (fsynced) or failed.
func (s *Store) update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := writePool.Get().(*write)
	w.fn = fn
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		writePool.Put(w)
		return tasks.ErrClosed
	}
	s.writes <- w
	s.mu.RUnlock()
	// The write is queued: wait for it even if ctx ends, so that the
	// caller learns whether it committed.
	err := <-w.done
	w.fn = nil
	writePool.Put(w)
	return err
}

func (s *Store) writer() {
	batch := make([]*write, 0, s.maxBatch)
	for {
		select {
		case w := <-s.writes:
			batch = append(batch[:0], w)
		case <-s.stop:
			// Senders hold mu.RLock while sending and closed is set
			// under the write lock, so nothing more can arrive.
			for {
				select {
				case w := <-s.writes:
					s.commit([]*write{w})
				default:
					return
				}
			}
		}
	fill:
		for len(batch) < s.maxBatch {
			select {
			case w := <-s.writes:
				batch = append(batch, w)
			default:
				break fill
			}
		}
		s.commit(batch)
	}
}

// commit runs the writes in one transaction. If one fails, the
// transaction is rolled back, the failed write gets its error, and the
// others run again without it.
func (s *Store) commit(batch []*write) {
	for len(batch) > 0 {
		failed := -1
		start := time.Now()
		err := s.updateTx(func(tx *bolt.Tx) error {
			for i, w := range batch {
				if err := w.fn(tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if err == nil {
			s.stats.mu.Lock()
			s.stats.Commits++
			s.stats.Writes += uint64(len(batch))
			s.stats.mu.Unlock()
			if s.onCommit != nil {
				s.onCommit(len(batch), time.Since(start))
			}
			for _, w := range batch {
				w.done <- nil
			}
			return
		}
		if failed < 0 { // the commit itself failed: every write failed
			for _, w := range batch {
				w.done <- err
			}
			return
		}
		batch[failed].done <- err
		batch = append(batch[:failed:failed], batch[failed+1:]...)
	}
}
