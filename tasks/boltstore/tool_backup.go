package boltstore

// The operator's store tools (the files tool_*.go): a consistent copy
// taken while the server runs (Backup), the same copy of a file no server
// holds (BackupFile); an offline rewrite that gives back the space of
// freed pages (Compact, tool_compact.go); a check of every index against
// the tasks (Check, tool_check.go); the export for a migration to another
// store (tool_export.go); a damaged file (tool_damage.go) or log
// (tool_repair.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DefaultToolLockTimeout is how long the tools wait for a file another
// process holds, when they are given no timeout: long enough to ride out a
// server that is closing, short enough to say at once that one is running.
const DefaultToolLockTimeout = time.Second

// Backup writes a consistent copy of the whole store file to w from one
// read transaction, while writes go on: the copy is the store as it was
// when Backup began, and opens as a store of its own. size, if not nil, is
// called with the copy's length before the first byte is written (an HTTP
// handler sets Content-Length from it). It returns the bytes written.
//
// It checkpoints first, so that the file holds every change made before
// it. Writers are not blocked, but the pages the copy reads are not reused
// until it ends, so the file may grow meanwhile; and should the file
// outgrow the memory map (Options.InitialMmapSize) during a copy, the
// checkpoint that grows it waits for the copy to end (changes meanwhile
// stay in the log and in memory). Once ctx ends, the next write to w fails
// with its error.
func (s *Store) Backup(ctx context.Context, w io.Writer, size func(int64)) (int64, error) {
	// The copy is of the file, with every change, so it needs no log: it
	// is taken without the file's mark that a server has the log open
	// (engine.DB.CopyTx), which the next checkpoint sets again.
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	tx, err := s.db.CopyTx()
	if err != nil {
		return 0, fmt.Errorf("back up task store: %w", fromEngine(err))
	}
	defer tx.Rollback()
	return copyTx(ctx, tx, w, size)
}

// BackupFile is Backup of the store file at path, which no process may be
// writing: it is opened read-only, and a file a server holds is ErrLocked
// (take the copy through the server instead). lockTimeout <= 0 means
// DefaultToolLockTimeout.
func BackupFile(ctx context.Context, path string, w io.Writer, lockTimeout time.Duration) (int64, error) {
	db, err := openReadOnly(path, lockTimeout)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return backup(ctx, db, w, nil)
}

func backup(ctx context.Context, db *bolt.DB, w io.Writer, size func(int64)) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	tx, err := db.Begin(false)
	if err != nil {
		return 0, fmt.Errorf("back up task store: %w", fromEngine(err))
	}
	defer tx.Rollback()
	return copyTx(ctx, tx, w, size)
}

// copyTx writes the file as read transaction tx sees it to w.
func copyTx(ctx context.Context, tx *bolt.Tx, w io.Writer, size func(int64)) (int64, error) {
	if size != nil {
		size(tx.Size())
	}
	n, err := tx.WriteTo(ctxWriter{ctx: ctx, w: w})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = cerr // bbolt does not wrap the writer's error
		}
		return n, fmt.Errorf("back up task store: %w", err)
	}
	return n, nil
}

// ctxWriter stops a copy once ctx ends: bbolt's WriteTo takes no context.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// openReadOnly opens path without writing to it, under a shared lock: a
// server (which takes the exclusive lock) can neither hold it nor start on
// it meanwhile. A file a server holds is ErrLocked; a damaged one is a
// *DamagedError.
func openReadOnly(path string, lockTimeout time.Duration) (*bolt.DB, error) {
	if lockTimeout <= 0 {
		lockTimeout = DefaultToolLockTimeout
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open task store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open task store %s: not a regular file", path)
	}
	if fi.Size() == 0 {
		// bbolt would try to initialise it, which a read-only file refuses
		// with a less helpful error.
		return nil, fmt.Errorf("open task store %s: the file is empty", path)
	}
	if err := replayPending(path, lockTimeout); err != nil {
		return nil, err
	}
	// The freelist, loaded, tells freed pages from pages in use (scanPages).
	db, err := openDB(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: lockTimeout, PreLoadFreelist: true})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open task store %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, openError(path, err)
	}
	if err := layout.MissingLog(db, path); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// InUse reports whether a process holds the store file at path (a server
// has it open). A file that does not exist, or is no store, is not in use.
func InUse(path string) bool {
	db, err := openReadOnly(path, 50*time.Millisecond)
	if err == nil {
		db.Close()
	}
	return errors.Is(err, ErrLocked)
}
