package engine

import (
	"bytes"
	"errors"
	"sync"

	"github.com/google/btree"
	bolt "go.etcd.io/bbolt"
)

// The layout's code reads and writes through Tx, Bucket and Cursor, which
// have the shape of bbolt's Tx, Bucket and Cursor (the subset it uses).
// While serving, a write is made durable by the write-ahead log (wal.go)
// and kept in memory, in layers, until a checkpoint (checkpoint.go) puts it
// in the bbolt file: a Tx reads the newest layer first, then the one being
// checkpointed, then bbolt. At open, in migrations and in the offline tools
// a Tx wraps a bbolt transaction and passes everything through (Wrap).

// item is a key's newest value in a layer, or its deletion.
type item struct {
	k, v []byte
	del  bool
}

func itemLess(a, b *item) bool { return bytes.Compare(a.k, b.k) < 0 }

// empty is what Get returns for a key with an empty value: not nil, as
// bbolt's.
var empty = []byte{}

// layer holds changes not yet in the bbolt file. Once published to
// readers (as a clone) or frozen for a checkpoint it is never changed.
// Its trees hold pointers: a clone's copy-on-write copies nodes, and a
// pointer is a seventh of an item.
type layer struct {
	t    [maxBuckets]*btree.BTreeG[*item]
	seq  [maxBuckets]uint64 // a bucket's sequence, where set (seqSet)
	set  [maxBuckets]bool
	lsn  uint64 // the last log record whose changes it holds
	size int64  // bytes of keys and values put, to time checkpoints
	no   uint64 // which freeze this is (frozen layers)
	mark int8   // its checkpoint sets (1) or clears (-1) the log's mark
}

// get finds probe's key in bucket i.
func (l *layer) get(i int, probe *item) (*item, bool) {
	if l == nil || l.t[i] == nil {
		return nil, false
	}
	return l.t[i].Get(probe)
}

func (l *layer) tree(i int) *btree.BTreeG[*item] {
	if l == nil {
		return nil
	}
	return l.t[i]
}

// Tx is a transaction: raw (a bbolt transaction passed through), a
// reader's snapshot (active and frozen layers over a bbolt read
// transaction), or the writer's (w set: writes go to active, which is the
// writer's own, with an undo log and the log record being built).
type Tx struct {
	tx     *bolt.Tx
	l      *Layout
	raw    bool
	active *layer
	frozen *layer
	w      *wstate
	bk     [maxBuckets]Bucket
	probe  item // a key to look up (one goroutine uses a txn)
	// cs are the first cursors the txn hands out, kept with it (txns are
	// pooled: see view), so that a read allocates none.
	cs  [3]Cursor
	ncs int
}

var txnPool = sync.Pool{New: func() any { return new(Tx) }}

// reset readies a pooled t for a transaction over tx and the layers; it
// keeps its buffers and its cursors' callbacks.
func (t *Tx) reset(l *Layout, tx *bolt.Tx, active, frozen *layer, w *wstate) {
	if t.l != nil { // only the layout's buckets are ever set
		clear(t.bk[:len(t.l.Buckets)])
	}
	t.l, t.tx, t.raw, t.active, t.frozen, t.w = l, tx, false, active, frozen, w
	for i := range t.ncs {
		t.cs[i].clear()
	}
	t.ncs = 0
}

// Wrap passes bbolt transaction tx, of a file of layout l, through: for
// the store's migrations and offline tools, which read and write the file
// itself.
func Wrap(tx *bolt.Tx, l *Layout) *Tx { return &Tx{tx: tx, l: l, raw: true} }

// Bolt is the bbolt transaction under t.
func (t *Tx) Bolt() *bolt.Tx { return t.tx }

// Bucket returns the bucket called name, or nil if the store has none.
func (t *Tx) Bucket(name []byte) *Bucket {
	i := t.l.index(name)
	if i < 0 {
		if t.raw {
			if b := t.tx.Bucket(name); b != nil {
				return &Bucket{t: t, i: -1, b: b}
			}
		}
		return nil
	}
	bk := &t.bk[i]
	if bk.t == nil {
		b := t.tx.Bucket(name)
		if b == nil {
			return nil
		}
		bk.t, bk.i, bk.b = t, i, b
	}
	return bk
}

// Bucket is a Tx's view of one bucket.
type Bucket struct {
	t *Tx
	i int
	b *bolt.Bucket
	// FillPercent is kept for raw transactions; a checkpoint uses the
	// layout's Fills.
	FillPercent float64
}

func (b *Bucket) rawb() *bolt.Bucket {
	if b.FillPercent != 0 {
		b.b.FillPercent = b.FillPercent
	}
	return b.b
}

// Get returns key's value, or nil.
func (b *Bucket) Get(key []byte) []byte {
	if b.t.raw {
		return b.b.Get(key)
	}
	// A copy: keeping key itself would make every caller's key escape
	// (an allocation per read, layers or not).
	b.t.probe.k = append(b.t.probe.k[:0], key...)
	for _, l := range [2]*layer{b.t.active, b.t.frozen} {
		if it, ok := l.get(b.i, &b.t.probe); ok {
			if it.del {
				return nil
			}
			return it.v
		}
	}
	return b.b.Get(key)
}

// Put sets key to value; both are copied. A key or value bbolt would
// refuse is a *LimitError, and nothing changes: it must never reach the
// log, which the checkpoint could then not apply (limit.go).
func (b *Bucket) Put(key, value []byte) error {
	if b.t.raw {
		return b.rawb().Put(key, value)
	}
	if err := b.t.l.checkPut(b.i, key, value); err != nil {
		return err
	}
	buf := make([]byte, len(key)+len(value))
	copy(buf, key)
	copy(buf[len(key):], value)
	it := item{k: buf[:len(key):len(key)], v: buf[len(key):]}
	if len(value) == 0 {
		it.v = empty
	}
	b.t.w.change(b.t.active, b.i, it)
	return nil
}

// Delete removes key.
func (b *Bucket) Delete(key []byte) error {
	if b.t.raw {
		return b.b.Delete(key)
	}
	b.t.w.change(b.t.active, b.i, item{k: append([]byte(nil), key...), del: true})
	return nil
}

// Sequence returns the bucket's sequence.
func (b *Bucket) Sequence() uint64 {
	if b.t.raw {
		return b.b.Sequence()
	}
	for _, l := range [2]*layer{b.t.active, b.t.frozen} {
		if l != nil && l.set[b.i] {
			return l.seq[b.i]
		}
	}
	return b.b.Sequence()
}

// NextSequence increments the bucket's sequence and returns it.
func (b *Bucket) NextSequence() (uint64, error) {
	if b.t.raw {
		return b.b.NextSequence()
	}
	n := b.Sequence() + 1
	return n, b.SetSequence(n)
}

// SetSequence sets the bucket's sequence.
func (b *Bucket) SetSequence(n uint64) error {
	if b.t.raw {
		return b.b.SetSequence(n)
	}
	b.t.w.setSeq(b.t.active, b.i, n)
	return nil
}

// ForEach calls fn for every key in order, as bbolt's ForEach.
func (b *Bucket) ForEach(fn func(k, v []byte) error) error {
	if b.t.raw {
		return b.b.ForEach(fn)
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// KeyN counts the bucket's keys: bbolt's page statistics, corrected by
// what the layers add and delete.
func (b *Bucket) KeyN() int {
	n := b.b.Stats().KeyN
	if b.t.raw {
		return n
	}
	seen := map[string]bool{}
	for _, l := range [2]*layer{b.t.active, b.t.frozen} {
		t := l.tree(b.i)
		if t == nil {
			continue
		}
		t.Ascend(func(it *item) bool {
			if seen[string(it.k)] {
				return true
			}
			seen[string(it.k)] = true
			inBolt := b.b.Get(it.k) != nil
			switch {
			case it.del && inBolt:
				n--
			case !it.del && !inBolt:
				n++
			}
			return true
		})
	}
	return n
}

// Cursor returns a cursor over the bucket's keys, merged from the layers
// and bbolt.
func (b *Bucket) Cursor() *Cursor {
	var c *Cursor
	if t := b.t; t.ncs < len(t.cs) {
		c = &t.cs[t.ncs]
		t.ncs++
	} else {
		c = new(Cursor)
	}
	c.b, c.bc = b, b.b.Cursor()
	// A reader's layers never change: if neither holds a key of the
	// bucket, the cursor is bbolt's.
	c.pass = b.t.raw || (b.t.w == nil && emptyTree(b.t.active.tree(b.i)) && emptyTree(b.t.frozen.tree(b.i)))
	if !c.pass && c.found == nil {
		c.found = func(it *item) bool {
			if c.skip != nil && bytes.Equal(it.k, c.skip) {
				c.skip = nil
				return true
			}
			c.hit, c.ok = it, true
			return false
		}
	}
	return c
}

// Cursor walks a bucket as bbolt's Cursor does. Over layers it merges:
// at each step the next key of each source (the active layer, the frozen
// one, bbolt), the newest source's item winning a tie, deletions skipped.
type Cursor struct {
	b  *Bucket
	bc *bolt.Cursor
	// cur is the key the cursor is on (nil: none).
	cur []byte
	// bk, bv: bbolt's candidate. Going forward it is the first bbolt key
	// not below cur, going backward the last not above it.
	bk, bv []byte
	back   bool
	// found takes the first item a tree walk meets, but skip (once).
	found func(*item) bool
	skip  []byte
	hit   *item
	ok    bool
	probe item
	pass  bool // no layer to merge: bbolt's cursor alone
}

func (c *Cursor) raw() bool { return c.pass }

// clear empties c for reuse, keeping its callback (bound to c) and its
// probe's buffer.
func (c *Cursor) clear() {
	*c = Cursor{found: c.found, probe: item{k: c.probe.k[:0]}}
}

func emptyTree(t *btree.BTreeG[*item]) bool { return t == nil || t.Len() == 0 }

// First moves to the first key.
func (c *Cursor) First() ([]byte, []byte) {
	if c.raw() {
		return c.bc.First()
	}
	c.back = false
	c.bk, c.bv = c.bc.First()
	return c.forward(nil, false)
}

// Last moves to the last key.
func (c *Cursor) Last() ([]byte, []byte) {
	if c.raw() {
		return c.bc.Last()
	}
	c.back = true
	c.bk, c.bv = c.bc.Last()
	return c.backward(nil, false)
}

// Seek moves to the first key not below seek.
func (c *Cursor) Seek(seek []byte) ([]byte, []byte) {
	if c.raw() {
		return c.bc.Seek(seek)
	}
	c.back = false
	c.bk, c.bv = c.bc.Seek(seek)
	return c.forward(seek, true)
}

// Next moves to the next key.
func (c *Cursor) Next() ([]byte, []byte) {
	if c.raw() {
		return c.bc.Next()
	}
	if c.cur == nil {
		return nil, nil
	}
	if c.back { // turn: bbolt's first key above cur
		c.back = false
		c.bk, c.bv = c.bc.Seek(c.cur)
	}
	if c.bk != nil && bytes.Equal(c.bk, c.cur) {
		c.bk, c.bv = c.bc.Next()
	}
	return c.forward(c.cur, false)
}

// Prev moves to the previous key.
func (c *Cursor) Prev() ([]byte, []byte) {
	if c.raw() {
		return c.bc.Prev()
	}
	if c.cur == nil {
		return nil, nil
	}
	if !c.back { // turn: bbolt's last key below cur
		c.back = true
		k, v := c.bc.Seek(c.cur)
		if k == nil {
			k, v = c.bc.Last()
		} else if bytes.Compare(k, c.cur) > 0 {
			k, v = c.bc.Prev()
		}
		c.bk, c.bv = k, v
	}
	if c.bk != nil && bytes.Equal(c.bk, c.cur) {
		c.bk, c.bv = c.bc.Prev()
	}
	return c.backward(c.cur, false)
}

// Delete deletes the key the cursor is on.
func (c *Cursor) Delete() error {
	if c.raw() {
		return c.bc.Delete()
	}
	if c.cur == nil {
		return nil
	}
	return c.b.Delete(c.cur)
}

// forward moves to the smallest key of every source above from (or not
// below it, if incl), skipping deletions. bk must already be bbolt's.
func (c *Cursor) forward(from []byte, incl bool) ([]byte, []byte) { return c.move(from, incl, false) }

// backward moves to the largest key of every source below from (or not
// above it, if incl; every key if from is nil), skipping deletions.
func (c *Cursor) backward(from []byte, incl bool) ([]byte, []byte) { return c.move(from, incl, true) }

// move is forward, or backward if back: at each step the nearest key of
// the layers and bbolt's candidate, the newer source winning a tie.
func (c *Cursor) move(from []byte, incl, back bool) ([]byte, []byte) {
	for {
		best, bestV, del, ok := c.bk, c.bv, false, c.bk != nil
		// The frozen layer, then the active one: the newer wins a tie.
		for _, l := range [2]*layer{c.b.t.frozen, c.b.t.active} {
			t := l.tree(c.b.i)
			if t == nil {
				continue
			}
			var it *item
			var found bool
			if back {
				it, found = c.descend(t, from, incl)
			} else {
				it, found = c.ascend(t, from, incl)
			}
			if !found {
				continue
			}
			d := bytesCmp(it.k, best, ok)
			if back && ok {
				d = -d
			}
			if d <= 0 {
				best, bestV, del, ok = it.k, it.v, it.del, true
			}
		}
		if !ok {
			c.cur = nil
			return nil, nil
		}
		c.cur = best
		if !del {
			return best, bestV
		}
		// A deleted key: step past it in bbolt too.
		if c.bk != nil && bytes.Equal(c.bk, best) {
			if back {
				c.bk, c.bv = c.bc.Prev()
			} else {
				c.bk, c.bv = c.bc.Next()
			}
		}
		from, incl = best, false
	}
}

// bytesCmp compares a with b, where b counts as above everything if
// !bOK (no candidate yet).
func bytesCmp(a, b []byte, bOK bool) int {
	if !bOK {
		return -1
	}
	return bytes.Compare(a, b)
}

// ascend finds t's first item above from (not below it if incl; the
// first of all if from is nil).
func (c *Cursor) ascend(t *btree.BTreeG[*item], from []byte, incl bool) (*item, bool) {
	if from == nil {
		return t.Min()
	}
	c.ok, c.skip, c.probe.k = false, nil, append(c.probe.k[:0], from...) // a copy, as in Get
	if !incl {
		c.skip = c.probe.k // the first not below from is from itself: the next
	}
	t.AscendGreaterOrEqual(&c.probe, c.found)
	return c.hit, c.ok
}

// descend finds t's last item below from (not above it if incl; the last
// of all if from is nil).
func (c *Cursor) descend(t *btree.BTreeG[*item], from []byte, incl bool) (*item, bool) {
	if from == nil {
		return t.Max()
	}
	c.ok, c.skip, c.probe.k = false, nil, append(c.probe.k[:0], from...)
	if !incl {
		c.skip = c.probe.k
	}
	t.DescendLessOrEqual(&c.probe, c.found)
	return c.hit, c.ok
}

// DeleteBucket deletes bucket name (migrations: raw transactions only).
func (t *Tx) DeleteBucket(name []byte) error {
	if !t.raw {
		return errors.New("buckets change only at open")
	}
	if i := t.l.index(name); i >= 0 {
		t.bk[i] = Bucket{}
	}
	return t.tx.DeleteBucket(name)
}

// CreateBucket creates bucket name (migrations: raw transactions only).
func (t *Tx) CreateBucket(name []byte) (*Bucket, error) {
	if !t.raw {
		return nil, errors.New("buckets change only at open")
	}
	if i := t.l.index(name); i >= 0 {
		t.bk[i] = Bucket{}
	}
	if _, err := t.tx.CreateBucket(name); err != nil {
		return nil, err
	}
	return t.Bucket(name), nil
}
