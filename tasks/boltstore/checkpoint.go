package boltstore

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/internal/crashpoint"
)

// Checkpoints. The writer freezes its active layer (every CheckpointEvery
// while it holds changes, or once it holds CheckpointBytes) and starts a
// new one; the checkpointer writes the frozen layer to the bbolt file in
// one synced transaction, with the last log record it holds, and recycles
// the log segments that holds. Until then readers read the frozen layer
// over the file. One checkpoint runs at a time; one that fails is tried
// again at the next tick, its layer kept and its log records too, unless
// bbolt refused what it holds (permanent): then the store stops taking
// writes (a *StoppedError) and trying.

// checkpointer writes each layer it is given; it runs until ckptReq is
// closed.
func (s *Store) checkpointer() {
	for f := range s.ckptReq {
		s.ckptDone <- s.checkpoint(f)
	}
}

func (s *Store) checkpoint(f *layer) error {
	crashpoint.Hit("checkpoint.start")
	// Readers whose snapshot is older than f must not read the file once
	// it holds f: they retry (view).
	s.committing.Store(f.no)
	err := s.updateTx(func(tx *bolt.Tx) error {
		for i, name := range buckets {
			t := f.t[i]
			if t == nil && !f.set[i] {
				continue
			}
			b := tx.Bucket(name)
			if fp, ok := fills[string(name)]; ok {
				b.FillPercent = fp
			}
			var err error
			if t != nil {
				t.Ascend(func(it *item) bool {
					if it.del {
						err = b.Delete(it.k)
					} else {
						err = b.Put(it.k, it.v)
					}
					return err == nil
				})
			}
			if err == nil && f.set[i] {
				err = b.SetSequence(f.seq[i])
			}
			if err != nil {
				return err
			}
		}
		if err := putApplied(tx, f.lsn); err != nil {
			return err
		}
		if f.mark != 0 {
			if err := setOpen(tx, f.mark > 0); err != nil {
				return err
			}
		}
		crashpoint.Hit("checkpoint.apply")
		return nil
	})
	if err != nil {
		return err
	}
	crashpoint.Hit("checkpoint.commit")
	s.wal.trim(f.lsn)
	crashpoint.Hit("checkpoint.trim")
	return nil
}

// freeze hands the active layer to the checkpointer and starts a new one.
func (s *Store) freeze() {
	s.freezes++
	f := s.act
	f.no = s.freezes
	// The file says its log is open while the log may hold what the file
	// does not; the last checkpoint of a close clears it.
	switch {
	case s.closing && s.marked:
		f.mark, s.marked = -1, false
	case !s.closing && !s.marked:
		f.mark, s.marked = 1, true
	}
	s.frozen, s.act = f, new(layer)
	s.snap.Store(&snapshot{active: new(layer), frozen: f, freezes: s.freezes})
	s.startCheckpoint()
}

func (s *Store) startCheckpoint() {
	s.inFlight = true
	s.ckptReq <- s.frozen
}

// checkpointed takes the checkpointer's answer: the frozen layer is in
// the file, or stays (to be tried again) if err.
func (s *Store) checkpointed(err error) {
	s.inFlight = false
	if err != nil && permanent(err) {
		// Trying again cannot mend it: stop taking writes (and trying).
		if s.stopped.Load() == nil {
			s.stopped.Store(&StoppedError{Path: s.db.Path(), Cause: err})
		}
		err = s.stopped.Load()
	}
	s.ckptErr = err
	if err != nil {
		if s.stopped.Load() == nil {
			s.ckptFailed.Store(&UnwritableError{Path: s.db.Path(), Cause: fmt.Errorf("checkpoint: %w", err)})
		}
		if s.onCheckpointError != nil {
			s.onCheckpointError(err)
		}
		return
	}
	s.ckptFailed.Store(nil)
	s.frozen = nil
	s.snap.Store(&snapshot{active: s.snap.Load().active, frozen: nil, freezes: s.freezes})
}

// maybeFreeze starts a checkpoint when one is due: on a tick if the active
// layer holds anything, or when it holds CheckpointBytes; a failed one is
// tried again on a tick.
func (s *Store) maybeFreeze(tick bool) {
	switch {
	case s.inFlight, s.stopped.Load() != nil:
	case s.frozen != nil:
		if tick {
			s.startCheckpoint()
		}
	case s.act.lsn != 0 && (tick || s.act.size >= s.ckptBytes):
		s.freeze()
	}
}

// flush checkpoints everything the writer holds and waits for it.
func (s *Store) flush() error {
	for s.inFlight || s.frozen != nil || s.act.lsn != 0 {
		switch {
		case s.inFlight:
		case s.frozen != nil:
			s.startCheckpoint()
		default:
			s.freeze()
		}
		s.checkpointed(<-s.ckptDone)
		if s.ckptErr != nil {
			return s.ckptErr
		}
	}
	return nil
}
