package audit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/a2ad/a2ad/audit"
)

// TestFileReopen: the audit file is its owner's alone, appended to, and
// after a rotator renamed it, Reopen writes the next records to a new
// file at the path while the rotated one keeps what it had.
func TestFileReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := audit.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := f.Reopen(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{path + ".1": "old\none\n", path: "two\n"} {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != want {
			t.Errorf("%s holds %q (%v), want %q", filepath.Base(p), b, err, want)
		}
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the reopened file's mode is %v (%v), want 0600", st.Mode().Perm(), err)
	}
	if _, err := audit.OpenFile(filepath.Join(t.TempDir(), "missing", "audit.log")); err == nil {
		t.Error("a file in a missing directory opened")
	}
}
