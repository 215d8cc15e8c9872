package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/internal/testkit"
)

// The tests' layout: a few buckets, as a store would hand them.
var (
	bucketKeys = []byte("keys")
	bucketMore = []byte("more")
	bucketMeta = []byte("meta")
	testLayout = Layout{
		Buckets: [][]byte{bucketKeys, bucketMore, bucketMeta},
		Meta:    bucketMeta,
		Named:   bucketKeys,
		Fills:   map[string]float64{"keys": 0.9},
	}
	buckets = testLayout.Buckets
)

// noCheckpoints keeps every change in the log (and memory) until Flush or
// Close: what a crash copy then holds is the log's to replay.
var noCheckpoints = Options{CheckpointEvery: time.Hour, CheckpointBytes: 1 << 40}

// open opens, prepares, recovers and starts the file at path, as the
// store's Open does; the caller closes it.
func open(path string, opts Options, mode Mode) (*DB, error) {
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, err
	}
	mode.Server = true
	err = Prepare(bdb, &testLayout, func(*bolt.Tx) error { return nil })
	var wal *Log
	if err == nil {
		wal, _, err = Recover(bdb, &testLayout, mode)
	}
	if err != nil {
		_ = bdb.Close()
		return nil, err
	}
	return Start(bdb, &testLayout, wal, opts), nil
}

// mustOpen is open that fails the test on an error.
func mustOpen(tb testing.TB, path string, opts Options) *DB {
	tb.Helper()
	db, err := open(path, opts, Mode{})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

func keyOf(i int) string { return fmt.Sprintf("k-%03d", i) }

// putN puts keys k-from .. k-(to-1) into bucket keys, one log record
// each, the value the key's own name.
func putN(tb testing.TB, db *DB, from, to int) {
	tb.Helper()
	for i := from; i < to; i++ {
		err := db.Update(context.Background(), func(tx *Tx) error {
			return tx.Bucket(bucketKeys).Put([]byte(keyOf(i)), []byte(keyOf(i)))
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// keys is what bucket keys holds, in order.
func keys(tb testing.TB, db *DB) []string {
	tb.Helper()
	var got []string
	err := db.View(func(tx *Tx) error {
		return tx.Bucket(bucketKeys).ForEach(func(k, v []byte) error {
			if string(k) != string(v) {
				tb.Errorf("%s holds %q", k, v)
			}
			got = append(got, string(k))
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

// wantKeys fails the test unless bucket keys holds k-from .. k-(to-1).
func wantKeys(tb testing.TB, db *DB, from, to int) {
	tb.Helper()
	got := keys(tb, db)
	if len(got) != to-from {
		tb.Fatalf("%d keys %v, want k-%03d to k-%03d", len(got), got, from, to-1)
	}
	for i, k := range got {
		if k != keyOf(from+i) {
			tb.Fatalf("key %d is %s, want %s", i, k, keyOf(from+i))
		}
	}
}

// crashCopy copies the file at path and its log while its DB runs, as a
// crash would leave them, and returns the copy's path.
func crashCopy(tb testing.TB, path string) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "e.db")
	testkit.CopyFile(tb, path, out)
	if err := os.Mkdir(Dir(out), 0o700); err != nil {
		tb.Fatal(err)
	}
	ents, err := os.ReadDir(Dir(path))
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			testkit.CopyFile(tb, filepath.Join(Dir(path), e.Name()), filepath.Join(Dir(out), e.Name()))
		}
	}
	return out
}
