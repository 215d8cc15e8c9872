//go:build unix

package callers

import (
	"os"
	"syscall"
)

// keepOwner gives f the owner and group of old, when they differ from
// f's (changing them takes root, or, for the group alone, the owner in
// that group).
func keepOwner(f *os.File, old os.FileInfo) error {
	want, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if got, ok := fi.Sys().(*syscall.Stat_t); ok && got.Uid == want.Uid && got.Gid == want.Gid {
		return nil
	}
	return f.Chown(int(want.Uid), int(want.Gid))
}
