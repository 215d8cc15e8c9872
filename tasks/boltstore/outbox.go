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
)

// The push outbox: deliveries keyed by a rising sequence (so older ones
// come first), queued in the same transaction as the transition they
// report, and dead letters keyed the same way.
var (
	bucketOutbox = []byte("outbox")
	bucketDead   = []byte("dead")
)

// outboxEntry is a delivery as the outbox keeps it.
type outboxEntry struct {
	TaskID   string          `json:"taskId"`
	ConfigID string          `json:"configId"`
	URL      string          `json:"url"`
	Token    string          `json:"token,omitempty"`
	Auth     *a2a.PushAuth   `json:"auth,omitempty"`
	Body     json.RawMessage `json:"body"`
	// ContentType is "" for application/json.
	ContentType string    `json:"contentType,omitempty"`
	Attempts    int       `json:"attempts"`
	NextAt      time.Time `json:"nextAt"`
	LastError   string    `json:"lastError,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	DeadAt      time.Time `json:"deadAt,omitzero"`
}

// deliveries encodes, outside the writer, the deliveries a transition of
// rec from prev queues: one per webhook, each carrying the task.
func deliveries(rec *tasks.Record, prev a2a.TaskState) ([][]byte, error) {
	if len(rec.PushConfigs) == 0 || !tasks.Notifies(prev, rec.State()) {
		return nil, nil
	}
	// Each config hears in the version it was set with: a 0.3 Task, or
	// a 1.0 StreamResponse {"task": ...} as application/a2a+json.
	var body03, body10 []byte
	out := make([][]byte, 0, len(rec.PushConfigs))
	for _, c := range rec.PushConfigs {
		e := outboxEntry{
			TaskID: rec.Task.ID, ConfigID: c.ID, URL: c.URL, Token: c.Token, Auth: c.Authentication,
			NextAt: rec.UpdatedAt, CreatedAt: rec.UpdatedAt,
		}
		var err error
		switch {
		case c.Wire == a2a.V10:
			if body10 == nil {
				body10, err = (&a2a.StreamResponseV1{Task: &rec.Task}).AppendJSONV1(nil)
			}
			e.Body, e.ContentType = body10, "application/a2a+json"
		default:
			if body03 == nil {
				body03, err = rec.Task.AppendJSON(nil)
			}
			e.Body = body03
		}
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func putDeliveries(tx *bolt.Tx, ds [][]byte) error {
	b := tx.Bucket(bucketOutbox)
	b.FillPercent = appendFill
	for _, d := range ds {
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		if err := b.Put(binary.BigEndian.AppendUint64(nil, seq), d); err != nil {
			return err
		}
	}
	return nil
}

var _ push.Outbox = (*Store)(nil)

// Due implements push.Outbox.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]push.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []push.Delivery
	err := s.db.View(func(tx *bolt.Tx) error {
		seen := map[[2]string]bool{}
		return tx.Bucket(bucketOutbox).ForEach(func(k, v []byte) error {
			if len(out) >= limit {
				return errStop
			}
			var e outboxEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode delivery %x: %w", k, err)
			}
			pair := [2]string{e.TaskID, e.ConfigID}
			if seen[pair] {
				return nil // a later delivery of the same webhook waits for the first
			}
			seen[pair] = true
			if e.NextAt.After(now) {
				return nil
			}
			out = append(out, e.delivery(binary.BigEndian.Uint64(k)))
			return nil
		})
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return out, err
}

var errStop = errors.New("stop")

func (e *outboxEntry) delivery(id uint64) push.Delivery {
	d := push.Delivery{
		ID: id, TaskID: e.TaskID, ConfigID: e.ConfigID, URL: e.URL, Token: e.Token,
		Body: e.Body, ContentType: e.ContentType, Attempts: e.Attempts, NextAt: e.NextAt, LastError: e.LastError,
	}
	if e.Auth != nil {
		d.Auth = &push.Auth{Schemes: e.Auth.Schemes, Credentials: e.Auth.Credentials}
	}
	return d
}

// Delivered implements push.Outbox.
func (s *Store) Delivered(ctx context.Context, id uint64) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOutbox).Delete(binary.BigEndian.AppendUint64(nil, id))
	})
}

// Retry implements push.Outbox.
func (s *Store) Retry(ctx context.Context, id uint64, attempts int, next time.Time, lastErr string) error {
	return s.rewrite(ctx, id, func(tx *bolt.Tx, key []byte, e *outboxEntry) error {
		e.Attempts, e.NextAt, e.LastError = attempts, next, lastErr
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketOutbox).Put(key, b)
	})
}

// Dead implements push.Outbox.
func (s *Store) Dead(ctx context.Context, id uint64, attempts int, lastErr string) error {
	return s.rewrite(ctx, id, func(tx *bolt.Tx, key []byte, e *outboxEntry) error {
		e.Attempts, e.LastError, e.DeadAt = attempts, lastErr, time.Now()
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketOutbox).Delete(key); err != nil {
			return err
		}
		return tx.Bucket(bucketDead).Put(key, b)
	})
}

// rewrite applies fn to the outbox entry id; a missing one is not an
// error (it was delivered or dead-lettered already).
func (s *Store) rewrite(ctx context.Context, id uint64, fn func(*bolt.Tx, []byte, *outboxEntry) error) error {
	key := binary.BigEndian.AppendUint64(nil, id)
	return s.update(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketOutbox).Get(key)
		if v == nil {
			return nil
		}
		var e outboxEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("decode delivery %d: %w", id, err)
		}
		return fn(tx, key, &e)
	})
}

// DeadLetter is a delivery that was given up on, as operators see it:
// never its token, credentials or body.
type DeadLetter struct {
	ID        uint64    `json:"id"`
	TaskID    string    `json:"taskId"`
	ConfigID  string    `json:"configId"`
	URL       string    `json:"url"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"lastError"`
	CreatedAt time.Time `json:"createdAt"`
	DeadAt    time.Time `json:"deadAt"`
}

// DeadLetters returns up to limit dead letters after the one with id
// after, oldest first.
func (s *Store) DeadLetters(ctx context.Context, after uint64, limit int) ([]DeadLetter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]DeadLetter, 0)
	if after == math.MaxUint64 {
		return out, nil // nothing comes after the last possible id
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDead).Cursor()
		start := binary.BigEndian.AppendUint64(nil, after+1)
		for k, v := c.Seek(start); k != nil && len(out) < limit; k, v = c.Next() {
			var e outboxEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode dead letter %x: %w", k, err)
			}
			out = append(out, DeadLetter{
				ID: binary.BigEndian.Uint64(k), TaskID: e.TaskID, ConfigID: e.ConfigID, URL: e.URL,
				Attempts: e.Attempts, LastError: e.LastError, CreatedAt: e.CreatedAt, DeadAt: e.DeadAt,
			})
		}
		return nil
	})
	return out, err
}

// OutboxDepth counts the deliveries waiting.
func (s *Store) OutboxDepth(ctx context.Context) (int, error) {
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketOutbox).Stats().KeyN
		return nil
	})
	return n, err
}

// DeadLetterCount counts the dead letters. Like OutboxDepth it walks the
// bucket's pages, not its values.
func (s *Store) DeadLetterCount(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketDead).Stats().KeyN
		return nil
	})
	return n, err
}

// PushConfigs implements tasks.Store. The write checks that the record is
// byte for byte what was read, so concurrent changes never lose one.
func (s *Store) PushConfigs(ctx context.Context, owner, id string, fn func([]a2a.PushConfig) ([]a2a.PushConfig, error)) ([]a2a.PushConfig, error) {
	for {
		var read []byte
		if err := s.db.View(func(tx *bolt.Tx) error {
			read = append(read, tx.Bucket(bucketTasks).Get([]byte(id))...)
			return nil
		}); err != nil {
			return nil, err
		}
		if read == nil {
			return nil, tasks.ErrNotFound
		}
		r, err := decodeRecord(id, read)
		if err != nil {
			return nil, err
		}
		if r.Owner != owner {
			return nil, tasks.ErrNotOwner
		}
		cfgs, err := fn(append([]a2a.PushConfig(nil), r.PushConfigs...))
		if err != nil {
			return nil, err
		}
		r.PushConfigs = cfgs
		e, err := encode(r, nil)
		if err != nil {
			return nil, err
		}
		err = s.update(ctx, func(tx *bolt.Tx) error {
			if !bytes.Equal(tx.Bucket(bucketTasks).Get([]byte(id)), read) {
				return errStale
			}
			return tx.Bucket(bucketTasks).Put([]byte(id), e.value)
		})
		if errors.Is(err, errStale) {
			continue
		}
		return cfgs, err
	}
}
