package testkit

import (
	"os"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Stat returns the file info of path.
func Stat(tb testing.TB, path string) os.FileInfo {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi
}

// OverwriteAt writes b at offset off in the file at path, as damage would.
func OverwriteAt(tb testing.TB, path string, off int64, b []byte) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// ViewStore opens the bbolt file at path read-only, with its freelist
// loaded, and runs fn in a read transaction; an error fails the test.
func ViewStore(tb testing.TB, path string, fn func(tx *bolt.Tx) error) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if err := db.View(fn); err != nil {
		tb.Fatal(err)
	}
}
