package engine

import (
	"errors"
	"os"

	bolt "go.etcd.io/bbolt"
)

// The file's mark that a server has its log open (meta "walopen"): set
// from Open until a clean close, whose last checkpoint clears it; cleared
// too in the copies a backup or a compaction writes, which hold every
// change. A missing log directory is refused (a *LogError) only where the
// file carries it: elsewhere nothing can be lost with the log.

var keyWALOpen = []byte("walopen")

// walMark reads the last record the file of db holds, and whether it
// says a server has the log open.
func (l *Layout) walMark(db *bolt.DB) (last uint64, open bool, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		last, open = l.Applied(tx), tx.Bucket(l.Meta).Get(keyWALOpen) != nil
		return nil
	})
	return last, open, err
}

// setOpen marks the log open in the file (a server has it), or not.
func (l *Layout) setOpen(tx *bolt.Tx, open bool) error {
	if open {
		return tx.Bucket(l.Meta).Put(keyWALOpen, []byte{1})
	}
	return tx.Bucket(l.Meta).Delete(keyWALOpen)
}

// Seal clears, in tx, the mark that a server had its log open, if the
// file has a meta bucket and the mark: for a copy, which holds every
// change and needs no log.
func (l *Layout) Seal(tx *bolt.Tx) error {
	if m := tx.Bucket(l.Meta); m != nil && m.Get(keyWALOpen) != nil {
		return m.Delete(keyWALOpen)
	}
	return nil
}

// MissingLog is the *LogError of the file of db, at path, whose log
// directory is missing although the file says a server had it open; nil
// if the log is there or the file was closed cleanly (or is a copy).
func (l *Layout) MissingLog(db *bolt.DB, path string) error {
	if _, err := os.Stat(Dir(path)); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var le *LogError
	_ = db.View(func(tx *bolt.Tx) error {
		if m := tx.Bucket(l.Meta); m != nil && m.Get(keyWALOpen) != nil {
			le = &LogError{Path: path, Dir: Dir(path), Missing: true, Applied: l.Applied(tx)}
		}
		return nil
	})
	if le == nil {
		return nil
	}
	return le
}

// MarkOpen sets the file's mark that a server has its log open, or
// clears it (a clean close; a copy, which needs no log).
func (l *Layout) MarkOpen(db *bolt.DB, open bool) error {
	return db.Update(func(tx *bolt.Tx) error { return l.setOpen(tx, open) })
}
