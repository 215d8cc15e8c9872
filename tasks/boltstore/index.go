package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
	"github.com/a2ad/a2ad/tasks/record"
)

// The active index, events, expiry and the keys of the buckets.

// transition tells OnTransition of a committed change of state.
func (s *Store) transition(from, to a2a.TaskState) {
	if s.moved != nil && from != to {
		s.moved(from, to)
	}
}

// ActiveStates counts the tasks that are not terminal, by state. It reads
// the non-terminal index and decodes only each task's state; the counts
// of terminal tasks would take a read of every task, so it has none.
func (s *Store) ActiveStates(ctx context.Context) (map[a2a.TaskState]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make(map[a2a.TaskState]int)
	err := s.view(func(tx *engine.Tx) error {
		return forEachActive(tx, func(k, v []byte) error {
			h, err := splitHead(v)
			if err != nil {
				return fmt.Errorf("active task %s: %w", k, err)
			}
			var r struct {
				Task struct {
					Status struct {
						State a2a.TaskState `json:"state"`
					} `json:"status"`
				} `json:"task"`
			}
			if err := json.Unmarshal(h.json, &r); err != nil {
				return fmt.Errorf("active task %s: %w", k, err)
			}
			out[r.Task.Status.State]++
			return nil
		})
	})
	return out, err
}

// forEachActive calls fn with the id and the head of each task the
// active index names; a task it names without a record is an error.
func forEachActive(tx *engine.Tx, fn func(k, v []byte) error) error {
	tb := tx.Bucket(bucketTasks)
	return tx.Bucket(bucketActive).ForEach(func(k, _ []byte) error {
		v := tb.Get(k)
		if v == nil {
			return fmt.Errorf("active task %s: no record", k)
		}
		return fn(k, v)
	})
}

// Active implements tasks.Store.
func (s *Store) Active(ctx context.Context) ([]*tasks.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		heads  [][]byte
		ids    []string
		inputs []json.RawMessage
	)
	err := s.view(func(tx *engine.Tx) error {
		return forEachActive(tx, func(k, v []byte) error {
			ids = append(ids, string(k))
			heads = append(heads, append([]byte(nil), v...))
			inputs = append(inputs, input(tx, string(k)))
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	out := make([]*tasks.Record, len(heads))
	for i, v := range heads {
		r, _, err := decodeHead(ids[i], v)
		if err != nil {
			return nil, fmt.Errorf("active task %s: %w", ids[i], err)
		}
		r.Runner = s.lease.runner(ids[i])
		r.Input = inputs[i]
		out[i] = r
	}
	return out, nil
}

// Events implements tasks.Store.
func (s *Store) Events(ctx context.Context, id string, after uint64) ([]tasks.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []tasks.Event
	err := s.view(func(tx *engine.Tx) error {
		prefix := bodyPrefix(id, kindEvent)
		c := tx.Bucket(bucketBody).Cursor()
		// The messages that left out their context id get the task's,
		// from its head, read only if there are such (most events have
		// no message).
		var lacking []*a2a.Message
		for k, v := c.Seek(eventKey(id, after+1)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			e, err := record.DecodeEvent(v, record.IDs{Task: id})
			if err != nil {
				return fmt.Errorf("decode event %x: %w", k, err)
			}
			if e.Status != nil && e.Status.Message != nil && e.Status.Message.ContextID == "" {
				lacking = append(lacking, e.Status.Message)
			}
			out = append(out, e)
		}
		if len(lacking) == 0 {
			return nil
		}
		in, err := taskIDs(tx, id)
		for _, m := range lacking {
			tasks.Fill(m, in.Task, in.Context)
		}
		return err
	})
	return out, err
}

// taskIDs reads the ids of task id from its head (events of no task,
// which Check reports, have only the id).
func taskIDs(tx *engine.Tx, id string) (record.IDs, error) {
	v := tx.Bucket(bucketTasks).Get([]byte(id))
	if v == nil {
		return record.IDs{Task: id}, nil
	}
	h, err := splitHead(v)
	if err != nil {
		return record.IDs{}, fmt.Errorf("task %s: %w", id, err)
	}
	in, err := record.HeadIDs(h.json)
	if err != nil {
		return record.IDs{}, fmt.Errorf("task %s: %w", id, err)
	}
	return in, nil
}

// Expire implements tasks.Store. It writes nothing when nothing has
// expired.
func (s *Store) Expire(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	end := expiryKey(cutoff, "")
	var due bool
	if err := s.view(func(tx *engine.Tx) error {
		k, _ := tx.Bucket(bucketExpiry).Cursor().First()
		due = k != nil && bytes.Compare(k, end) < 0
		return nil
	}); err != nil || !due {
		return 0, err
	}
	var n int
	err := s.update(ctx, func(tx *engine.Tx) error {
		n = 0
		c := tx.Bucket(bucketExpiry).Cursor()
		var victims [][]byte
		for k, _ := c.First(); k != nil && bytes.Compare(k, end) < 0 && len(victims) < limit; k, _ = c.Next() {
			victims = append(victims, append([]byte(nil), k...))
		}
		for _, k := range victims {
			if err := deleteTask(tx, string(k[8:])); err != nil {
				return err
			}
			if err := tx.Bucket(bucketExpiry).Delete(k); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// deleteTask deletes task id with everything that is its: its body (its
// events among it) and the idempotency keys its message ids name, its
// pending push deliveries and its index entries, and counts out what it
// took (storedSize). The expiry entry is the caller's.
func deleteTask(tx *engine.Tx, id string) error {
	v := tx.Bucket(bucketTasks).Get([]byte(id))
	if v == nil {
		return nil
	}
	r, _, err := decodeHead(id, v)
	if err != nil {
		return err
	}
	size := int64(len(id)+len(v)) + indexBytes(r.Owner, id)
	body, err := deleteBody(tx, r.Owner, id)
	if err != nil {
		return err
	}
	size += body
	if err := tx.Bucket(bucketOwners).Delete(ownerKey(r.Owner, id)); err != nil {
		return err
	}
	if err := deleteListing(tx, r); err != nil {
		return err
	}
	if err := deleteDeliveries(tx, id); err != nil {
		return err
	}
	if err := tx.Bucket(bucketActive).Delete([]byte(id)); err != nil {
		return err
	}
	if err := addUsage(tx, r.Owner, -size); err != nil {
		return err
	}
	return tx.Bucket(bucketTasks).Delete([]byte(id))
}

// getRecord returns the whole task id, whoever owns it (its history and
// artifacts; not its input and message ids); ErrNotFound if there is
// none.
func getRecord(tx *engine.Tx, id string) (*tasks.Record, error) {
	v := tx.Bucket(bucketTasks).Get([]byte(id))
	if v == nil {
		return nil, tasks.ErrNotFound
	}
	h, err := splitHead(v)
	if err != nil {
		return nil, fmt.Errorf("read task %s: %w", id, err)
	}
	rt := copyTask(tx, nil, id, v, h, tasks.Whole)
	r, _, err := rt.decode(id, false)
	return r, err
}

func getIdem(tx *engine.Tx, owner, messageID string) (taskID string, hash [32]byte, ok bool) {
	v := tx.Bucket(bucketIdem).Get(idemKey(owner, messageID))
	if len(v) < 33 {
		return "", hash, false
	}
	copy(hash[:], v[len(v)-32:])
	return string(v[:len(v)-33]), hash, true
}

func putIdem(tx *engine.Tx, key tasks.IdemKey, taskID string) error {
	v := make([]byte, 0, len(taskID)+33)
	v = append(v, taskID...)
	v = append(v, 0)
	v = append(v, key.Hash[:]...)
	return tx.Bucket(bucketIdem).Put(idemKey(key.Owner, key.MessageID), v)
}

// lengthPrefixed keys keep one owner's keys from running into another's,
// whatever bytes the ids hold.
func lengthPrefixed(owner, rest string) []byte {
	k := binary.AppendUvarint(make([]byte, 0, 2+len(owner)+len(rest)), uint64(len(owner)))
	k = append(k, owner...)
	return append(k, rest...)
}

func idemKey(owner, messageID string) []byte { return lengthPrefixed(owner, messageID) }
func ownerKey(owner, taskID string) []byte   { return lengthPrefixed(owner, taskID) }

func eventKey(id string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(bodyPrefix(id, kindEvent), seq)
}

// expiryKey orders by time. Times before 1970 (a cutoff computed from a
// very long retention) clamp to zero rather than wrap to the far future.
func expiryKey(t time.Time, id string) []byte {
	ns := t.UnixNano()
	if ns < 0 || t.Year() < 1970 {
		ns = 0
	}
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(id)), uint64(ns))
	return append(k, id...)
}
