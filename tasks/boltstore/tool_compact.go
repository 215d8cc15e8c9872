package boltstore

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/internal/syncdir"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
)

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
