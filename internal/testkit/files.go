package testkit

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"strings"
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

// CopyFile copies the file at from to to (0600), replacing what is there.
func CopyFile(tb testing.TB, from, to string) {
	tb.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// FlipByte flips one bit of the byte at offset off in the file at path,
// as a bad disk would.
func FlipByte(tb testing.TB, path string, off int64) {
	tb.Helper()
	XorByte(tb, path, off, 0x10)
}

// XorByte flips the bits of mask in the byte at offset off in the file at
// path.
func XorByte(tb testing.TB, path string, off int64, mask byte) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		tb.Fatal(err)
	}
	b[0] ^= mask
	if _, err := f.WriteAt(b, off); err != nil {
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

// UpdateStore opens the bbolt file at path and runs fn in one write
// transaction, as a bug or a damaged disk would change a store behind
// its back; an error fails the test.
func UpdateStore(tb testing.TB, path string, fn func(tx *bolt.Tx) error) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		tb.Fatal(err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
}

// DumpStore returns every key and value of every bucket of the open bbolt
// db, with each bucket's sequence, and the hash of its file: a test that
// compares them before and after can tell that nothing was written.
func DumpStore(tb testing.TB, db *bolt.DB) (dump string, file [32]byte) {
	tb.Helper()
	var b strings.Builder
	err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			fmt.Fprintf(&b, "bucket %q seq %d\n", name, bk.Sequence())
			return bk.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&b, "%q=%q\n", k, v)
				return nil
			})
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := os.ReadFile(db.Path())
	if err != nil {
		tb.Fatal(err)
	}
	return b.String(), sha256.Sum256(raw)
}

// HasKey reports whether bucket, in the bbolt file at path, holds key.
func HasKey(tb testing.TB, path, bucket, key string) bool {
	tb.Helper()
	var found bool
	ViewStore(tb, path, func(tx *bolt.Tx) error {
		found = tx.Bucket([]byte(bucket)).Get([]byte(key)) != nil
		return nil
	})
	return found
}

// FDsOn counts the descriptors process pid has open on the file fi
// (/proc/PID/fd); the test skips where there is no /proc.
func FDsOn(tb testing.TB, pid int, fi os.FileInfo) int {
	tb.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Skipf("no %s: %v", dir, err)
	}
	n := 0
	for _, e := range ents {
		if got, err := os.Stat(dir + "/" + e.Name()); err == nil && os.SameFile(got, fi) {
			n++
		}
	}
	return n
}
