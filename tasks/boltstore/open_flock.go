//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	berrors "go.etcd.io/bbolt/errors"
)

// maxReopens bounds how often opener.open opens the path again because
// the file it locked is no longer the one the path names.
const maxReopens = 8

// opener is bbolt's Options.OpenFile for one Open. It takes the lock that
// bbolt takes next (exclusive for a server, shared for the tools) itself,
// waiting up to timeout; then, should the path name another file by now
// (a2ad store compact put a new file in place while it waited), it
// closes the old one and opens the path again, so that a server that
// waited on a compact holds the new file, never the original compact
// kept aside. Then it checks the pages bbolt will trust (checkPages).
// bbolt's own lock on the same descriptor succeeds at once.
type opener struct {
	exclusive bool
	timeout   time.Duration
	file      *os.File // the file handed to bbolt
}

func (o *opener) open(path string, flag int, mode os.FileMode) (*os.File, error) {
	var deadline time.Time
	if o.timeout > 0 {
		deadline = time.Now().Add(o.timeout)
	}
	for range maxReopens {
		f, err := os.OpenFile(path, flag, mode)
		if err != nil {
			return nil, err
		}
		same, err := lockFile(f, path, o.exclusive, deadline)
		if err == nil && same {
			var fi os.FileInfo
			if fi, err = f.Stat(); err == nil {
				err = checkPages(f, fi.Size())
			}
			if err == nil {
				o.file = f
				return f, nil
			}
		}
		f.Close() // and its lock
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("the file was replaced %d times while waiting for its lock", maxReopens)
}

// lockFile takes an flock on f, as bbolt does, waiting until deadline (the
// zero time: for ever), and reports whether path still names f.
func lockFile(f *os.File, path string, exclusive bool, deadline time.Time) (same bool, err error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			return false, err
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return false, berrors.ErrTimeout
		}
		time.Sleep(50 * time.Millisecond)
	}
	locked, err := f.Stat()
	if err != nil {
		return false, err
	}
	named, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // moved away: open the path again
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(locked, named), nil
}

// lockCopy takes the exclusive lock on the new file at path, which no
// one else knows yet, and returns its release.
func lockCopy(path string) (unlock func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if _, err := lockFile(f, path, true, time.Now()); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
