package engine

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
func (db *DB) checkpointer() {
	for f := range db.ckptReq {
		db.ckptDone <- db.checkpoint(f)
	}
}

func (db *DB) checkpoint(f *layer) error {
	crashpoint.Hit("checkpoint.start")
	// Readers whose snapshot is older than f must not read the file once
	// it holds f: they retry (view).
	db.committing.Store(f.no)
	err := db.updateTx(func(tx *bolt.Tx) error {
		for i, name := range db.l.Buckets {
			t := f.t[i]
			if t == nil && !f.set[i] {
				continue
			}
			b := tx.Bucket(name)
			if fp := db.l.fill(i); fp != 0 {
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
		if err := db.l.putApplied(tx, f.lsn); err != nil {
			return err
		}
		if f.mark != 0 {
			if err := db.l.setOpen(tx, f.mark > 0); err != nil {
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
	db.wal.trim(f.lsn)
	crashpoint.Hit("checkpoint.trim")
	return nil
}

// freeze hands the active layer to the checkpointer and starts a new one.
func (db *DB) freeze() {
	db.freezes++
	f := db.act
	f.no = db.freezes
	// The file says its log is open while the log may hold what the file
	// does not; the last checkpoint of a close clears it.
	switch {
	case db.closing && db.marked:
		f.mark, db.marked = -1, false
	case !db.closing && !db.marked:
		f.mark, db.marked = 1, true
	}
	db.frozen, db.act = f, new(layer)
	db.snap.Store(&snapshot{active: new(layer), frozen: f, freezes: db.freezes})
	db.startCheckpoint()
}

func (db *DB) startCheckpoint() {
	db.inFlight = true
	db.ckptReq <- db.frozen
}

// checkpointed takes the checkpointer's answer: the frozen layer is in
// the file, or stays (to be tried again) if err.
func (db *DB) checkpointed(err error) {
	db.inFlight = false
	if err != nil && permanent(err) {
		// Trying again cannot mend it: stop taking writes (and trying).
		if db.stopped.Load() == nil {
			db.stopped.Store(&StoppedError{Path: db.bdb.Path(), Cause: err})
		}
		err = db.stopped.Load()
	}
	db.ckptErr = err
	if err != nil {
		if db.stopped.Load() == nil {
			db.ckptFailed.Store(&UnwritableError{Path: db.bdb.Path(), Cause: fmt.Errorf("checkpoint: %w", err)})
		}
		if db.onCheckpointError != nil {
			db.onCheckpointError(err)
		}
		return
	}
	db.ckptFailed.Store(nil)
	db.frozen = nil
	db.snap.Store(&snapshot{active: db.snap.Load().active, frozen: nil, freezes: db.freezes})
}

// maybeFreeze starts a checkpoint when one is due: on a tick if the active
// layer holds anything, or when it holds CheckpointBytes; a failed one is
// tried again on a tick.
func (db *DB) maybeFreeze(tick bool) {
	switch {
	case db.inFlight, db.stopped.Load() != nil:
	case db.frozen != nil:
		if tick {
			db.startCheckpoint()
		}
	case db.act.lsn != 0 && (tick || db.act.size >= db.ckptBytes):
		db.freeze()
	}
}

// flush checkpoints everything the writer holds and waits for it.
func (db *DB) flush() error {
	for db.inFlight || db.frozen != nil || db.act.lsn != 0 {
		switch {
		case db.inFlight:
		case db.frozen != nil:
			db.startCheckpoint()
		default:
			db.freeze()
		}
		db.checkpointed(<-db.ckptDone)
		if db.ckptErr != nil {
			return db.ckptErr
		}
	}
	return nil
}
