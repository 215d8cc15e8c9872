//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package boltstore

import (
	"os"
	"time"
)

// opener is bbolt's Options.OpenFile. Without flock it only opens the
// file: bbolt locks it, and a damaged file is caught by guard only.
type opener struct {
	exclusive bool
	timeout   time.Duration
	file      *os.File
}

func (o *opener) open(path string, flag int, mode os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag, mode)
	o.file = f
	return f, err
}

// lockCopy does nothing without flock.
func lockCopy(string) (func(), error) { return func() {}, nil }
