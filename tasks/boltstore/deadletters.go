package boltstore

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
)

// The operator's replay of dead letters (outbox.go keeps the buckets).

// RetryDeadLetter puts dead letter id back in the outbox: its webhook's
// delivery, due at now with no attempts, reporting the task as it stands
// when it is sent. If the webhook has a delivery waiting already (a
// transition after the letter died queued one), that one is made due at
// now with its attempts reset instead: it reports the task's latest state,
// which the letter's would too. Returns the letter, or
// tasks.ErrDeadLetterNotFound.
func (s *Store) RetryDeadLetter(ctx context.Context, id uint64, now time.Time) (tasks.DeadLetter, error) {
	var d tasks.DeadLetter
	err := s.update(ctx, func(tx *engine.Tx) error {
		var err error
		if d, err = takeDeadLetter(tx, id); err != nil {
			return err
		}
		if v := tx.Bucket(bucketPending).Get(pendingKey(d.TaskID, d.ConfigID)); len(v) == 16 {
			pid := binary.BigEndian.Uint64(v)
			e, err := getDelivery(tx, pid)
			if err != nil {
				return err
			}
			if e != nil {
				return reschedule(tx, pid, e, now)
			}
		}
		e := &outboxEntry{TaskID: d.TaskID, ConfigID: d.ConfigID, NextAt: now, CreatedAt: d.CreatedAt}
		if err := putDelivery(tx, id, e); err != nil {
			return err
		}
		// Seq 0: whatever the task reports when it is sent, Delivered
		// removes it, unless a transition comes meanwhile.
		if err := tx.Bucket(bucketPending).Put(pendingKey(d.TaskID, d.ConfigID), append(u64Key(id), make([]byte, 8)...)); err != nil {
			return err
		}
		return tx.Bucket(bucketDue).Put(dueKey(now, id), nil)
	})
	if err != nil {
		return tasks.DeadLetter{}, err
	}
	if fn := s.onOutbox.Load(); fn != nil {
		(*fn)()
	}
	return d, nil
}

// reschedule makes delivery id (entry e) due at now with no attempts,
// unless it is due earlier already.
func reschedule(tx *engine.Tx, id uint64, e *outboxEntry, now time.Time) error {
	db := tx.Bucket(bucketDue)
	if err := db.Delete(dueKey(e.NextAt, id)); err != nil {
		return err
	}
	if e.NextAt.After(now) {
		e.NextAt = now
	}
	e.Attempts, e.LastError = 0, ""
	if err := db.Put(dueKey(e.NextAt, id), nil); err != nil {
		return err
	}
	return putDelivery(tx, id, e)
}

// DropDeadLetter deletes dead letter id and returns it, or
// tasks.ErrDeadLetterNotFound.
func (s *Store) DropDeadLetter(ctx context.Context, id uint64) (tasks.DeadLetter, error) {
	var d tasks.DeadLetter
	err := s.update(ctx, func(tx *engine.Tx) error {
		var err error
		d, err = takeDeadLetter(tx, id)
		return err
	})
	return d, err
}

// takeDeadLetter deletes dead letter id and returns it.
func takeDeadLetter(tx *engine.Tx, id uint64) (tasks.DeadLetter, error) {
	b, k := tx.Bucket(bucketDead), u64Key(id)
	v := b.Get(k)
	if v == nil {
		return tasks.DeadLetter{}, tasks.ErrDeadLetterNotFound
	}
	d, err := decodeDeadLetter(k, v)
	if err != nil {
		return tasks.DeadLetter{}, err
	}
	return d, b.Delete(k)
}
