package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/record"
)

// The bounds of the Inspector's walks, as boltstore's.
const (
	// DefaultStateCountLimit is how many tasks Overview counts by state
	// at most.
	DefaultStateCountLimit = 100_000
	// DefaultScanLimit is how many tasks one Tasks call examines.
	DefaultScanLimit = 10_000
)

// Inspector is the operator's read-only view of a store: every method is
// one read-only transaction or statement, and writes nothing.
type Inspector struct {
	s *Store
	// StateCountLimit bounds the tasks Overview counts by state.
	StateCountLimit int
	// ScanLimit bounds the tasks one Tasks call examines.
	ScanLimit int
}

var _ tasks.Inspector = (*Inspector)(nil)

// Inspector returns a read-only view of s with the default bounds.
func (s *Store) Inspector() *Inspector {
	return &Inspector{s: s, StateCountLimit: DefaultStateCountLimit, ScanLimit: DefaultScanLimit}
}

// Inspect returns the read-only view of s with bounds b (tasks.Backend):
// Inspector with b's StateCount and Scan, a zero one the default.
func (s *Store) Inspect(b tasks.InspectBounds) tasks.Inspector {
	in := s.Inspector()
	b.Apply(&in.StateCountLimit, &in.ScanLimit)
	return in
}

// Overview counts the store's tasks, deliveries and bytes from one
// snapshot. The task count is the owners' usage; the counts by state
// read at most StateCountLimit tasks (the non-terminal ones from their
// index). FileBytes is what the store's tables and indexes take,
// DataBytes what the tables take without their indexes.
func (in *Inspector) Overview(ctx context.Context) (*tasks.Overview, error) {
	if err := in.s.usable(ctx); err != nil {
		return nil, err
	}
	limit := in.StateCountLimit
	if limit <= 0 {
		limit = DefaultStateCountLimit
	}
	o := &tasks.Overview{ByState: map[a2a.TaskState]int{}}
	err := in.s.read(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT
			(SELECT coalesce(sum(tasks), 0) FROM usage),
			(SELECT count(*) FROM tasks WHERE NOT terminal),
			(SELECT count(*) FROM outbox),
			(SELECT count(*) FROM dead_letters),
			(SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c
				WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'),
			(SELECT coalesce(sum(pg_table_size(c.oid)), 0) FROM pg_class c
				WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r')`).
			Scan(&o.Tasks, &o.NonTerminal, &o.OutboxDepth, &o.DeadLetters, &o.FileBytes, &o.DataBytes)
		if err != nil {
			return err
		}
		switch {
		case o.Tasks <= limit:
			o.ByStateComplete = true
			return countStates(ctx, tx, o, tasks.States, `SELECT state, count(*) FROM tasks GROUP BY state`)
		case o.NonTerminal <= limit:
			var nonTerminal []a2a.TaskState
			for _, st := range tasks.States {
				if !st.Terminal() {
					nonTerminal = append(nonTerminal, st)
				}
			}
			return countStates(ctx, tx, o, nonTerminal, `SELECT state, count(*) FROM tasks WHERE NOT terminal GROUP BY state`)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inspect task store: %w", err)
	}
	return o, nil
}

// countStates fills o.ByState with sql's counts, and 0 for each of
// states it has none of.
func countStates(ctx context.Context, tx pgx.Tx, o *tasks.Overview, states []a2a.TaskState, sql string) error {
	for _, st := range states {
		o.ByState[st] = 0
	}
	rows, err := tx.Query(ctx, sql)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return err
		}
		o.ByState[a2a.TaskState(st)] = n
	}
	return rows.Err()
}

// Tasks returns the heads of up to limit tasks that match q, with ids
// below after, highest first. It examines at most ScanLimit tasks, by id
// from an index (the owner's, tasks_owner, when q names one; the
// non-terminal one for a non-terminal state; else the tasks' own), and
// checks the other filters on those.
func (in *Inspector) Tasks(ctx context.Context, q tasks.TaskQuery, after string, limit int) (*tasks.TaskPage, error) {
	if err := in.s.usable(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("list tasks: limit %d is not positive", limit)
	}
	scan := in.ScanLimit
	if scan <= 0 {
		scan = DefaultScanLimit
	}
	sql, args, stats, statsArgs := inspectQuery(q, after, limit, scan)
	page := &tasks.TaskPage{Tasks: make([]*tasks.Record, 0, min(limit, 64))}
	var rs []*row
	var ns []int
	err := in.s.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				rw = new(row)
				st string
				fn []byte
				n  int
			)
			if err := rows.Scan(append(rw.dest(false), &st, &fn, &n)...); err != nil {
				return err
			}
			rs, ns = append(rs, rw), append(ns, n)
		}
		if err := rows.Err(); err != nil || len(rs) > limit {
			return err
		}
		var last []byte
		err = tx.QueryRow(ctx, stats, statsArgs...).Scan(&page.Scanned, &last)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if page.Scanned == scan {
			page.Next = string(last) // the bound stopped the scan
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	if len(rs) > limit {
		// One more match: the next page starts below the last one here.
		rs, page.Scanned = rs[:limit], ns[limit]
		page.Next = string(rs[limit-1].id)
	}
	for _, rw := range rs {
		r, err := rw.record()
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		r.ArtifactSizes = rw.idx.sizes()
		page.Tasks = append(page.Tasks, r)
	}
	return page, nil
}

// inspectQuery returns Tasks's statements: the matches among the first
// scan tasks below after, limit+1 at most, each with its place in the
// scan; and how many tasks the scan saw, with the last.
func inspectQuery(q tasks.TaskQuery, after string, limit, scan int) (sql string, args []any, stats string, statsArgs []any) {
	var sq query
	cond := "true"
	if q.Owner != nil {
		cond = ownerGuard(&sq, *q.Owner)
	} else if q.State != "" && !q.State.Terminal() {
		cond = "NOT t.terminal"
	}
	if after != "" {
		cond += " AND t.id < " + sq.arg([]byte(after))
	}
	ids := selectTasks("t.id", cond, " ORDER BY t.id DESC LIMIT "+sq.arg(scan))
	stats = `SELECT count(*) OVER (), s.id FROM (` + ids + `) s ORDER BY s.id LIMIT 1` // how many, and the last
	statsArgs = append([]any(nil), sq.args...)
	// The scanned rows, numbered, then the matches among them: the
	// filters are outside the bound.
	match := "true"
	if q.State != "" {
		match += " AND w.state = " + sq.arg(string(q.State))
	}
	if q.FunctionID != "" {
		match += " AND w.function_id = " + sq.arg([]byte(q.FunctionID))
	}
	scanned := selectTasks(headCols+", NULL::bytea[], NULL::bytea[], t.state, t.function_id", cond, " ORDER BY t.id DESC LIMIT $"+fmt.Sprint(len(statsArgs)))
	sql = `SELECT w.* FROM (SELECT s.*, row_number() OVER (ORDER BY s.id DESC) FROM (` + scanned + `) s) w WHERE ` + match +
		` ORDER BY w.id DESC LIMIT ` + sq.arg(limit+1)
	return sql, sq.args, stats, statsArgs
}

// Task returns task id, whoever owns it, whole and with its input and
// message ids, and its whole event log in sequence order, from one
// snapshot. Returns tasks.ErrNotFound if no task has that id.
func (in *Inspector) Task(ctx context.Context, id string) (*tasks.Record, []tasks.Event, error) {
	if err := in.s.usable(ctx); err != nil {
		return nil, nil, err
	}
	var (
		rs     []*row
		msgIDs []string
		evs    [][]byte
	)
	var q query
	sql := selectTasks(columns(&q, tasks.Whole, "", true), taskWhere(&q, id), "")
	err := in.s.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql, q.args...)
		if err != nil {
			return err
		}
		if rs, err = scanRows(rows, true); err != nil || len(rs) == 0 {
			return err
		}
		rows, _ = tx.Query(ctx, `SELECT message_id FROM idem WHERE task_id = $1 ORDER BY message_id`, []byte(id))
		ms, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			return err
		}
		for _, m := range ms {
			msgIDs = append(msgIDs, string(m))
		}
		rows, _ = tx.Query(ctx, `SELECT body FROM task_events WHERE task_id = $1 ORDER BY seq`, []byte(id))
		evs, err = pgx.CollectRows(rows, pgx.RowTo[[]byte])
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("inspect task %s: %w", id, err)
	}
	if len(rs) == 0 {
		return nil, nil, tasks.ErrNotFound
	}
	r, err := rs[0].record()
	if err != nil {
		return nil, nil, err
	}
	r.MessageIDs = msgIDs
	out, err := decodeEvents(record.IDsOf(&r.Task), evs)
	return r, out, err
}

// DeadLetters returns up to limit dead letters with ids above after,
// oldest first, and whether more follow.
func (in *Inspector) DeadLetters(ctx context.Context, after uint64, limit int) ([]tasks.DeadLetter, bool, error) {
	if limit <= 0 {
		if err := in.s.usable(ctx); err != nil {
			return nil, false, err
		}
		return []tasks.DeadLetter{}, false, nil
	}
	out, err := in.s.DeadLetters(ctx, after, min(limit, math.MaxInt32-1)+1)
	if err != nil {
		return nil, false, fmt.Errorf("list dead letters: %w", err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}
