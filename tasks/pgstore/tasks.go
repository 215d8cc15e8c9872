package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/record"
)

// nanos is t in Unix nanoseconds as the columns hold times (times before
// 1970 are 0).
func nanos(t time.Time) int64 { return int64(tasks.UnixNanos(t)) }

// maxAttempts bounds how often Update and PushConfigs start again after
// losing a race; past it they return tasks.ErrConflict.
const maxAttempts = 100

var (
	// errStale: the task changed between the read and the write.
	errStale = errors.New("stale record")
	// errBound: the idempotency key was bound meanwhile.
	errBound = errors.New("idempotency key bound")
)

// bind binds key to task id, unless it is bound already: then it returns
// the task it is bound to, or ErrMessageIDReused if the message differs.
// A bind racing another of the same key waits for the other's commit.
func bind(ctx context.Context, tx pgx.Tx, key *tasks.IdemKey, id string) (string, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO idem (owner, message_id, task_id, hash) VALUES ($1, $2, $3, $4)
		ON CONFLICT (owner, message_id) DO NOTHING`, []byte(key.Owner), []byte(key.MessageID), []byte(id), key.Hash[:])
	if err != nil || tag.RowsAffected() == 1 {
		return "", err
	}
	bound, hash, err := lookup(ctx, tx, key)
	switch {
	case err != nil:
		return "", err
	case bound == "":
		return "", errStale // deleted meanwhile: try again
	case hash != key.Hash:
		return "", tasks.ErrMessageIDReused
	}
	return bound, nil
}

// querier is what both a pool and a transaction do.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const lookupQuery = `SELECT task_id, hash FROM idem WHERE owner = $1 AND message_id = $2`

// lookup returns the task key is bound to and the hash it was bound
// with; "" if it is bound to none.
func lookup(ctx context.Context, q querier, key *tasks.IdemKey) (string, [32]byte, error) {
	var id, hash []byte
	err := q.QueryRow(ctx, lookupQuery,
		[]byte(key.Owner), []byte(key.MessageID)).Scan(&id, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", [32]byte{}, nil
	}
	if err != nil {
		return "", [32]byte{}, err
	}
	var h [32]byte
	copy(h[:], hash)
	return string(id), h, nil
}

// Lookup implements tasks.Store.
func (s *Store) Lookup(ctx context.Context, key tasks.IdemKey) (*tasks.Record, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	id, hash, err := lookup(ctx, s.pool, &key)
	switch {
	case err != nil:
		return nil, s.failed(err)
	case id == "":
		return nil, tasks.ErrNotFound
	case hash != key.Hash:
		return nil, tasks.ErrMessageIDReused
	}
	return s.Get(ctx, key.Owner, id, tasks.Whole)
}

// readTask reads task id of owner with what sc asks for, in one
// statement (one snapshot). A task of another owner is ErrNotOwner and a
// missing one ErrNotFound, each answered by the same statement as a row
// of the same shape with nothing of the task in it (see readQuery), so
// that the two cost the same: nothing of a foreign task is sent, scanned
// or decoded.
func (s *Store) readTask(ctx context.Context, owner, id string, sc tasks.Scope) (*row, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	sql, args := readQuery(owner, id, sc)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, s.failed(err)
	}
	rs, err := scanRows(rows, false)
	switch {
	case err != nil:
		return nil, s.failed(err)
	case len(rs) == 0 || rs[0].seq == seqMissing:
		return nil, tasks.ErrNotFound
	case rs[0].seq == seqForeign:
		return nil, tasks.ErrNotOwner
	}
	return rs[0], nil
}

// The seq of readQuery's row for a task that is not the reader's: a
// task's own is never negative.
const (
	seqForeign = -1
	seqMissing = -2
)

// readQuery reads task id, with what sc asks for, if owner's; if not, a
// row of the same columns holding only seqForeign or seqMissing (a
// task's id is its primary key: the second part probes the same index
// entry as the first).
func readQuery(owner, id string, sc tasks.Scope) (string, []any) {
	var q query
	guard := ownerGuard(&q, owner)
	where := taskWhere(&q, id) + " AND " + guard
	none := `
	UNION ALL SELECT NULL::bytea, NULL::bytea, '', 0, CASE WHEN EXISTS (SELECT FROM tasks t WHERE ` + taskWhere(&q, id) + `)
		THEN ` + strconv.Itoa(seqForeign) + ` ELSE ` + strconv.Itoa(seqMissing) + ` END, 0, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL
	WHERE NOT EXISTS (SELECT FROM tasks t WHERE ` + where + `)`
	return selectTasks(columns(&q, sc, "", false), where, none), q.args
}

// activeQuery reads the non-terminal tasks, from tasks_active.
const activeQuery = `SELECT ` + headCols + `, NULL::bytea[], NULL::bytea[], t.input FROM tasks t WHERE NOT t.terminal`

// Get implements tasks.Store.
func (s *Store) Get(ctx context.Context, owner, id string, sc tasks.Scope) (*tasks.Record, error) {
	rw, err := s.readTask(ctx, owner, id, sc)
	if err != nil {
		return nil, err
	}
	return rw.record()
}

// Update implements tasks.Store. It reads the task, applies fn and
// encodes the change outside any transaction, then writes it only if the
// task's version is still the one read; if not, it starts again (so fn
// may run more than once), up to maxAttempts times, then returns
// tasks.ErrConflict.
func (s *Store) Update(ctx context.Context, owner, id string, key *tasks.IdemKey, sc tasks.Scope, fn tasks.UpdateFunc) (*tasks.Record, []tasks.Event, bool, error) {
	for range maxAttempts {
		rec, evs, dup, err := s.update(ctx, owner, id, key, sc, fn)
		if errors.Is(err, errStale) || errors.Is(err, errBound) {
			continue
		}
		return rec, evs, dup, err
	}
	return nil, nil, false, fmt.Errorf("update task %s: %w", id, tasks.ErrConflict)
}

// update is one attempt of Update; errStale or errBound if it lost a
// race.
func (s *Store) update(ctx context.Context, owner, id string, key *tasks.IdemKey, sc tasks.Scope, fn tasks.UpdateFunc) (*tasks.Record, []tasks.Event, bool, error) {
	rw, err := s.readTask(ctx, owner, id, sc)
	if err != nil {
		return nil, nil, false, err
	}
	r, err := rw.record()
	if err != nil {
		return nil, nil, false, err
	}
	r.ArtifactSizes = rw.idx.sizes()
	if key != nil {
		if bound, hash, err := lookup(ctx, s.pool, key); err != nil || bound != "" {
			if err == nil && (hash != key.Hash || bound != id) {
				err = tasks.ErrMessageIDReused
			}
			return r, nil, err == nil, s.failed(err)
		}
	}
	// fn gets the head: what sc asked for waits for the answer.
	read := r.Task
	r.Task.History, r.Task.Artifacts = nil, nil
	prev := r.State()
	evs, err := fn(r)
	if err != nil {
		return nil, nil, false, err
	}
	if evs == nil && key == nil {
		return tasks.Updated(r, &read, sc, nil), nil, false, nil // nothing changed
	}
	c, err := encodeChange(rw, r, prev, evs, s.idsOf(record.IDsOf(&r.Task)))
	if err != nil {
		return nil, nil, false, err
	}
	grow := c.grow
	if key != nil {
		grow += idemBytes(key, id)
	}
	err = s.updateAtOnce(ctx, rw, c, key, r.WriteQuota, grow)
	if errors.Is(err, errTakeTurns) {
		err = s.write(ctx, func(tx pgx.Tx) error { return s.writeChange(ctx, tx, rw, c, key, r.WriteQuota, grow) })
	}
	if err != nil {
		return nil, nil, false, err
	}
	s.queued(len(c.configs))
	s.announce(id, evs)
	s.transition(prev, r.State())
	r.ArtifactSizes = c.idx.sizes()
	return tasks.Updated(r, &read, sc, evs), evs, false, nil
}

// writeChange writes c, a change of the task read as rw, if its version
// is still rw's, binding key (if not nil) to it; grow is what it adds,
// checked against key's quota or, without a key, against q (the record's
// WriteQuota).
func (s *Store) writeChange(ctx context.Context, tx pgx.Tx, rw *row, c *change, key *tasks.IdemKey, q tasks.Quota, grow int64) error {
	id, owner := c.rec.Task.ID, c.rec.Owner
	tag, err := tx.Exec(ctx, updateTask, c.updateValues(rw.version, rw.stored+grow)...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return errStale // changed or deleted since read: the next read tells
	}
	if key != nil {
		bound, err := bind(ctx, tx, key, id)
		if err != nil {
			return err
		}
		if bound != "" {
			return errBound
		}
		if err := checkQuota(ctx, tx, owner, key.Quota, false, grow); err != nil {
			return err
		}
	} else if err := checkQuota(ctx, tx, owner, q, false, grow); err != nil {
		return err
	}
	b := &pgx.Batch{}
	c.queueRows(b)
	queueUsage(b, shardOf(tx.Conn()), owner, 0, grow)
	return sendBatch(ctx, tx, b)
}

// PushConfigs implements tasks.Store: a change of the task's head
// without an event, through Update (fn may run more than once).
func (s *Store) PushConfigs(ctx context.Context, owner, id string, fn func([]a2a.PushConfig) ([]a2a.PushConfig, error)) ([]a2a.PushConfig, error) {
	var cfgs []a2a.PushConfig
	_, _, _, err := s.Update(ctx, owner, id, nil, tasks.Head, func(r *tasks.Record) ([]tasks.Event, error) {
		var err error
		if cfgs, err = fn(append([]a2a.PushConfig(nil), r.PushConfigs...)); err != nil {
			return nil, err
		}
		r.PushConfigs = cfgs
		return []tasks.Event{}, nil
	})
	if err != nil {
		return nil, err
	}
	return cfgs, nil
}

// eventsQuery reads events of a task, each with the task's context id,
// which record v2 leaves out of their messages (the subquery runs once).
const eventsQuery = `SELECT body, (SELECT context_id FROM tasks WHERE id = $1) FROM task_events WHERE task_id = $1 AND seq > $2 ORDER BY seq`

// Events implements tasks.Store.
func (s *Store) Events(ctx context.Context, id string, after uint64) ([]tasks.Event, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if after >= 1<<63 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, eventsQuery, []byte(id), int64(after))
	if err != nil {
		return nil, s.failed(err)
	}
	in := record.IDs{Task: id}
	var bodies [][]byte
	var body []byte
	var contextID pgtype.DriverBytes // the same in every row: copied once
	if _, err := pgx.ForEachRow(rows, []any{&body, &contextID}, func() error {
		bodies = append(bodies, body)
		if in.Context == "" {
			in.Context = string(contextID)
		}
		return nil
	}); err != nil {
		return nil, s.failed(err)
	}
	return decodeEvents(in, bodies)
}

// decodeEvents decodes the events of the task of in.
func decodeEvents(in record.IDs, bodies [][]byte) ([]tasks.Event, error) {
	out := make([]tasks.Event, 0, len(bodies))
	for _, b := range bodies {
		e, err := record.DecodeEvent(b, in)
		if err != nil {
			return nil, fmt.Errorf("decode an event of task %q: %w", in.Task, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Active implements tasks.Store, from the index of non-terminal tasks.
func (s *Store) Active(ctx context.Context) ([]*tasks.Record, error) {
	return s.records(ctx, activeQuery)
}

// records reads the tasks sql selects (headCols, no history nor
// artifacts, then the input), with args.
func (s *Store) records(ctx context.Context, sql string, args ...any) ([]*tasks.Record, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, s.failed(err)
	}
	rs, err := scanRows(rows, true)
	if err != nil {
		return nil, s.failed(err)
	}
	out := make([]*tasks.Record, len(rs))
	for i, rw := range rs {
		if out[i], err = rw.record(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ActiveStates counts the tasks that are not terminal, by state, from
// the index of non-terminal tasks.
func (s *Store) ActiveStates(ctx context.Context) (map[a2a.TaskState]int, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT state, count(*) FROM tasks WHERE NOT terminal GROUP BY state`)
	if err != nil {
		return nil, s.failed(err)
	}
	defer rows.Close()
	out := make(map[a2a.TaskState]int)
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, s.failed(err)
		}
		out[a2a.TaskState(st)] = n
	}
	return out, s.failed(rows.Err())
}
