package pgstore

import (
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/a2ad/a2ad/tasks"
)

// rowCols are the columns of a task row a write sets, in the order of
// change.rowValues.
const rowCols = `context_id, state, function_id, terminal, seq, list_at, status_at, updated_at, history_len,
	art_ids, art_chunks, art_bytes, art_stored, stored, head, runner`

// rowValues are the values of rowCols after c, the task then taking
// stored bytes.
func (c *change) rowValues(stored int64) []any {
	r := c.rec
	return []any{
		[]byte(r.Task.ContextID), string(r.State()), []byte(r.FunctionID), r.State().Terminal(), int64(r.Seq),
		int64(tasks.ListTime(r)), int64(tasks.StatusTime(r.Task.Status)), nanos(r.UpdatedAt), int32(r.HistoryLen),
		orEmpty(c.idx.ids), orEmpty(c.idx.chunks), orEmpty(c.idx.bytes), orEmpty(c.idx.stored), stored, c.head,
		r.Runner,
	}
}

// orEmpty is s, or an empty slice for nil: the array columns are NOT NULL.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

const (
	insertTask = `INSERT INTO tasks (id, owner, version, input, ` + rowCols + `, events0, messages0, artifacts0)
		VALUES ($1, $2, 1, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
		ON CONFLICT (id) DO NOTHING`
	// updateTask also empties, in artifacts0, the artifacts $20 whose row
	// (i, 0) the change writes to artifacts: that row replaces it.
	updateTask = `UPDATE tasks SET version = version + 1, input = coalesce($3, input), (` + rowCols + `) =
		($4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19),
		artifacts0 = CASE WHEN $20::integer[] IS NULL THEN artifacts0 ELSE (SELECT array_agg(CASE WHEN x.i - 1 = ANY($20)
			THEN NULL ELSE x.body END ORDER BY x.i) FROM unnest(artifacts0) WITH ORDINALITY AS x(body, i)) END
		WHERE id = $1 AND version = $2`
)

// insertValues are the values of insertTask (and insertNewTask) for c, a
// new task taking stored bytes.
func (c *change) insertValues(stored int64) []any {
	v := append([]any{[]byte(c.rec.Task.ID), []byte(c.rec.Owner), c.input}, c.rowValues(stored)...)
	if !c.inline {
		return append(v, nil, nil, nil)
	}
	return append(v, c.evBody, c.msgBody, c.artBody)
}

// updateValues are the values of updateTask for c, a change of the task
// at version, which then takes stored bytes.
func (c *change) updateValues(version, stored int64) []any {
	var replaced []int32
	for n := range c.artI {
		if c.artJ[n] == 0 {
			replaced = append(replaced, c.artI[n])
		}
	}
	return append(append([]any{[]byte(c.rec.Task.ID), version, c.input}, c.rowValues(stored)...), replaced)
}

// queueRows queues the writes of c's rows besides the task's: events,
// history, artifacts and the deliveries it queues.
func (c *change) queueRows(b *pgx.Batch) {
	id := []byte(c.rec.Task.ID)
	// A change held inline has its events, messages and artifacts in the
	// task's row (insertValues).
	if len(c.evSeq) > 0 && !c.inline {
		b.Queue(`INSERT INTO events (task_id, seq, body) SELECT $1, s, v FROM unnest($2::bigint[], $3::bytea[]) AS x(s, v)`,
			id, c.evSeq, c.evBody)
	}
	if len(c.msgN) > 0 && !c.inline {
		b.Queue(`INSERT INTO messages (task_id, n, body) SELECT $1, n, v FROM unnest($2::integer[], $3::bytea[]) AS x(n, v)`,
			id, c.msgN, c.msgBody)
	}
	if len(c.drop) > 0 {
		b.Queue(`DELETE FROM artifacts WHERE task_id = $1 AND i = ANY($2::integer[]) AND j > 0`, id, c.drop)
	}
	if len(c.artI) > 0 && !c.inline {
		// A new task's are plain inserts: ON CONFLICT inserts speculatively,
		// one more WAL record a row.
		upsert := `
			ON CONFLICT (task_id, i, j) DO UPDATE SET body = EXCLUDED.body`
		if c.fresh {
			upsert = ""
		}
		b.Queue(`INSERT INTO artifacts (task_id, i, j, body) SELECT $1, i, j, v FROM unnest($2::integer[], $3::integer[], $4::bytea[]) AS x(i, j, v)`+upsert,
			id, c.artI, c.artJ, c.artBody)
	}
	if len(c.configs) > 0 {
		// A webhook with a delivery waiting gets no other: the one
		// waiting reports this transition too.
		at := nanos(c.rec.UpdatedAt)
		b.Queue(`INSERT INTO outbox (id, task_id, config_id, seq, attempts, next_at, last_error, created_at, claimed_until)
			SELECT nextval('outbox_ids'), $1, c, $3, 0, $4, '', $4, 0 FROM unnest($2::bytea[]) AS c
			ON CONFLICT (task_id, config_id) DO UPDATE SET seq = EXCLUDED.seq`, id, c.configs, int64(c.rec.Seq), at)
	}
}

// bumpUsage adds $3 tasks and $4 bytes to the usage of owner $1 in shard
// $2: an UPDATE of the row, there but for an owner's first writes on a
// connection, which INSERT ... ON CONFLICT DO UPDATE alone would lock
// first, one more WAL record a write.
const bumpUsage = `WITH u AS (UPDATE usage SET tasks = tasks + $3, bytes = bytes + $4 WHERE owner = $1 AND shard = $2 RETURNING 1)
	INSERT INTO usage (owner, shard, tasks, bytes) SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT FROM u)
	ON CONFLICT (owner, shard) DO UPDATE SET tasks = usage.tasks + EXCLUDED.tasks, bytes = usage.bytes + EXCLUDED.bytes`

// queueUsage queues adding a task count and bytes to owner's usage, in
// shard (the connection's: shardOf).
func queueUsage(b *pgx.Batch, shard int16, owner string, tasks, bytes int64) {
	if tasks == 0 && bytes == 0 {
		return
	}
	b.Queue(bumpUsage, []byte(owner), shard, tasks, bytes)
}

// usageShards is how many rows an owner's usage may be spread over.
const usageShards = 64

// shardKey is where a connection keeps its usage shard (its CustomData).
const shardKey = "a2ad.usage_shard"

// shards hands the store's connections their usage shards as they
// connect. A usage row stays locked from a write's bump to its commit:
// each connection claims a shard no other live connection holds, of any
// store on the database, so that concurrent writes of one owner never
// wait for each other's. Past usageShards connections they share.
type shards struct{ next atomic.Uint32 }

func newShards() *shards {
	sh := &shards{}
	sh.next.Store(rand.Uint32N(usageShards))
	return sh
}

// claimShard takes the first shard from $1 on that no session holds, and
// holds it for the session (to the connection's end). Its lock's key is
// the one-bigint kind, which no other lock of a2ad's uses: the schema's
// hash and the shard (advisory locks are the database's, and several
// stores may share a database, one per schema).
const claimShard = `SELECT s FROM (SELECT (($1::integer + g) % $2)::smallint AS s FROM generate_series(0, $2 - 1) AS g) AS x
	WHERE pg_try_advisory_lock(hashtext('a2ad usage ' || current_schema())::bigint * $2 + s) LIMIT 1`

// afterConnect claims c's shard (pgxpool's AfterConnect), trying first
// the store's next in turn. If it cannot, c shares that one.
func (sh *shards) afterConnect(ctx context.Context, c *pgx.Conn) error {
	turn := int16((sh.next.Add(1) - 1) % usageShards)
	shard := turn
	if err := c.QueryRow(ctx, claimShard, int32(turn), int32(usageShards)).Scan(&shard); err != nil {
		shard = turn // every shard held (or the claim failed): share
	}
	c.PgConn().CustomData()[shardKey] = shard
	return nil
}

// shardOf is the usage shard of c; one drawn at random for a connection
// that has none.
func shardOf(c *pgx.Conn) int16 {
	if sh, ok := c.PgConn().CustomData()[shardKey].(int16); ok {
		return sh
	}
	return int16(rand.IntN(usageShards))
}

// quotaLock is the first key of the advisory lock that makes the quota
// checks of one owner take turns (the second is a hash of the owner).
const quotaLock = 0x71756f74 // "quot"

// checkQuota returns the *tasks.QuotaError of a write that would take
// owner past q: a new task (newTask) past q.Tasks, or grow bytes more
// past q.Bytes. A write that does not grow is never refused. The checks
// of one owner's writes take turns (to the end of their transactions),
// so that two writes cannot both pass on what neither counted.
func checkQuota(ctx context.Context, tx pgx.Tx, owner string, q tasks.Quota, newTask bool, grow int64) error {
	checkTasks, checkBytes := q.Tasks > 0 && newTask, q.Bytes > 0 && grow > 0
	if !checkTasks && !checkBytes {
		return nil
	}
	h := fnv.New32a()
	h.Write([]byte(owner))
	// Two statements: the sum must see what the lock's last holder
	// committed, so it takes its snapshot after the lock.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(quotaLock), int32(h.Sum32())); err != nil {
		return err
	}
	var n, used int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(sum(tasks), 0), coalesce(sum(bytes), 0) FROM usage WHERE owner = $1`,
		[]byte(owner)).Scan(&n, &used); err != nil {
		return err
	}
	if checkTasks && n+1 > q.Tasks {
		return &tasks.QuotaError{Which: tasks.QuotaTasks, Used: n, Limit: q.Tasks}
	}
	if checkBytes && used+grow > q.Bytes {
		return &tasks.QuotaError{Which: tasks.QuotaBytes, Used: used, Limit: q.Bytes}
	}
	return nil
}

// sendBatch sends b in tx and reads every result, returning the first
// error.
func sendBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// updateGuarded is updateTask as one statement that fails
// (division_by_zero) when it updates no row: the task changed or went
// since it was read, and the rest of its batch must not run.
const updateGuarded = `WITH u AS (` + updateTask + ` RETURNING 1) SELECT 1 / count(*) FROM u`

// updateAtOnce writes c, a change of the task read as rw, in one round
// trip: one pipelined batch that the server runs as one implicit
// transaction, guarded by the version read (updateGuarded), so that no
// transaction stays open while the client waits. It binds key (if not
// nil) and checks the quota (key's, else q) as writeChange does, in the
// manner of createAtOnce: errTakeTurns, having written nothing, when the
// key is bound already or the quota's guard refuses, for writeChange's
// transaction to tell which; errStale when the version moved.
func (s *Store) updateAtOnce(ctx context.Context, rw *row, c *change, key *tasks.IdemKey, q tasks.Quota, grow int64) error {
	id, owner := []byte(c.rec.Task.ID), c.rec.Owner
	idem, guard := -1, -1
	at, err := s.writeBatch(ctx, func(shard int16) *pgx.Batch {
		b := &pgx.Batch{}
		b.Queue(updateGuarded, c.updateValues(rw.version, rw.stored+grow)...)
		if key != nil {
			idem = b.Len()
			b.Queue(insertIdem, []byte(key.Owner), []byte(key.MessageID), id, key.Hash[:])
			q = key.Quota
		}
		guard = queueQuotaGuard(b, owner, q, false, grow)
		c.queueRows(b)
		queueUsage(b, shard, owner, 0, grow)
		return b
	})
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &pe):
		// The connection's: the batch may have committed.
	case at == 0 && pe.Code == "22012":
		return errStale
	case idem >= 0 && at == idem && pe.Code == "23505", guard >= 0 && at == guard && pe.Code == "22012":
		return errTakeTurns
	}
	return s.failed(err)
}
