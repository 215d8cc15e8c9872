package pgstore

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/push"
	"github.com/a2ad/a2ad/tasks"
)

// The push outbox: a delivery names a task and one of its webhooks,
// never a copy of the task; its body is built from the task as it stands
// when it is sent (Request). A transition queues its deliveries in its
// own transaction (change.queueRows), at most one per (task, webhook):
// a later transition raises the seq of the one waiting.
//
// Due claims what it hands out for this store (claimed_by) until
// ClaimTTL has passed, with FOR UPDATE SKIP LOCKED: stores sharing the
// database never hand out one delivery at once, while a store's own Due
// hands out its claims again (its sender keeps track of what it has in
// flight) and renews them, as Renew does. A claim of a store that stopped
// without handing it back lapses after ClaimTTL.

var (
	_ push.Outbox = (*Store)(nil)
	_ push.Claims = (*Store)(nil)
)

// dbNanos is the database's clock in Unix nanoseconds, as claimed_until
// holds it: claims are timed by one clock, as leases are, so that
// replicas whose hosts' clocks differ by more than a short ClaimTTL
// (--lease-ttl) never both hold one delivery.
const dbNanos = `(extract(epoch FROM statement_timestamp()) * 1000000000)::bigint`

// dueQuery claims for $2, for $3 nanoseconds, up to $4 deliveries due at
// $1 (oldest first, from outbox_due) that no other store holds, and
// returns them. (The ids are an array, not a join, so that the planner
// looks each up by its key whatever it thinks of the table's size.)
const dueQuery = `UPDATE outbox SET claimed_by = $2, claimed_until = ` + dbNanos + ` + $3
	WHERE id = ANY(ARRAY(SELECT id FROM outbox
		WHERE next_at <= $1 AND (claimed_by IS NULL OR claimed_by = $2 OR claimed_until < ` + dbNanos + `)
		ORDER BY next_at, id LIMIT $4 FOR UPDATE SKIP LOCKED))
	RETURNING id, task_id, config_id, attempts, next_at, last_error`

// Due implements push.Outbox, from outbox_due.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]push.Delivery, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	at := nanos(now)
	var out []push.Delivery
	err := s.write(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, dueQuery,
			at, s.instance, s.opts.ClaimTTL.Nanoseconds(), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				d                        push.Delivery
				id, next                 int64
				taskID, configID, errMsg []byte
			)
			if err := rows.Scan(&id, &taskID, &configID, &d.Attempts, &next, &errMsg); err != nil {
				return err
			}
			d.ID, d.TaskID, d.ConfigID, d.NextAt, d.LastError = uint64(id), string(taskID), string(configID), time.Unix(0, next), string(errMsg)
			out = append(out, d)
		}
		return rows.Err()
	})
	slices.SortFunc(out, func(a, b push.Delivery) int {
		if c := a.NextAt.Compare(b.NextAt); c != 0 {
			return c
		}
		return compareU64(a.ID, b.ID)
	})
	return out, err
}

// Renew implements push.Claims: this store's claims on the deliveries
// ids last ClaimTTL from now, by the database's clock.
func (s *Store) Renew(ctx context.Context, ids []uint64) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	keys := make([]int64, 0, len(ids))
	for _, id := range ids {
		if id <= math.MaxInt64 { // ids are bigints
			keys = append(keys, int64(id))
		}
	}
	return s.exec(ctx, `UPDATE outbox SET claimed_until = `+dbNanos+` + $3 WHERE id = ANY($1) AND claimed_by = $2`,
		keys, s.instance, s.opts.ClaimTTL.Nanoseconds())
}

func compareU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Request implements push.Outbox: d reports its task as it stands now, to
// the webhook as it was set.
func (s *Store) Request(ctx context.Context, d *push.Delivery) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	var q query
	rows, err := s.pool.Query(ctx, selectTasks(columns(&q, tasks.Whole, "", false), taskWhere(&q, d.TaskID), ""), q.args...)
	if err != nil {
		return s.failed(err)
	}
	rs, err := scanRows(rows, false)
	if err != nil {
		return s.failed(err)
	}
	if len(rs) > 0 {
		rec, err := rs[0].record()
		if err != nil {
			return err
		}
		if d.Fill(rec.PushConfigs, &rec.Task, rec.Seq) {
			return nil
		}
	}
	return s.drop(ctx, d.ID) // the task or its webhook is gone
}

// drop removes delivery id, whose task or webhook is gone, and returns
// push.ErrGone.
func (s *Store) drop(ctx context.Context, id uint64) error {
	if err := s.exec(ctx, `DELETE FROM outbox WHERE id = $1`, int64(id)); err != nil {
		return err
	}
	return push.ErrGone
}

// exec runs one statement as a write.
func (s *Store) exec(ctx context.Context, sql string, args ...any) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, sql, args...)
		return err
	})
}

// Delivered implements push.Outbox. When a transition newer than seq
// came meanwhile, the delivery stays, due at once with its attempts
// reset, to report it.
func (s *Store) Delivered(ctx context.Context, id, seq uint64) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`DELETE FROM outbox WHERE id = $1 AND seq <= $2`, int64(id), int64(min(seq, math.MaxInt64)))
		b.Queue(`UPDATE outbox SET attempts = 0, last_error = '', claimed_by = NULL WHERE id = $1 AND seq > $2`,
			int64(id), int64(min(seq, math.MaxInt64)))
		return sendBatch(ctx, tx, b)
	})
}

// Retry implements push.Outbox. The delivery is no longer claimed: the
// next attempt may be any store's.
func (s *Store) Retry(ctx context.Context, id uint64, attempts int, next time.Time, lastErr string) error {
	return s.exec(ctx, `UPDATE outbox SET attempts = $2, next_at = $3, last_error = $4, claimed_by = NULL WHERE id = $1`,
		int64(id), attempts, nanos(next), []byte(lastErr))
}

// Dead implements push.Outbox. A transition that came during the last
// attempt goes with the delivery: the next one queues a new delivery.
func (s *Store) Dead(ctx context.Context, id uint64, url string, attempts int, lastErr string) error {
	return s.exec(ctx, `WITH d AS (DELETE FROM outbox WHERE id = $1 RETURNING id, task_id, config_id, created_at)
		INSERT INTO dead_letters (id, task_id, config_id, url, attempts, last_error, created_at, dead_at)
		SELECT id, task_id, config_id, $2, $3, $4, created_at, $5 FROM d`,
		int64(id), []byte(url), attempts, []byte(lastErr), s.clock().UnixNano())
}

// DeadLetters returns up to limit dead letters with ids above after,
// oldest first (never nil).
func (s *Store) DeadLetters(ctx context.Context, after uint64, limit int) ([]tasks.DeadLetter, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	out := make([]tasks.DeadLetter, 0)
	if after >= math.MaxInt64 || limit <= 0 {
		return out, nil // ids are bigints
	}
	rows, err := s.pool.Query(ctx, `SELECT id, task_id, config_id, url, attempts, last_error, created_at, dead_at
		FROM dead_letters WHERE id > $1 ORDER BY id LIMIT $2`, int64(after), limit)
	if err != nil {
		return nil, s.failed(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			d                                 tasks.DeadLetter
			id, created, dead                 int64
			taskID, configID, url, lastErrMsg []byte
		)
		if err := rows.Scan(&id, &taskID, &configID, &url, &d.Attempts, &lastErrMsg, &created, &dead); err != nil {
			return nil, s.failed(err)
		}
		d.ID, d.TaskID, d.ConfigID, d.URL, d.LastError = uint64(id), string(taskID), string(configID), string(url), string(lastErrMsg)
		d.CreatedAt, d.DeadAt = time.Unix(0, created), time.Unix(0, dead)
		out = append(out, d)
	}
	return out, s.failed(rows.Err())
}

// count runs a statement that counts.
func (s *Store) count(ctx context.Context, sql string) (int, error) {
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	var n int
	if err := s.pool.QueryRow(ctx, sql).Scan(&n); err != nil {
		return 0, s.failed(err)
	}
	return n, nil
}

// OutboxDepth counts the deliveries waiting: at most one per webhook of
// a task.
func (s *Store) OutboxDepth(ctx context.Context) (int, error) {
	return s.count(ctx, `SELECT count(*) FROM outbox`)
}

// DeadLetterCount counts the dead letters.
func (s *Store) DeadLetterCount(ctx context.Context) (int, error) {
	return s.count(ctx, `SELECT count(*) FROM dead_letters`)
}

// RetryDeadLetter puts dead letter id back in the outbox, as boltstore's
// does: its webhook's delivery, due at now with no attempts, or, if the
// webhook has one waiting, that one due at now (unless earlier) with its
// attempts reset. A claim on the waiting one stays: the replica sending it
// ends its attempt. Returns the letter, or tasks.ErrDeadLetterNotFound.
func (s *Store) RetryDeadLetter(ctx context.Context, id uint64, now time.Time) (tasks.DeadLetter, error) {
	var d tasks.DeadLetter
	err := s.write(ctx, func(tx pgx.Tx) error {
		var err error
		if d, err = takeDeadLetter(ctx, tx, id); err != nil {
			return err
		}
		// seq 0: whatever the task reports when it is sent, Delivered
		// removes it, unless a transition comes meanwhile.
		_, err = tx.Exec(ctx, `INSERT INTO outbox (id, task_id, config_id, seq, attempts, next_at, last_error, created_at, claimed_until)
			VALUES ($1, $2, $3, 0, 0, $4, '', $5, 0)
			ON CONFLICT (task_id, config_id) DO UPDATE SET attempts = 0, last_error = '', next_at = LEAST(outbox.next_at, $4)`,
			int64(d.ID), []byte(d.TaskID), []byte(d.ConfigID), nanos(now), nanos(d.CreatedAt))
		return err
	})
	if err != nil {
		return tasks.DeadLetter{}, s.failed(err)
	}
	s.queued(1)
	return d, nil
}

// DropDeadLetter deletes dead letter id and returns it, or
// tasks.ErrDeadLetterNotFound.
func (s *Store) DropDeadLetter(ctx context.Context, id uint64) (tasks.DeadLetter, error) {
	var d tasks.DeadLetter
	err := s.write(ctx, func(tx pgx.Tx) error {
		var err error
		d, err = takeDeadLetter(ctx, tx, id)
		return err
	})
	return d, s.failed(err)
}

// takeDeadLetter deletes dead letter id and returns it.
func takeDeadLetter(ctx context.Context, tx pgx.Tx, id uint64) (tasks.DeadLetter, error) {
	if id > math.MaxInt64 {
		return tasks.DeadLetter{}, tasks.ErrDeadLetterNotFound // ids are bigints
	}
	var (
		d                                 tasks.DeadLetter
		did, created, dead                int64
		taskID, configID, url, lastErrMsg []byte
	)
	err := tx.QueryRow(ctx, `DELETE FROM dead_letters WHERE id = $1
		RETURNING id, task_id, config_id, url, attempts, last_error, created_at, dead_at`, int64(id)).
		Scan(&did, &taskID, &configID, &url, &d.Attempts, &lastErrMsg, &created, &dead)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, tasks.ErrDeadLetterNotFound
	}
	d.ID, d.TaskID, d.ConfigID, d.URL, d.LastError = uint64(did), string(taskID), string(configID), string(url), string(lastErrMsg)
	d.CreatedAt, d.DeadAt = time.Unix(0, created), time.Unix(0, dead)
	return d, err
}
