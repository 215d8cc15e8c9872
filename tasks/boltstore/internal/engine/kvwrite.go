package engine

import (
	"encoding/binary"

	"github.com/google/btree"
)

// The writer's side of the layers: what a group's writes change in the
// active layer, undone if a write fails, and the log record they build.

// wstate is the writer's side of a group: the undo log of the write
// running, and the log record the group's writes build.
type wstate struct {
	undo    []undo
	rec     []byte // ops, in order (wal.go)
	touched [maxBuckets]bool
	size    int64
}

type undo struct {
	i      int
	prev   *item
	had    bool
	seq    bool // a sequence change: prevSeq, prevSet
	pseq   uint64
	pset   bool
	recLen int
}

const (
	opPut    = 1
	opDelete = 2
	opSeq    = 3
)

func (w *wstate) change(l *layer, i int, it item) {
	t := l.t[i]
	if t == nil {
		t = btree.NewG(16, itemLess)
		l.t[i] = t
	}
	p := new(item)
	*p = it
	prev, had := t.ReplaceOrInsert(p)
	w.undo = append(w.undo, undo{i: i, prev: prev, had: had, recLen: len(w.rec)})
	w.touched[i] = true
	op := byte(opPut)
	if it.del {
		op = opDelete
	}
	w.rec = append(w.rec, op, byte(i))
	w.rec = binary.AppendUvarint(w.rec, uint64(len(it.k)))
	w.rec = append(w.rec, it.k...)
	if !it.del {
		w.rec = binary.AppendUvarint(w.rec, uint64(len(it.v)))
		w.rec = append(w.rec, it.v...)
	}
	w.size += int64(len(it.k) + len(it.v))
}

func (w *wstate) setSeq(l *layer, i int, n uint64) {
	w.undo = append(w.undo, undo{i: i, seq: true, pseq: l.seq[i], pset: l.set[i], recLen: len(w.rec)})
	l.seq[i], l.set[i] = n, true
	w.touched[i] = true
	w.rec = append(w.rec, opSeq, byte(i))
	w.rec = binary.AppendUvarint(w.rec, n)
}

// rollback undoes l's changes back to undo entry mark, and the record's.
func (w *wstate) rollback(l *layer, mark int) {
	for j := len(w.undo) - 1; j >= mark; j-- {
		u := w.undo[j]
		switch {
		case u.seq:
			l.seq[u.i], l.set[u.i] = u.pseq, u.pset
		case u.had:
			l.t[u.i].ReplaceOrInsert(u.prev)
		default:
			l.t[u.i].Delete(&item{k: w.keyAt(u)})
		}
		w.rec = w.rec[:u.recLen]
	}
	w.undo = w.undo[:mark]
}

// keyAt is the key undo entry u's change wrote, read back from the record.
func (w *wstate) keyAt(u undo) []byte {
	r := w.rec[u.recLen+2:]
	n, m := binary.Uvarint(r)
	return r[m : m+int(n)]
}

func (w *wstate) reset() {
	w.undo = w.undo[:0]
	w.rec = w.rec[:0]
	w.touched = [maxBuckets]bool{}
	w.size = 0
}
