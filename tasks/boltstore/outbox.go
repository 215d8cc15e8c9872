package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/push"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
	"github.com/a2ad/a2ad/tasks/record"
)

// The push outbox. A delivery names a task and one of its webhooks, never
// a copy of the task: the body is built from the task as it stands when
// the delivery is sent (Request). Three buckets hold it, all written in
// the transaction of the transition a delivery reports:
//
//	outbox   id(8)                          → outboxEntry JSON (small)
//	pending  len(taskID) taskID configID    → id(8) seq(8)
//	due      nextAt(8) id(8)                → (empty)
//	dead     id(8)                          → deadLetter JSON
//
// pending holds the one undelivered delivery of each webhook of a task and
// the task's event sequence of the last transition it reports: a later
// transition for the same webhook raises seq instead of queuing another
// delivery (a webhook needs the latest state, not every one before it), so
// the outbox holds at most one delivery per (task, webhook). due orders the
// deliveries by when their next attempt is due, so that a poll reads only
// the deliveries it hands out. ids rise (the outbox bucket's sequence), and
// a dead letter keeps its delivery's id.
var (
	bucketOutbox  = []byte("outbox")
	bucketPending = []byte("pending")
	bucketDue     = []byte("due")
	bucketDead    = []byte("dead")
)

// outboxEntry is a delivery as the outbox keeps it.
type outboxEntry struct {
	TaskID    string    `json:"taskId"`
	ConfigID  string    `json:"configId"`
	Attempts  int       `json:"attempts"`
	NextAt    time.Time `json:"nextAt"`
	LastError string    `json:"lastError,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// deadLetter is a dead letter as the dead bucket keeps it. Dead letters
// of schema 3 and before also hold the delivery's body, token and
// credentials, which are never read.
type deadLetter struct {
	TaskID    string    `json:"taskId"`
	ConfigID  string    `json:"configId"`
	URL       string    `json:"url"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"lastError,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	DeadAt    time.Time `json:"deadAt,omitzero"`
}

// queuedDelivery is a delivery a transition queues, encoded outside the
// writer.
type queuedDelivery struct {
	pending []byte // its key in pending
	seq     uint64 // the task's event sequence it reports
	nextAt  time.Time
	entry   []byte // outboxEntry JSON, if the webhook has no delivery pending
}

// deliveries returns the deliveries a transition of rec from prev
// queues: one per webhook, but for a webhook whose id makes a pending key
// past bbolt's key limit. The decoders cap ids at a2a.MaxIDBytes and the
// store refuses such a webhook when it is set (TestPushConfigIDOverKeyLimitRefused);
// one in a task written before both checks (its record holds it; only a
// transition's pending key could not be written) gets no deliveries, so
// that the transitions of its task, which queue them, still write: a
// webhook must never strand its task in a state no transition can leave.
func deliveries(rec *tasks.Record, prev a2a.TaskState) ([]queuedDelivery, error) {
	if len(rec.PushConfigs) == 0 || !tasks.Notifies(prev, rec.State()) {
		return nil, nil
	}
	out := make([]queuedDelivery, 0, len(rec.PushConfigs))
	for _, c := range rec.PushConfigs {
		if len(pendingKey(rec.Task.ID, c.ID)) > bolt.MaxKeySize {
			continue
		}
		e, err := json.Marshal(outboxEntry{TaskID: rec.Task.ID, ConfigID: c.ID, NextAt: rec.UpdatedAt, CreatedAt: rec.UpdatedAt})
		if err != nil {
			return nil, err
		}
		out = append(out, queuedDelivery{pending: pendingKey(rec.Task.ID, c.ID), seq: rec.Seq, nextAt: rec.UpdatedAt, entry: e})
	}
	return out, nil
}

// putDeliveries queues ds, each coalesced into its webhook's pending
// delivery when it has one.
func putDeliveries(tx *engine.Tx, ds []queuedDelivery) error {
	if len(ds) == 0 {
		return nil
	}
	ob, pb, db := tx.Bucket(bucketOutbox), tx.Bucket(bucketPending), tx.Bucket(bucketDue)
	ob.FillPercent = appendFill
	for _, d := range ds {
		if v := pb.Get(d.pending); len(v) == 16 {
			// The pending delivery reports this transition too.
			if err := pb.Put(d.pending, binary.BigEndian.AppendUint64(bytes.Clone(v[:8]), d.seq)); err != nil {
				return err
			}
			continue
		}
		id, err := ob.NextSequence()
		if err != nil {
			return err
		}
		if err := ob.Put(u64Key(id), d.entry); err != nil {
			return err
		}
		if err := pb.Put(d.pending, binary.BigEndian.AppendUint64(u64Key(id), d.seq)); err != nil {
			return err
		}
		if err := db.Put(dueKey(d.nextAt, id), nil); err != nil {
			return err
		}
	}
	return nil
}

// pendingKey is the pending key of webhook configID of task taskID.
func pendingKey(taskID, configID string) []byte { return lengthPrefixed(taskID, configID) }

// dueKey is the due key of delivery id at t. Times before 1970 clamp to
// zero, as in expiry.
func dueKey(t time.Time, id uint64) []byte {
	return binary.BigEndian.AppendUint64(expiryKey(t, ""), id)
}

func u64Key(n uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 16), n) }

// getDelivery reads and decodes delivery id; nil if there is none.
func getDelivery(tx *engine.Tx, id uint64) (*outboxEntry, error) {
	v := tx.Bucket(bucketOutbox).Get(u64Key(id))
	if v == nil {
		return nil, nil
	}
	var e outboxEntry
	if err := json.Unmarshal(v, &e); err != nil {
		return nil, fmt.Errorf("decode delivery %d: %w", id, err)
	}
	return &e, nil
}

// removeDelivery deletes delivery id (entry e) and its index entries.
func removeDelivery(tx *engine.Tx, id uint64, e *outboxEntry) error {
	if err := tx.Bucket(bucketOutbox).Delete(u64Key(id)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketDue).Delete(dueKey(e.NextAt, id)); err != nil {
		return err
	}
	pb, pk := tx.Bucket(bucketPending), pendingKey(e.TaskID, e.ConfigID)
	if v := pb.Get(pk); len(v) == 16 && binary.BigEndian.Uint64(v) == id {
		return pb.Delete(pk)
	}
	return nil
}

// deleteDeliveries deletes the pending deliveries of task id, which is
// being deleted.
func deleteDeliveries(tx *engine.Tx, id string) error {
	prefix := lengthPrefixed(id, "")
	c := tx.Bucket(bucketPending).Cursor()
	var ids []uint64
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(v) == 16 {
			ids = append(ids, binary.BigEndian.Uint64(v))
		}
	}
	for _, d := range ids {
		e, err := getDelivery(tx, d)
		if err != nil {
			return err
		}
		if e != nil && e.TaskID == id {
			if err := removeDelivery(tx, d, e); err != nil {
				return err
			}
		}
	}
	// A pending entry without its delivery (which check reports) goes too.
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

var _ push.Outbox = (*Store)(nil)

// Due implements push.Outbox. It reads the due index from its start and
// stops at the first delivery not yet due or at limit: a poll decodes
// only the (small) entries it returns, whatever the outbox holds.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]push.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []push.Delivery
	end := expiryKey(now, "")
	err := s.view(func(tx *engine.Tx) error {
		c := tx.Bucket(bucketDue).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit && bytes.Compare(k[:min(8, len(k))], end) <= 0; k, _ = c.Next() {
			if len(k) != 16 {
				return fmt.Errorf("due entry %x: key does not parse", k)
			}
			id := binary.BigEndian.Uint64(k[8:])
			e, err := getDelivery(tx, id)
			if err != nil {
				return err
			}
			if e == nil {
				continue // check reports it; it holds nothing to send
			}
			out = append(out, push.Delivery{
				ID: id, TaskID: e.TaskID, ConfigID: e.ConfigID,
				Attempts: e.Attempts, NextAt: e.NextAt, LastError: e.LastError,
			})
		}
		return nil
	})
	return out, err
}

// Request implements push.Outbox: d reports its task as it stands now, to
// the webhook as it was set.
func (s *Store) Request(ctx context.Context, d *push.Delivery) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var rec *tasks.Record
	err := s.view(func(tx *engine.Tx) error {
		var err error
		rec, err = getRecord(tx, d.TaskID)
		return err
	})
	if errors.Is(err, tasks.ErrNotFound) {
		return s.drop(ctx, d.ID)
	}
	if err != nil {
		return err
	}
	if d.Fill(rec.PushConfigs, &rec.Task, rec.Seq) {
		return nil
	}
	return s.drop(ctx, d.ID) // the webhook is gone
}

// drop removes delivery id, whose task or webhook is gone, and returns
// push.ErrGone.
func (s *Store) drop(ctx context.Context, id uint64) error {
	err := s.update(ctx, func(tx *engine.Tx) error {
		e, err := getDelivery(tx, id)
		if e == nil || err != nil {
			return err
		}
		return removeDelivery(tx, id, e)
	})
	if err != nil {
		return err
	}
	return push.ErrGone
}

// Delivered implements push.Outbox. When a transition newer than seq
// came meanwhile, the delivery stays, due at once with its attempts
// reset, to report it.
func (s *Store) Delivered(ctx context.Context, id, seq uint64) error {
	return s.update(ctx, func(tx *engine.Tx) error {
		e, err := getDelivery(tx, id)
		if e == nil || err != nil {
			return err
		}
		v := tx.Bucket(bucketPending).Get(pendingKey(e.TaskID, e.ConfigID))
		if len(v) == 16 && binary.BigEndian.Uint64(v) == id && binary.BigEndian.Uint64(v[8:]) > seq {
			// Still due (its NextAt has passed): only the count restarts.
			e.Attempts, e.LastError = 0, ""
			return putDelivery(tx, id, e)
		}
		return removeDelivery(tx, id, e)
	})
}

// Retry implements push.Outbox.
func (s *Store) Retry(ctx context.Context, id uint64, attempts int, next time.Time, lastErr string) error {
	return s.update(ctx, func(tx *engine.Tx) error {
		e, err := getDelivery(tx, id)
		if e == nil || err != nil {
			return err
		}
		db := tx.Bucket(bucketDue)
		if err := db.Delete(dueKey(e.NextAt, id)); err != nil {
			return err
		}
		e.Attempts, e.NextAt, e.LastError = attempts, next, lastErr
		if err := db.Put(dueKey(e.NextAt, id), nil); err != nil {
			return err
		}
		return putDelivery(tx, id, e)
	})
}

// Dead implements push.Outbox. A transition that came during the last
// attempt goes with the delivery: the next one queues a new delivery.
func (s *Store) Dead(ctx context.Context, id uint64, url string, attempts int, lastErr string) error {
	return s.update(ctx, func(tx *engine.Tx) error {
		e, err := getDelivery(tx, id)
		if e == nil || err != nil {
			return err
		}
		if err := removeDelivery(tx, id, e); err != nil {
			return err
		}
		b, err := json.Marshal(deadLetter{
			TaskID: e.TaskID, ConfigID: e.ConfigID, URL: url, Attempts: attempts, LastError: lastErr,
			CreatedAt: e.CreatedAt, DeadAt: time.Now(),
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketDead).Put(u64Key(id), b)
	})
}

func putDelivery(tx *engine.Tx, id uint64, e *outboxEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketOutbox).Put(u64Key(id), b)
}

// migrateOutbox rewrites a schema 3 outbox, whose deliveries each held a
// copy of their task, as schema 4 keeps it: one delivery per (task,
// webhook), the oldest, with its attempts and schedule, reporting the
// task's latest state; deliveries of tasks that are gone are dropped. It
// runs in the transaction that opens the store.
func migrateOutbox(tx *engine.Tx) error {
	type kept struct {
		id uint64
		e  outboxEntry
	}
	var (
		keep []kept
		seen = map[[2]string]bool{}
		tb   = tx.Bucket(bucketTasks)
	)
	ob := tx.Bucket(bucketOutbox)
	seq := ob.Sequence()
	err := ob.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("delivery %x: key does not parse", k)
		}
		id := binary.BigEndian.Uint64(k)
		// Most copies are dropped: read their ids without the task copy
		// that follows them.
		taskID, configID, err := deliveryPair(v)
		if err != nil {
			return fmt.Errorf("decode delivery %d: %w", id, err)
		}
		pair := [2]string{taskID, configID}
		if seen[pair] || tb.Get([]byte(taskID)) == nil {
			return nil
		}
		seen[pair] = true
		var e outboxEntry // the body, token and URL are not kept
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("decode delivery %d: %w", id, err)
		}
		keep = append(keep, kept{id, e})
		return nil
	})
	if err != nil {
		return err
	}
	if err := tx.DeleteBucket(bucketOutbox); err != nil {
		return err
	}
	if ob, err = tx.CreateBucket(bucketOutbox); err != nil {
		return err
	}
	if err := ob.SetSequence(seq); err != nil {
		return err
	}
	for _, d := range keep {
		if err := putDelivery(tx, d.id, &d.e); err != nil {
			return err
		}
		// The task's sequence: the delivery reports its latest state.
		v := tb.Get([]byte(d.e.TaskID))
		if len(v) < 8 {
			return fmt.Errorf("task %s: record of %d bytes", d.e.TaskID, len(v))
		}
		if err := tx.Bucket(bucketPending).Put(pendingKey(d.e.TaskID, d.e.ConfigID), append(u64Key(d.id), v[:8]...)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketDue).Put(dueKey(d.e.NextAt, d.id), nil); err != nil {
			return err
		}
	}
	return nil
}

// deliveryPair reads the task and webhook ids of a schema 3 delivery. They
// come first in it, so the task copy after them is not scanned.
func deliveryPair(v []byte) (taskID, configID string, err error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", "", fmt.Errorf("not a JSON object")
	}
	var haveTask, haveConfig bool
	for dec.More() && !(haveTask && haveConfig) {
		tok, err := dec.Token()
		if err != nil {
			return "", "", err
		}
		switch tok {
		case "taskId":
			err, haveTask = dec.Decode(&taskID), true
		case "configId":
			err, haveConfig = dec.Decode(&configID), true
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return "", "", err
		}
	}
	return taskID, configID, nil
}

// decodeDeadLetter decodes dead letter k, v.
func decodeDeadLetter(k, v []byte) (tasks.DeadLetter, error) {
	var e deadLetter
	if len(k) != 8 {
		return tasks.DeadLetter{}, fmt.Errorf("dead letter %x: key does not parse", k)
	}
	if err := json.Unmarshal(v, &e); err != nil {
		return tasks.DeadLetter{}, fmt.Errorf("decode dead letter %x: %w", k, err)
	}
	return tasks.DeadLetter{
		ID: binary.BigEndian.Uint64(k), TaskID: e.TaskID, ConfigID: e.ConfigID, URL: e.URL,
		Attempts: e.Attempts, LastError: e.LastError, CreatedAt: e.CreatedAt, DeadAt: e.DeadAt,
	}, nil
}

// DeadLetters returns up to limit dead letters after the one with id
// after, oldest first. It is no part of tasks.Backend, whose dead letters
// are listed by the Inspector (Store.Inspect); the store's own tests read
// them here.
func (s *Store) DeadLetters(ctx context.Context, after uint64, limit int) ([]tasks.DeadLetter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]tasks.DeadLetter, 0)
	if after == math.MaxUint64 {
		return out, nil // nothing comes after the last possible id
	}
	err := s.view(func(tx *engine.Tx) error {
		c := tx.Bucket(bucketDead).Cursor()
		for k, v := c.Seek(u64Key(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			d, err := decodeDeadLetter(k, v)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// OutboxDepth counts the deliveries waiting: at most one per webhook of a
// task.
func (s *Store) OutboxDepth(ctx context.Context) (int, error) {
	return s.keyCount(ctx, bucketOutbox)
}

// DeadLetterCount counts the dead letters.
func (s *Store) DeadLetterCount(ctx context.Context) (int, error) {
	return s.keyCount(ctx, bucketDead)
}

// keyCount counts the keys of bucket: it walks the bucket's pages, not
// its values.
func (s *Store) keyCount(ctx context.Context, bucket []byte) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int
	err := s.view(func(tx *engine.Tx) error {
		n = tx.Bucket(bucket).KeyN()
		return nil
	})
	return n, err
}

// PushConfigs implements tasks.Store. The write checks that the head is
// byte for byte what was read, so concurrent changes never lose one.
func (s *Store) PushConfigs(ctx context.Context, owner, id string, fn func([]a2a.PushConfig) ([]a2a.PushConfig, error)) ([]a2a.PushConfig, error) {
	for {
		rt, err := s.read(ctx, owner, id, tasks.Head)
		if err != nil {
			return nil, err
		}
		r, arts, err := decodeHead(id, rt.head)
		if err != nil {
			return nil, err
		}
		cfgs, err := fn(append([]a2a.PushConfig(nil), r.PushConfigs...))
		if err != nil {
			return nil, err
		}
		old := r.PushConfigs
		r.PushConfigs = cfgs
		if err := checkConfigIDs(r, old); err != nil {
			return nil, err
		}
		v, err := appendHeadValue(make([]byte, 0, len(rt.head)+256), r, uint64(r.HistoryLen), arts, record.IDsOf(&r.Task))
		if err != nil {
			return nil, fmt.Errorf("encode task: %w", err)
		}
		err = s.update(ctx, func(tx *engine.Tx) error {
			if !bytes.Equal(tx.Bucket(bucketTasks).Get([]byte(id)), rt.head) {
				return errStale
			}
			if err := addUsage(tx, owner, int64(len(v)-len(rt.head))); err != nil {
				return err
			}
			return tx.Bucket(bucketTasks).Put([]byte(id), v)
		})
		if errors.Is(err, errStale) {
			continue
		}
		return cfgs, err
	}
}
