package syncdir_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/a2ad/a2ad/internal/syncdir"
)

func TestSync(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.tmp"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "a.tmp"), filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := syncdir.Sync(dir); err != nil {
		t.Errorf("Sync(%s): %v", dir, err)
	}
	if err := syncdir.Sync(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Sync of a missing directory: %v, want fs.ErrNotExist", err)
	}
}
