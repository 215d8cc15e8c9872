package boltstore

import (
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
)

// SealCopy clears, in the copy of a store file at path (a backup being
// written, which no one else holds), the mark that a server had its log
// open: a copy holds every change, and needs no log. An empty file is
// left as it is (Check says so); for one that is no store, the error is
// a *DamagedError.
func SealCopy(path string) error {
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return err
	}
	db, err := openDB(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	err = db.Update(layout.Seal)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// RepairOptions say what Repair may give up.
type RepairOptions struct {
	// AcceptLoss lets Repair apply a damaged log up to the damage, and
	// keep the segments from the damaged one on aside; or recreate a
	// missing log. The writes the *LogError names are lost.
	AcceptLoss bool
	// LockTimeout <= 0 means DefaultToolLockTimeout.
	LockTimeout time.Duration
}

// RepairResult says what Repair did.
type RepairResult struct {
	// Applied is the last record the file holds now; Before, the last it
	// held before.
	Before, Applied uint64
	// Skipped are the ops Repair left out (at most 20; SkippedCount
	// counts them all): bbolt refuses them. Every other op of their
	// records was applied.
	Skipped      []BadOp
	SkippedCount int
	// Damage is the damage accepted (AcceptLoss), and Aside the directory
	// the segments from the damaged one on were moved to; Missing, a
	// missing log accepted.
	Damage  *LogDamage
	Aside   string
	Missing bool
}

// Repair applies the write-ahead log of the store file at path, which no
// server may hold (ErrLocked), as far as it can: every op of every record
// but those bbolt refuses, which it leaves out (and the owners' stored
// bytes are counted again at the next open). Damage, or a missing log,
// loses writes: without opts.AcceptLoss it is the *LogError that says
// which, and nothing changes. A store whose log applies as it is is
// repaired as any open would: its log is applied.
func Repair(path string, opts RepairOptions) (*RepairResult, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultToolLockTimeout
	}
	db, err := openDB(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("repair task store %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, openError(path, err)
	}
	res := &RepairResult{}
	err = db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil {
			return &DamagedError{Path: path, What: "it has no meta bucket (it is not a store file)"}
		}
		res.Before = layout.Applied(tx)
		return nil
	})
	var rec *engine.Recovery
	if err == nil {
		_, rec, err = engine.Recover(db, &layout, engine.Mode{SkipBad: true, AcceptLoss: opts.AcceptLoss})
	}
	if err == nil {
		err = db.View(func(tx *bolt.Tx) error { res.Applied = layout.Applied(tx); return nil })
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	le := &rec.Left
	res.Skipped, res.SkippedCount = le.Bad, le.BadCount
	res.Damage, res.Aside, res.Missing = le.Damage, rec.Aside, le.Missing
	return res, nil
}

// replayPending applies to the file at path what its write-ahead log holds
// beyond it, if anything: a server that stopped without closing the store
// (a crash, a kill) leaves its last changes there, and the offline tools
// read the file. It takes the file's exclusive lock for it.
func replayPending(path string, lockTimeout time.Duration) error {
	pending, err := engine.Pending(path)
	if err != nil || !pending {
		return err // a missing log: MissingLog
	}
	db, err := openDB(path, 0o600, &bolt.Options{Timeout: lockTimeout, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, berrors.ErrTimeout) {
		return fmt.Errorf("open task store %s: %w", path, ErrLocked)
	}
	if err != nil {
		return fmt.Errorf("open task store %s to apply its write-ahead log (a2ad stopped without closing it; start a2ad on it once): %w", path, err)
	}
	_, _, err = engine.Recover(db, &layout, engine.Mode{})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, ErrDamaged) {
		err = fmt.Errorf("open task store %s: apply its write-ahead log: %w", path, err)
	}
	return err
}
