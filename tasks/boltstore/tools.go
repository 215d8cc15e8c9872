package boltstore

// The operator's store tools: a consistent copy taken while the server
// runs (Backup), the same copy of a file no server holds (BackupFile), an
// offline rewrite that gives back the space of freed pages (Compact), and
// a check of every index against the tasks (Check, check.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/a2ad/a2ad/internal/syncdir"

	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
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
	// (recover.go), which the next checkpoint sets again.
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

// CompactResult says what Compact did.
type CompactResult struct {
	// Before and After are the sizes of the file and of its compacted
	// copy. BeforeData is the original's size up to its last page in use:
	// the rest is space bbolt allocated ahead of the data (up to 16 MiB),
	// which a running server allocates again. The copy has none.
	Before, BeforeData, After int64
	// Out is where the compacted copy is: the store's own path when it was
	// compacted in place.
	Out string
	// Original is where the original file was kept ("" when the copy went
	// to another file and the original was left as it was).
	Original string
}

// compactTxSize bounds the memory one transaction of Compact holds.
const compactTxSize = 64 << 20

// Compact rewrites the store file at path into a new file that holds the
// same buckets, keys and bucket sequences without the free pages (and
// without space allocated ahead), and checks that every bucket of the
// copy holds as many keys as the original. The file must not be in use
// (ErrLocked); a damaged one is a *DamagedError.
//
// With out "", the copy replaces path atomically (path always names a
// complete store) and the original is kept as path+".bak", which must not
// exist yet. Otherwise the copy is written to out, which must not exist,
// and path is left as it was. On any error, path is unchanged and nothing
// is left behind. lockTimeout <= 0 means DefaultToolLockTimeout.
//
// Compact holds the original's shared lock until it returns, so no
// server starts on the file meanwhile; and it locks the copy before the
// copy takes path's name, and holds that lock too until it returns. A
// server that waited for the lock meanwhile finds that path names another
// file by the time it gets the lock, opens path again (see opener), and
// waits for the copy, which it then holds: never the original kept as
// path+".bak".
func Compact(path, out string, lockTimeout time.Duration) (*CompactResult, error) {
	res := &CompactResult{Out: out}
	if out == "" {
		// Replace the file a symbolic link names, not the link.
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				return nil, fmt.Errorf("compact task store: %w", err)
			}
			path = real
		}
		res.Out, res.Original = path, path+".bak"
		if _, err := os.Lstat(res.Original); err == nil {
			return nil, fmt.Errorf("compact task store %s: %s exists: move it away first (compact keeps the original there)", path, res.Original)
		}
	} else if _, err := os.Lstat(out); err == nil {
		return nil, fmt.Errorf("compact task store %s: %s exists: give a new file", path, out)
	}
	src, err := openReadOnly(path, lockTimeout)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("compact task store: %w", err)
	}
	res.Before = fi.Size()

	dir := filepath.Dir(res.Out)
	tmp, err := os.CreateTemp(dir, filepath.Base(res.Out)+".compact-*")
	if err != nil {
		return nil, fmt.Errorf("compact task store %s: %w", path, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	done := false
	defer func() {
		if !done {
			os.Remove(tmpPath)
		}
	}()
	if res.BeforeData, err = dataSize(src); err != nil {
		return nil, fmt.Errorf("compact task store %s: %w", path, err)
	}
	if res.After, err = compactInto(src, tmpPath, fi.Mode().Perm()); err != nil {
		return nil, fmt.Errorf("compact task store %s: %w", path, err)
	}

	if out != "" {
		// A link, not a rename: it refuses to replace a file that
		// appeared meanwhile.
		if err := os.Link(tmpPath, out); err != nil {
			return nil, fmt.Errorf("compact task store %s: %w", path, err)
		}
	} else {
		unlock, err := lockCopy(tmpPath)
		if err != nil {
			return nil, fmt.Errorf("compact task store %s: lock the copy: %w", path, err)
		}
		defer unlock()
		if testHookBeforeSwap != nil {
			testHookBeforeSwap()
		}
		if err := keepOriginal(path, res.Original); err != nil {
			return nil, fmt.Errorf("compact task store %s: keep the original: %w", path, err)
		}
		if err := os.Rename(tmpPath, path); err != nil {
			os.Remove(res.Original)
			return nil, fmt.Errorf("compact task store %s: %w", path, err)
		}
		done = true
	}
	if err := syncdir.Sync(dir); err != nil {
		return nil, fmt.Errorf("compact task store %s: %w", path, err)
	}
	return res, nil
}

// testHookBeforeSwap, set by tests, runs in Compact once the copy is
// written and locked, before it takes the store's name.
var testHookBeforeSwap func()

// compactInto copies src into a new store file at dst, syncs it and checks
// that it holds as many keys per bucket as src.
func compactInto(src *bolt.DB, dst string, mode os.FileMode) (used int64, err error) {
	db, err := bolt.Open(dst, mode, &bolt.Options{NoSync: true, Timeout: time.Second})
	if err != nil {
		return 0, err
	}
	err = engine.Guard(src.Path(), func() error { return bolt.Compact(db, src, compactTxSize) })
	if err == nil {
		err = layout.MarkOpen(db, false) // the log was applied before the copy
	}
	if err == nil {
		err = db.Sync() // one sync at the end instead of one per commit
	}
	var want, got map[string]int
	if err == nil {
		if want, err = keyCounts(src); err == nil {
			got, err = keyCounts(db)
		}
	}
	if err == nil {
		used, err = dataSize(db)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = sameCounts(want, got)
	}
	if err == nil {
		err = truncate(dst, used)
	}
	if err == nil {
		err = os.Chmod(dst, mode) // CreateTemp made it 0600
	}
	return used, err
}

// dataSize is the file's size up to its last page in use: bbolt grows a
// file ahead of its data (by up to 16 MiB at a time).
func dataSize(db *bolt.DB) (int64, error) {
	var n int64
	err := db.View(func(tx *bolt.Tx) error {
		n = tx.Size()
		return nil
	})
	return n, err
}

// truncate cuts the space bbolt allocated ahead of the data off the
// compacted file: a server grows it again when it needs to.
func truncate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func keyCounts(db *bolt.DB) (map[string]int, error) {
	counts := map[string]int{}
	err := engine.Guard(db.Path(), func() error {
		return db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
				counts[string(name)] = b.Stats().KeyN
				return nil
			})
		})
	})
	return counts, err
}

func sameCounts(want, got map[string]int) error {
	for name, n := range want {
		if got[name] != n {
			return fmt.Errorf("the copy's bucket %s holds %d keys, the original %d", name, got[name], n)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			return fmt.Errorf("the copy has a bucket %s the original has not", name)
		}
	}
	return nil
}

// keepOriginal makes bak a second name of path (so path is never missing),
// or a copy where the file system has no hard links.
func keepOriginal(path, bak string) error {
	if err := os.Link(path, bak); err == nil {
		return nil
	}
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(bak, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(bak)
	}
	return err
}
