package boltstore

import (
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
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
	err = db.Update(func(tx *bolt.Tx) error {
		if m := tx.Bucket(bucketMeta); m != nil && m.Get(keyWALOpen) != nil {
			return m.Delete(keyWALOpen)
		}
		return nil
	})
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
		res.Before = applied(tx)
		return nil
	})
	var rec *recovery
	if err == nil {
		_, rec, err = recoverWAL(db, walDir(path), defaultSegMB<<20, false, recoverMode{skipBad: true, acceptLoss: opts.AcceptLoss})
	}
	if err == nil {
		err = db.View(func(tx *bolt.Tx) error { res.Applied = applied(tx); return nil })
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	le := &rec.le
	res.Skipped, res.SkippedCount = le.Bad, le.BadCount
	res.Damage, res.Aside, res.Missing = le.Damage, rec.aside, le.Missing
	return res, nil
}
