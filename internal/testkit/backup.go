package testkit

import (
	"context"
	"io"
)

// Backup is a store for admin.BackupSource whose Backup writes Body after
// announcing Size (not at all when Size < 0), then fails with Err.
type Backup struct {
	Size int64
	Body []byte
	Err  error
}

// Backup writes the copy as the fields say.
func (f Backup) Backup(_ context.Context, w io.Writer, size func(int64)) (int64, error) {
	if f.Size < 0 {
		return 0, f.Err
	}
	size(f.Size)
	n, _ := w.Write(f.Body)
	return int64(n), f.Err
}
