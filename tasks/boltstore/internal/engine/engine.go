// Package engine is the bbolt store's engine: a bbolt file whose writes
// are grouped by a single writer into records of a write-ahead log
// (wal.go), kept in memory in copy-on-write layers (kv.go) and written to
// the file by checkpoints (checkpoint.go); at open, what the log holds
// beyond the file is applied to it (recover.go).
//
// It knows nothing of what the buckets hold: the store hands it its
// buckets (a Layout) and reads and writes them through Tx, Bucket and
// Cursor, which have the shape of bbolt's.
package engine

import (
	"bytes"
	"fmt"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// maxBuckets bounds a layout's buckets: a layer and a Tx keep one entry
// per bucket in arrays, so that a read allocates nothing for them.
const maxBuckets = 16

// Layout is what the engine is told of the file: its buckets, in an order
// that never changes (a log record names a bucket by its index), and the
// few that the engine itself reads.
type Layout struct {
	Buckets [][]byte
	// Meta is the bucket the engine keeps its marks in: the last log
	// record the file holds ("wal"), and that a server has the log open
	// ("walopen").
	Meta []byte
	// Named is the bucket whose keys a LogDamage lists as what the lost
	// records wrote (the store's tasks).
	Named []byte
	// Fills are the fill percents the checkpoint gives buckets, by name,
	// whose keys mostly grow; the others keep bbolt's default.
	Fills map[string]float64
	// Dropped, when set, runs in recovery's transaction when Repair left
	// out ops bbolt refuses: what the store derived from them is stale.
	Dropped func(tx *bolt.Tx) error
}

// check says what is wrong with l, if anything.
func (l *Layout) check() error {
	switch {
	case len(l.Buckets) > maxBuckets:
		return fmt.Errorf("engine: %d buckets, at most %d", len(l.Buckets), maxBuckets)
	case l.index(l.Meta) < 0:
		return fmt.Errorf("engine: the meta bucket %q is not one of the buckets", l.Meta)
	}
	return nil
}

// index is the index of bucket name, or -1.
func (l *Layout) index(name []byte) int {
	// The store passes its bucket variables: their bytes are the very
	// ones in Buckets.
	p := unsafe.SliceData(name)
	for i, n := range l.Buckets {
		if unsafe.SliceData(n) == p {
			return i
		}
	}
	for i, n := range l.Buckets {
		if bytes.Equal(n, name) {
			return i
		}
	}
	return -1
}

// name is bucket i's name, for errors.
func (l *Layout) name(i int) string {
	if i < 0 || i >= len(l.Buckets) {
		return fmt.Sprintf("#%d", i)
	}
	return string(l.Buckets[i])
}

// fill is the fill percent the checkpoint gives bucket i (0: bbolt's).
func (l *Layout) fill(i int) float64 { return l.Fills[string(l.Buckets[i])] }
