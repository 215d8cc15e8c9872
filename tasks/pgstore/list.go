package pgstore

import (
	"context"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/tasks"
)

// List implements tasks.Store. A page and its total are read from one
// snapshot, from the listing indexes (tasks_listing, and the ones by
// context and by state): the cursor is a row comparison on (list_at, id),
// which they serve. The total of an unfiltered listing is the owner's
// task count (usage), not a count of its rows.
func (s *Store) List(ctx context.Context, owner string, f tasks.ListFilter, after *tasks.Cursor, limit int, sc tasks.Scope) ([]*tasks.Record, int, *tasks.Cursor, error) {
	if err := s.usable(ctx); err != nil {
		return nil, 0, nil, err
	}
	count, countArgs, page, args := listQuery(owner, f, after, limit, sc)
	var (
		rs    []*row
		cut   bool // the page ended early, at its bytes
		total int64
	)
	err := s.read(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, count, countArgs...).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, page, args...)
		if err != nil {
			return err
		}
		rs, cut, err = scanPage(rows, sc.ListBytes)
		return err
	})
	if err != nil {
		return nil, 0, nil, err
	}
	more := cut || len(rs) > limit
	rs = rs[:min(len(rs), limit)]
	out := make([]*tasks.Record, len(rs))
	for i, rw := range rs {
		if out[i], err = rw.record(); err != nil {
			return nil, 0, nil, err
		}
	}
	var next *tasks.Cursor
	if more && len(out) > 0 {
		last := out[len(out)-1]
		next = &tasks.Cursor{At: tasks.ListTime(last), TaskID: last.Task.ID}
	}
	return out, int(total), next, nil
}

// scanPage scans the rows of a page (limit+1 at most, the last telling
// that more follow), until one would take those scanned past budget bytes
// (0: no bound; the first row is always kept): cut reports that the page
// ended there, early.
func scanPage(rows pgx.Rows, budget int64) (out []*row, cut bool, err error) {
	defer rows.Close()
	var used int64
	for rows.Next() {
		rw := new(row)
		if err := rows.Scan(rw.dest(false)...); err != nil {
			return nil, false, err
		}
		if used += rw.size(); len(out) > 0 && budget > 0 && used > budget {
			return out, true, nil
		}
		out = append(out, rw)
	}
	return out, false, rows.Err()
}

// listQuery returns List's statements: the count of the matches, and
// the page (limit+1 rows, to tell whether more follow).
func listQuery(owner string, f tasks.ListFilter, after *tasks.Cursor, limit int, sc tasks.Scope) (count string, countArgs []any, page string, args []any) {
	var q query
	cond := ownerGuard(&q, owner)
	if f.ContextID != "" {
		cond += " AND t.context_id = " + q.arg([]byte(f.ContextID))
	}
	if f.State != "" {
		cond += " AND t.state = " + q.arg(string(f.State))
	}
	if b := f.StatusBound(); b > 0 {
		// A task's list time is never before its status time: the bound
		// on list_at lets the index stop early.
		p := q.arg(int64(min(b, math.MaxInt64)))
		cond += " AND t.status_at >= " + p + " AND t.list_at >= " + p
	}
	count = `SELECT coalesce(sum(tasks), 0) FROM usage WHERE owner = $1`
	if f.Filtered() {
		count = `SELECT count(*) FROM tasks t WHERE ` + cond
	}
	countArgs = slices.Clone(q.args)
	if after != nil {
		cond += " AND (t.list_at, t.id) < (" + q.arg(int64(min(after.At, math.MaxInt64))) + ", " + q.arg([]byte(after.TaskID)) + ")"
	}
	page = selectTasks(columns(&q, sc, "", false), cond, " ORDER BY t.list_at DESC, t.id DESC LIMIT "+q.arg(limit+1))
	return count, countArgs, page, q.args
}

// expireQuery deletes the oldest of the terminal tasks updated before $1,
// $2 at most, that no other transaction holds.
// (The ids are an array, not a join, so that the planner looks each up
// by its key whatever it thinks of the table's size.)
const expireQuery = `DELETE FROM tasks WHERE id = ANY(ARRAY(
		SELECT id FROM tasks WHERE terminal AND updated_at < $1 ORDER BY updated_at, id LIMIT $2 FOR UPDATE SKIP LOCKED))
	RETURNING id, owner, stored`

// Expire implements tasks.Store. It deletes the oldest of the terminal
// tasks last updated before cutoff (from tasks_expiry) with every row
// that is theirs, in one transaction. Tasks another transaction holds (a
// change, or another store's Expire) are skipped: stores sharing the
// database may sweep at once.
func (s *Store) Expire(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	end := nanos(cutoff)
	if end <= 0 || limit <= 0 {
		return 0, nil
	}
	var n int
	err := s.write(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, expireQuery, end, limit)
		if err != nil {
			return err
		}
		type gone struct {
			id, owner []byte
			stored    int64
		}
		var ids [][]byte
		byOwner := map[string][2]int64{}
		for rows.Next() {
			var g gone
			if err := rows.Scan(&g.id, &g.owner, &g.stored); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, g.id)
			u := byOwner[string(g.owner)]
			byOwner[string(g.owner)] = [2]int64{u[0] - 1, u[1] - g.stored}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		n = len(ids)
		if n == 0 {
			return nil
		}
		b := &pgx.Batch{}
		for _, t := range []string{"events", "messages", "artifacts", "idem", "outbox"} {
			b.Queue(`DELETE FROM `+t+` WHERE task_id = ANY($1::bytea[])`, ids)
		}
		// In one order, so that sweeps at once never wait on each other
		// in a circle.
		for _, owner := range slices.Sorted(maps.Keys(byOwner)) {
			u := byOwner[owner]
			queueUsage(b, shardOf(tx.Conn()), owner, u[0], u[1])
		}
		return sendBatch(ctx, tx, b)
	})
	return n, err
}
