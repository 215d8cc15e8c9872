package boltstore

// The operator's view of a store: read-only queries behind the admin
// endpoints. An Inspector has no method that writes, and every method is
// one bbolt View transaction: it takes no write lock, refreshes no expiry
// and changes no byte of the file, so looking never counts as activity.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
	"github.com/a2ad/a2ad/tasks/record"
)

// The bounds of the Inspector's walks, so that no request reads a huge
// store whole.
const (
	// DefaultStateCountLimit is how many listing entries Overview walks to
	// count tasks by state (about 100 bytes each, no task decoded).
	DefaultStateCountLimit = 100_000
	// DefaultScanLimit is how many tasks one Tasks call examines. It is
	// above the largest page (1000), so an unfiltered page always fills.
	DefaultScanLimit = 10_000
)

// Inspector reads a store for the operator's view; see Store.Inspector.
// Its bounds are the tasks.Inspector's: StateCountLimit is the
// Overview's, ScanLimit the bound of what one Tasks call examines.
type Inspector struct {
	view func(func(*engine.Tx) error) error
	path string
	// StateCountLimit bounds the walk that counts tasks by state.
	StateCountLimit int
	// ScanLimit bounds the tasks one Tasks call examines.
	ScanLimit int
}

var _ tasks.Inspector = (*Inspector)(nil)

// Inspector returns a read-only view of s with the default bounds. It is
// safe for concurrent use, and stays usable as long as s is open.
func (s *Store) Inspector() *Inspector {
	return &Inspector{view: s.view, path: s.db.Bolt().Path(), StateCountLimit: DefaultStateCountLimit, ScanLimit: DefaultScanLimit}
}

// Inspect returns the read-only view of s with bounds b (tasks.Backend):
// Inspector with b's StateCount and Scan, a zero one the default.
func (s *Store) Inspect(b tasks.InspectBounds) tasks.Inspector {
	in := s.Inspector()
	b.Apply(&in.StateCountLimit, &in.ScanLimit)
	return in
}

// Overview counts the store's tasks, deliveries and bytes, from one
// consistent snapshot. Its cost is bounded: the per-state walk stops at
// StateCountLimit entries, and the other counts come from bucket page
// statistics (one read per page, not per key).
func (in *Inspector) Overview(ctx context.Context) (*tasks.Overview, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := &tasks.Overview{ByState: map[a2a.TaskState]int{}}
	err := in.view(func(tx *engine.Tx) error {
		o.DataBytes = tx.Bolt().Size()
		_ = tx.Bucket(bucketCounts).ForEach(func(_, v []byte) error {
			o.Tasks += int(countOf(v))
			return nil
		})
		o.NonTerminal = tx.Bucket(bucketActive).KeyN()
		o.OutboxDepth = tx.Bucket(bucketOutbox).KeyN()
		o.DeadLetters = tx.Bucket(bucketDead).KeyN()
		limit := in.StateCountLimit
		if limit <= 0 {
			limit = DefaultStateCountLimit
		}
		switch {
		case o.Tasks <= limit:
			return countAll(tx, o, limit)
		case o.NonTerminal <= limit:
			return countNonTerminal(tx, o)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inspect task store: %w", err)
	}
	fi, err := os.Stat(in.path)
	if err != nil {
		return nil, fmt.Errorf("inspect task store: %w", err)
	}
	o.FileBytes = fi.Size()
	return o, nil
}

// countAll counts every task by state from the listing index, whose
// values carry the state: no task is decoded. It stops at the limit even
// if the counts bucket said there were fewer, and then counts nothing.
func countAll(tx *engine.Tx, o *tasks.Overview, limit int) error {
	byState := map[a2a.TaskState]int{}
	n := 0
	c := tx.Bucket(bucketRecent).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if n++; n > limit {
			return nil
		}
		if len(v) < 9 {
			return fmt.Errorf("listing entry %x is malformed", k)
		}
		st, _, ok := entry{k, v}.stateAndContext()
		if !ok {
			return fmt.Errorf("listing entry %x is malformed", k)
		}
		byState[a2a.TaskState(st)]++
	}
	for _, st := range tasks.States {
		o.ByState[st] = 0
	}
	for st, n := range byState {
		o.ByState[st] = n
	}
	o.ByStateComplete = true
	return nil
}

// countNonTerminal counts the tasks of the active index by state.
func countNonTerminal(tx *engine.Tx, o *tasks.Overview) error {
	for _, st := range tasks.States {
		if !st.Terminal() {
			o.ByState[st] = 0
		}
	}
	tb := tx.Bucket(bucketTasks)
	return tx.Bucket(bucketActive).ForEach(func(k, _ []byte) error {
		h, err := decodeFilter(k, tb.Get(k))
		if err != nil {
			return err
		}
		o.ByState[h.Task.Status.State]++
		return nil
	})
}

// filterHead is the part of a head the filters read; decoding only it
// skips the input and the webhooks.
type filterHead struct {
	Task struct {
		Status struct {
			State a2a.TaskState `json:"state"`
		} `json:"status"`
	} `json:"task"`
	FunctionID string `json:"functionId"`
	owner      []byte
}

func decodeFilter(id, v []byte) (*filterHead, error) {
	if v == nil {
		return nil, fmt.Errorf("index entry points at missing task %q", id)
	}
	h, err := splitHead(v)
	if err != nil {
		return nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	f := filterHead{owner: h.owner}
	if err := json.Unmarshal(h.json, &f); err != nil {
		return nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	return &f, nil
}

// Tasks returns the heads (no history, no artifacts) of up to limit tasks
// that match q, with ids below after
// ("": from the highest). It walks an index where one serves: the
// caller's (owners) when q names an owner, else the non-terminal one
// (active) for a non-terminal state; otherwise the tasks themselves. The
// other filters are checked on each task, and at most ScanLimit tasks are
// examined per call.
func (in *Inspector) Tasks(ctx context.Context, q tasks.TaskQuery, after string, limit int) (*tasks.TaskPage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("list tasks: limit %d is not positive", limit)
	}
	scanLimit := in.ScanLimit
	if scanLimit <= 0 {
		scanLimit = DefaultScanLimit
	}
	page := &tasks.TaskPage{Tasks: make([]*tasks.Record, 0, min(limit, 64))}
	var ids, vals [][]byte
	err := in.view(func(tx *engine.Tx) error {
		tb := tx.Bucket(bucketTasks)
		c, prefix, k, v, direct := walkFor(tx, q, after)
		var last []byte
		for ; k != nil; k, v = c.Prev() {
			id := k
			if prefix != nil {
				if !bytes.HasPrefix(k, prefix) {
					break
				}
				id = k[len(prefix):]
			}
			if page.Scanned == scanLimit {
				page.Next = string(last)
				break
			}
			if !direct {
				v = tb.Get(id)
			}
			page.Scanned++
			last = id
			h, err := decodeFilter(id, v)
			if err != nil {
				return err
			}
			if (q.State != "" && h.Task.Status.State != q.State) ||
				(q.FunctionID != "" && h.FunctionID != q.FunctionID) ||
				(q.Owner != nil && string(h.owner) != *q.Owner) {
				continue
			}
			if len(ids) == limit {
				// One more match exists: the next page starts below the
				// last one returned.
				page.Next = string(ids[len(ids)-1])
				break
			}
			ids = append(ids, append([]byte(nil), id...))
			vals = append(vals, append([]byte(nil), v...))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	for i, v := range vals {
		r, _, err := decodeHead(string(ids[i]), v)
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		page.Tasks = append(page.Tasks, r)
	}
	return page, nil
}

// walkFor returns where Tasks walks for q, from below after: the owners
// index of one owner (prefix is that owner's), the non-terminal index, or
// the tasks bucket itself (direct); k and v are the first entry.
func walkFor(tx *engine.Tx, q tasks.TaskQuery, after string) (c *engine.Cursor, prefix, k, v []byte, direct bool) {
	switch {
	case q.Owner != nil:
		prefix = lengthPrefixed(*q.Owner, "")
		c = tx.Bucket(bucketOwners).Cursor()
		end := prefixEnd(prefix)
		if after != "" {
			end = lengthPrefixed(*q.Owner, after)
		}
		k, v = below(c, end)
	case q.State != "" && !q.State.Terminal():
		c = tx.Bucket(bucketActive).Cursor()
		k, v = startBelow(c, after)
	default:
		c, direct = tx.Bucket(bucketTasks).Cursor(), true
		k, v = startBelow(c, after)
	}
	return c, prefix, k, v, direct
}

// startBelow positions c on the last key below after, or on the last key
// when after is "" (no key is empty: bbolt refuses empty keys).
func startBelow(c *engine.Cursor, after string) ([]byte, []byte) {
	if after == "" {
		return c.Last()
	}
	return below(c, []byte(after))
}

// Task returns task id, whoever owns it, whole and with its input and
// message ids,
// and its whole event log in sequence order, from one snapshot. Returns
// tasks.ErrNotFound if no task has that id.
func (in *Inspector) Task(ctx context.Context, id string) (*tasks.Record, []tasks.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var (
		rt        *rawTask
		msgIDs    []string
		taskInput json.RawMessage
		evs       [][]byte
	)
	err := in.view(func(tx *engine.Tx) error {
		if id == "" {
			return nil
		}
		v := tx.Bucket(bucketTasks).Get([]byte(id))
		if v == nil {
			return nil
		}
		h, err := splitHead(v)
		if err != nil {
			return fmt.Errorf("read task %s: %w", id, err)
		}
		rt = copyTask(tx, nil, id, v, h, tasks.Whole)
		msgIDs, taskInput = messageIDs(tx, id), input(tx, id)
		prefix := bodyPrefix(id, kindEvent)
		c := tx.Bucket(bucketBody).Cursor()
		for k, ev := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, ev = c.Next() {
			evs = append(evs, append([]byte(nil), ev...))
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("inspect task %s: %w", id, err)
	}
	if rt == nil {
		return nil, nil, tasks.ErrNotFound
	}
	r, _, err := rt.decode(id, false)
	if err != nil {
		return nil, nil, err
	}
	r.MessageIDs, r.Input = msgIDs, taskInput
	out := make([]tasks.Event, len(evs))
	for i, b := range evs {
		if out[i], err = record.DecodeEvent(b, record.IDsOf(&r.Task)); err != nil {
			return nil, nil, fmt.Errorf("decode event %d of task %s: %w", i+1, id, err)
		}
	}
	return r, out, nil
}

// DeadLetters returns up to limit dead letters with ids above after,
// oldest first, and whether more follow. Tokens, credentials and bodies
// are never shown.
func (in *Inspector) DeadLetters(ctx context.Context, after uint64, limit int) ([]tasks.DeadLetter, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	out := make([]tasks.DeadLetter, 0, min(limit, 64))
	if after == math.MaxUint64 || limit <= 0 {
		return out, false, nil
	}
	more := false
	err := in.view(func(tx *engine.Tx) error {
		c := tx.Bucket(bucketDead).Cursor()
		for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, after+1)); k != nil; k, v = c.Next() {
			if len(out) == limit {
				more = true
				break
			}
			d, err := decodeDeadLetter(k, v)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("list dead letters: %w", err)
	}
	return out, more, nil
}
