package pgstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/record"
)

// errTakeTurns: the one-round-trip create found the key bound or the
// quota in the way; the transaction of createInTx tells which.
var errTakeTurns = errors.New("create needs the full transaction")

// Create implements tasks.Store. A new key's task is written in one round
// trip (createAtOnce); a key bound already, and a quota that refuses,
// take the transaction of createInTx, which reads what it is bound to or
// how much is used.
func (s *Store) Create(ctx context.Context, key tasks.IdemKey, rec *tasks.Record, events []tasks.Event) (*tasks.Record, bool, error) {
	if err := s.usable(ctx); err != nil {
		return nil, false, err
	}
	r := *rec
	r.MessageIDs = append(append([]string(nil), rec.MessageIDs...), key.MessageID)
	c, err := encodeNew(&r, events, s.idsOf(record.IDsOf(&r.Task)))
	if err != nil {
		return nil, false, err
	}
	if !s.inline() {
		c.inline = false // as schema 2 wrote: see layout.go
	}
	size := c.grow + idemBytes(&key, r.Task.ID)
	err = s.createAtOnce(ctx, &key, &r, c, size)
	if errors.Is(err, errTakeTurns) {
		var boundTo string
		boundTo, err = s.createInTx(ctx, &key, &r, c, size)
		if errors.Is(err, errBound) {
			got, err := s.Get(ctx, key.Owner, boundTo, tasks.Whole)
			if errors.Is(err, tasks.ErrNotFound) {
				// Expired between the two reads: the key went with it.
				return s.Create(ctx, key, rec, events)
			}
			return got, false, err
		}
	}
	if err != nil {
		return nil, false, err
	}
	s.queued(len(c.configs))
	s.transition("", r.State())
	return &r, true, nil
}

const (
	// insertIdem fails (unique_violation) when the key is bound, or once
	// a racing bind of it commits: the whole create goes with it.
	insertIdem = `INSERT INTO idem (owner, message_id, task_id, hash) VALUES ($1, $2, $3, $4)`
	// insertNewTask fails (unique_violation) on a task id that exists.
	insertNewTask = `INSERT INTO tasks (id, owner, version, input, ` + rowCols + `, events0, messages0, artifacts0)
		VALUES ($1, $2, 1, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)`
	// quotaGuard divides by zero, failing the transaction, when the
	// owner's usage ($1) and what the write adds ($2 tasks, $4 bytes)
	// would pass the limits ($3, $5), leaving room, if $6, for one more
	// such write per other connection the server allows, of $7 bytes at
	// most. sum(bigint) is numeric: no overflow.
	quotaGuard = `SELECT 1 / (coalesce(sum(tasks), 0) + $2 * (1 + ` + room + `) <= $3
		AND coalesce(sum(bytes), 0) + $4 + $7 * ` + room + ` <= $5)::integer FROM usage WHERE owner = $1`
	room = `(CASE WHEN $6 THEN current_setting('max_connections')::bigint - 1 ELSE 0 END)`
)

// createAtOnce writes c, the new task r bound to key, in one round trip:
// one pipelined batch, which the server runs as one implicit transaction
// committed at its end (before it answers, with synchronous_commit), as
// BEGIN ... COMMIT would in five. It returns errTakeTurns, having written
// nothing, when the key is bound or the quota would refuse the task.
func (s *Store) createAtOnce(ctx context.Context, key *tasks.IdemKey, r *tasks.Record, c *change, size int64) error {
	id := []byte(r.Task.ID)
	var guard, task int
	at, err := s.writeBatch(ctx, func(shard int16) *pgx.Batch {
		b := &pgx.Batch{}
		b.Queue(insertIdem, []byte(key.Owner), []byte(key.MessageID), id, key.Hash[:])
		guard = queueQuotaGuard(b, r.Owner, key.Quota, true, size)
		task = b.Len()
		b.Queue(insertNewTask, c.insertValues(size)...)
		c.queueRows(b)
		queueUsage(b, shard, r.Owner, 1, size)
		return b
	})
	switch err := atOnceOutcome(at, guard, task, err); {
	case errors.Is(err, errIDTaken):
		return fmt.Errorf("create task %s: id already exists", r.Task.ID)
	case err == nil, errors.Is(err, errTakeTurns):
		return err
	default:
		return s.failed(err)
	}
}

// errIDTaken: the one-round-trip create found its task id taken.
var errIDTaken = errors.New("task id taken")

// atOnceOutcome reads the error of createAtOnce's batch, which failed at
// statement at (-1: its commit): errTakeTurns for the server's refusal
// of the key (at 0) or of the quota guard (at guard), errIDTaken for the
// task's id (at task), else err.
func atOnceOutcome(at, guard, task int, err error) error {
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &pe):
		// The connection's: the batch may have committed.
	case at == 0 && pe.Code == "23505", guard >= 0 && at == guard && pe.Code == "22012":
		return errTakeTurns
	case at == task && pe.Code == "23505":
		return errIDTaken
	}
	return err
}

// sharedGrow is the most a write may add to take the owner's quota lock
// shared (queueQuotaGuard).
const sharedGrow = 1 << 20

// queueQuotaGuard queues what checkQuota does, for one batch: take the
// owner's turn, then fail unless the write fits q. It returns the index
// of the statement that fails, or -1 if there is nothing to check.
//
// A write that adds a task and at most sharedGrow bytes takes the turn
// shared, with the other such writes, and fails unless it fits with room
// for one more such write per connection the server allows
// (max_connections, read at each check): those are all that can be
// adding at once, each holding a connection, since checkQuota takes the
// lock alone (waiting for them) and its snapshot after. Far from the
// limit, one owner's creates then no longer commit one at a time; near it
// (and for a bigger write) they take turns as in checkQuota, exact to the
// last task and byte: a failed guard sends the create there.
func queueQuotaGuard(b *pgx.Batch, owner string, q tasks.Quota, newTask bool, grow int64) int {
	checkTasks, checkBytes := q.Tasks > 0 && newTask, q.Bytes > 0 && grow > 0
	if !checkTasks && !checkBytes {
		return -1
	}
	shared := grow <= sharedGrow
	h := fnv.New32a()
	h.Write([]byte(owner))
	lock := `SELECT pg_advisory_xact_lock($1, $2)`
	if shared {
		lock = `SELECT pg_advisory_xact_lock_shared($1, $2)`
	}
	b.Queue(lock, int32(quotaLock), int32(h.Sum32()))
	// A statement of its own, as in checkQuota: its snapshot is taken
	// once the lock is held.
	addTasks, limitTasks, addBytes, limitBytes, each := int64(0), int64(math.MaxInt64), int64(0), int64(math.MaxInt64), int64(0)
	if checkTasks {
		addTasks, limitTasks = 1, q.Tasks
	}
	if checkBytes {
		addBytes, limitBytes, each = grow, q.Bytes, sharedGrow
	}
	b.Queue(quotaGuard, []byte(owner), addTasks, limitTasks, addBytes, limitBytes, shared, each)
	return b.Len() - 1
}

// writeBatch runs the batch build makes, for the usage shard of the
// connection it runs on, as one implicit transaction (as write runs a
// function), and returns the index of the statement that failed and its
// error. It runs the batch again when the server found the transaction
// in a deadlock or a serialization failure.
func (s *Store) writeBatch(ctx context.Context, build func(shard int16) *pgx.Batch) (int, error) {
	if err := s.usable(ctx); err != nil {
		return -1, err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.WriteTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(wctx)
	if err != nil {
		return -1, err
	}
	defer conn.Release()
	b := build(shardOf(conn.Conn()))
	for attempt := 0; ; attempt++ {
		start := time.Now()
		at, err := runBatch(wctx, conn, b)
		if err == nil && s.opts.OnCommit != nil {
			s.opts.OnCommit(1, time.Since(start))
		}
		if retryable(err) && attempt < 10 {
			continue
		}
		return at, err
	}
}

// runBatch sends b on conn and reads each result: the first that failed,
// and its error; or -1 and the error of the batch's end (its commit).
func runBatch(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch) (int, error) {
	br := conn.SendBatch(ctx, b)
	for i := range b.Len() {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return i, err
		}
	}
	return -1, br.Close()
}

// createInTx writes c, the new task r bound to key, in a transaction
// that tells why createAtOnce could not: errBound and the task the key is
// bound to, or the quota's *tasks.QuotaError.
func (s *Store) createInTx(ctx context.Context, key *tasks.IdemKey, r *tasks.Record, c *change, size int64) (string, error) {
	var boundTo string
	err := s.write(ctx, func(tx pgx.Tx) error {
		boundTo = ""
		var err error
		if boundTo, err = bind(ctx, tx, key, r.Task.ID); err != nil || boundTo != "" {
			if err == nil {
				err = errBound // nothing to write
			}
			return err
		}
		if err := checkQuota(ctx, tx, r.Owner, key.Quota, true, size); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, insertTask, c.insertValues(size)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("create task %s: id already exists", r.Task.ID)
		}
		b := &pgx.Batch{}
		c.queueRows(b)
		queueUsage(b, shardOf(tx.Conn()), r.Owner, 1, size)
		return sendBatch(ctx, tx, b)
	})
	return boundTo, err
}
