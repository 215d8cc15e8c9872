package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
)

// The listing index. Every task has exactly one entry in recent, written
// in the transaction that writes the task and deleted with it:
//
//	key   len(owner) owner listTime(8) taskID
//	value statusTime(8) len(state) state contextID
//
// len(x) is a uvarint, times are Unix nanoseconds, big-endian, from
// tasks.ListTime and tasks.StatusTime. Keys of one owner are contiguous
// and, read backwards, come newest first (ties: highest id first), which
// is tasks.Cursor's order; the value lets filters run without loading the
// task. counts holds, per owner with tasks, how many entries the owner has
// in recent, so that an unfiltered listing needs no count of its keys.
var (
	bucketRecent = []byte("recent")
	bucketCounts = []byte("counts")
)

// listKeyAt is the recent key of task id of owner at list time at.
func listKeyAt(owner string, at uint64, id string) []byte {
	k := binary.AppendUvarint(make([]byte, 0, 2+len(owner)+8+len(id)), uint64(len(owner)))
	k = append(k, owner...)
	k = binary.BigEndian.AppendUint64(k, at)
	return append(k, id...)
}

// listKey is rec's key in recent.
func listKey(rec *tasks.Record) []byte {
	return listKeyAt(rec.Owner, tasks.ListTime(rec), rec.Task.ID)
}

// listValue is rec's value in recent.
func listValue(rec *tasks.Record) []byte {
	st := rec.Task.Status.State
	v := make([]byte, 0, 8+1+len(st)+len(rec.Task.ContextID))
	v = binary.BigEndian.AppendUint64(v, tasks.StatusTime(rec.Task.Status))
	v = binary.AppendUvarint(v, uint64(len(st)))
	v = append(v, st...)
	return append(v, rec.Task.ContextID...)
}

// putListing writes rec's entry in recent, replacing the one at old (the
// key the task had before the change; nil for a new task).
func putListing(tx *engine.Tx, old []byte, rec *tasks.Record) error {
	b := tx.Bucket(bucketRecent)
	b.FillPercent = appendFill
	k := listKey(rec)
	if old != nil && !bytes.Equal(old, k) {
		if err := b.Delete(old); err != nil {
			return err
		}
	}
	return b.Put(k, listValue(rec))
}

// deleteListing deletes rec's entry in recent and counts it out.
func deleteListing(tx *engine.Tx, rec *tasks.Record) error {
	if err := tx.Bucket(bucketRecent).Delete(listKey(rec)); err != nil {
		return err
	}
	return addCount(tx, rec.Owner, -1)
}

// addCount adds delta to owner's count; a count that reaches zero is
// deleted.
func addCount(tx *engine.Tx, owner string, delta int) error {
	b := tx.Bucket(bucketCounts)
	k := lengthPrefixed(owner, "")
	n := int64(countOf(b.Get(k))) + int64(delta)
	if n <= 0 {
		return b.Delete(k)
	}
	return b.Put(k, binary.BigEndian.AppendUint64(nil, uint64(n)))
}

func countOf(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// migrateListing builds recent and counts from the tasks of a schema 2
// store, in the transaction that opens it.
func migrateListing(tx *engine.Tx) error {
	return tx.Bucket(bucketTasks).ForEach(func(k, v []byte) error {
		r, err := decodeWhole(string(k), v)
		if err != nil {
			return err
		}
		if err := putListing(tx, nil, r); err != nil {
			return err
		}
		return addCount(tx, r.Owner, 1)
	})
}

// entry is a recent entry of the owner being listed.
type entry struct{ k, v []byte }

func (e entry) at(prefix int) uint64  { return binary.BigEndian.Uint64(e.k[prefix:]) }
func (e entry) id(prefix int) []byte  { return e.k[prefix+8:] }
func (e entry) statusTime() uint64    { return binary.BigEndian.Uint64(e.v) }
func (e entry) valid(prefix int) bool { return len(e.k) > prefix+8 && len(e.v) >= 9 }
func (e entry) stateAndContext() ([]byte, []byte, bool) {
	n, k := binary.Uvarint(e.v[8:])
	if k <= 0 || uint64(len(e.v)-8-k) < n {
		return nil, nil, false
	}
	rest := e.v[8+k:]
	return rest[:n], rest[n:], true
}

// matches reports whether e passes f; bound is f.StatusBound().
func matches(e entry, f *tasks.ListFilter, bound uint64) bool {
	if !f.Filtered() {
		return true
	}
	if !f.StatusAfter.IsZero() && e.statusTime() < bound {
		return false
	}
	st, cx, ok := e.stateAndContext()
	if !ok {
		return false
	}
	return (f.State == "" || string(st) == string(f.State)) && (f.ContextID == "" || string(cx) == f.ContextID)
}

// List implements tasks.Store. An unfiltered listing reads the page's
// entries and the owner's count; a filtered one also walks the owner's
// entries (keys and small values, no task) down to the StatusAfter bound,
// to count the matches.
func (s *Store) List(ctx context.Context, owner string, f tasks.ListFilter, after *tasks.Cursor, limit int, sc tasks.Scope) ([]*tasks.Record, int, *tasks.Cursor, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, nil, err
	}
	if limit <= 0 {
		limit = tasks.DefaultPageSize
	}
	prefix := lengthPrefixed(owner, "")
	p := len(prefix)
	filtered := f.Filtered()
	bound := f.StatusBound()
	var start []byte // entries at or above start are above the cursor
	if after != nil {
		start = listKeyAt(owner, after.At, after.TaskID)
	}
	var (
		ids   [][]byte
		ats   []uint64 // the ids' list times
		raws  []*rawTask
		total int
		more  bool
	)
	err := s.view(func(tx *engine.Tx) error {
		c := tx.Bucket(bucketRecent).Cursor()
		if !filtered {
			total = int(countOf(tx.Bucket(bucketCounts).Get(prefix)))
		}
		top := start
		if filtered || top == nil {
			top = prefixEnd(prefix)
		}
		for k, v := below(c, top); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			e := entry{k, v}
			if !e.valid(p) {
				return fmt.Errorf("listing entry %x is malformed", k)
			}
			if filtered && !f.StatusAfter.IsZero() && e.at(p) < bound {
				break // older entries have older status times too
			}
			if !matches(e, &f, bound) {
				continue
			}
			if filtered {
				total++
				if start != nil && bytes.Compare(k, start) >= 0 {
					continue // above the cursor: counted, not listed
				}
			}
			if len(ids) == limit {
				more = true
				if !filtered {
					break
				}
				continue
			}
			ids = append(ids, append([]byte(nil), e.id(p)...))
			ats = append(ats, e.at(p))
		}
		var err error
		raws, err = readListed(tx, owner, ids, sc)
		return err
	})
	if err != nil {
		return nil, 0, nil, err
	}
	recs, next, err := listed(ids, ats, raws, more)
	return recs, total, next, err
}

// listed decodes the tasks List read, raws of ids (whose list times are
// ats; raws ends early when the page did), and the cursor of the next
// page when more follow.
func listed(ids [][]byte, ats []uint64, raws []*rawTask, more bool) ([]*tasks.Record, *tasks.Cursor, error) {
	if len(raws) < len(ids) {
		ids, more = ids[:len(raws)], true // the page ended early, at its bytes
	}
	recs := make([]*tasks.Record, len(ids))
	for i, rt := range raws {
		r, _, err := rt.decode(string(ids[i]), false)
		if err != nil {
			return nil, nil, err
		}
		recs[i] = r
	}
	var next *tasks.Cursor
	if more && len(ids) > 0 {
		next = &tasks.Cursor{At: ats[len(ids)-1], TaskID: string(ids[len(ids)-1])}
	}
	return recs, next, nil
}

// readListed reads the listed tasks ids of owner, each with what sc asks
// for, until one would take those read past sc.ListBytes (the first is
// always read); an entry that points at a missing or foreign task is an
// error.
func readListed(tx *engine.Tx, owner string, ids [][]byte, sc tasks.Scope) ([]*rawTask, error) {
	raws := make([]*rawTask, len(ids))
	var used int64
	rd := newReader(tx)
	for i, id := range ids {
		rt, err := rd.read(owner, string(id), sc)
		switch {
		case errors.Is(err, tasks.ErrNotOwner):
			return nil, errors.New("listing entry points at a task of another owner")
		case errors.Is(err, tasks.ErrNotFound):
			return nil, fmt.Errorf("listing entry of owner %q points at missing task %q", owner, id)
		case err != nil:
			return nil, err
		}
		if used += int64(len(rt.head) + len(rt.doc)); i > 0 && sc.ListBytes > 0 && used > sc.ListBytes {
			return raws[:i], nil
		}
		raws[i] = rt
	}
	return raws, nil
}

// below positions c on the last key before end (nil: the last key).
func below(c *engine.Cursor, end []byte) ([]byte, []byte) {
	if end == nil {
		return c.Last()
	}
	if k, _ := c.Seek(end); k == nil {
		return c.Last()
	}
	return c.Prev()
}

// prefixEnd is the first key after every key that starts with p, or nil
// if there is none.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
