package audit

import (
	"fmt"
	"os"
	"sync"
)

// File is the audit trail's own file, reopened on SIGHUP (Reopen) so
// that log rotation works. It is safe for concurrent use.
type File struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// OpenFile opens (creates, appends to) the audit trail's file at path,
// readable by its owner alone.
func OpenFile(path string) (*File, error) {
	a := &File{path: path}
	if err := a.Reopen(); err != nil {
		return nil, err
	}
	return a, nil
}

// Write writes one record.
func (a *File) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.f.Write(p)
}

// Reopen opens the file again (a rotated file is left to its rotator).
func (a *File) Reopen() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit-log: %w", err)
	}
	a.mu.Lock()
	old := a.f
	a.f = f
	a.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}

// Close closes the file.
func (a *File) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.f.Close()
}
