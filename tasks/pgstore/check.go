package pgstore

import (
	"context"
	"fmt"
)

// checks are the store's invariants, each a query that returns a row for
// each place it does not hold: what is wrong there, as text.
var checks = []struct{ name, sql string }{
	{"every task's columns agree with its state", `SELECT encode(id, 'escape') FROM tasks
		WHERE terminal <> (state IN ('completed', 'failed', 'canceled', 'rejected'))`},
	{"every task's seq is its last event's", `SELECT encode(t.id, 'escape') FROM tasks t
		WHERE t.seq <> coalesce((SELECT max(seq) FROM events e WHERE e.task_id = t.id), 0)
		   OR (SELECT count(*) FROM events e WHERE e.task_id = t.id) <> t.seq`},
	{"every task's history_len counts its messages", `SELECT encode(t.id, 'escape') FROM tasks t
		WHERE t.history_len <> (SELECT count(*) FROM messages m WHERE m.task_id = t.id)
		   OR t.history_len <> coalesce((SELECT max(n) + 1 FROM messages m WHERE m.task_id = t.id), 0)`},
	{"every task's artifact index counts its artifact rows", `SELECT encode(t.id, 'escape') FROM tasks t
		WHERE coalesce((SELECT sum(c) FROM unnest(t.art_chunks) c), 0) <> (SELECT count(*) FROM artifacts a WHERE a.task_id = t.id)
		   OR cardinality(t.art_ids) <> coalesce((SELECT max(i) + 1 FROM artifacts a WHERE a.task_id = t.id), 0)`},
	{"every row belongs to a task", `SELECT 'events of ' || encode(task_id, 'escape') FROM events WHERE task_id NOT IN (SELECT id FROM tasks)
		UNION ALL SELECT 'messages of ' || encode(task_id, 'escape') FROM messages WHERE task_id NOT IN (SELECT id FROM tasks)
		UNION ALL SELECT 'artifacts of ' || encode(task_id, 'escape') FROM artifacts WHERE task_id NOT IN (SELECT id FROM tasks)
		UNION ALL SELECT 'key of ' || encode(task_id, 'escape') FROM idem WHERE task_id NOT IN (SELECT id FROM tasks)
		UNION ALL SELECT 'delivery of ' || encode(task_id, 'escape') FROM outbox WHERE task_id NOT IN (SELECT id FROM tasks)`},
	{"every task's stored bytes are what its rows take", `SELECT encode(id, 'escape') || ': ' || stored || ' stored, ' || counted || ' counted'
		FROM (SELECT t.id, t.stored, octet_length(t.id) + octet_length(t.owner) + octet_length(t.head) + coalesce(octet_length(t.input), 0) + 96
			+ coalesce((SELECT sum(octet_length(e.task_id) + 8 + octet_length(e.body)) FROM events e WHERE e.task_id = t.id), 0)
			+ coalesce((SELECT sum(octet_length(m.task_id) + 8 + octet_length(m.body)) FROM messages m WHERE m.task_id = t.id), 0)
			+ coalesce((SELECT sum(octet_length(a.task_id) + 8 + octet_length(a.body)) FROM artifacts a WHERE a.task_id = t.id), 0)
			+ coalesce((SELECT sum(octet_length(k.owner) + octet_length(k.message_id) + octet_length(k.task_id) + 32)
				FROM idem k WHERE k.task_id = t.id), 0) AS counted
			FROM tasks t) x WHERE stored <> counted`},
	{"every owner's usage is what its tasks take", `SELECT encode(coalesce(u.owner, t.owner), 'escape') FROM
		(SELECT owner, sum(tasks) AS n, sum(bytes) AS b FROM usage GROUP BY owner) u
		FULL JOIN (SELECT owner, count(*) AS n, sum(stored) AS b FROM tasks GROUP BY owner) t ON u.owner = t.owner
		WHERE coalesce(u.n, 0) <> coalesce(t.n, 0) OR coalesce(u.b, 0) <> coalesce(t.b, 0)`},
	{"every artifact's stored bytes are what its rows take", `SELECT encode(t.id, 'escape') || ' artifact ' || x.i FROM tasks t,
		unnest(t.art_stored) WITH ORDINALITY AS x(stored, i)
		WHERE x.stored <> coalesce((SELECT sum(octet_length(a.task_id) + 8 + octet_length(a.body)) FROM artifacts a
			WHERE a.task_id = t.id AND a.i = x.i - 1), 0)`},
}

// Check runs the store's consistency checks and returns what each found
// wrong ("" for none), or the error of one that could not run.
func (s *Store) Check(ctx context.Context) ([]string, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	var problems []string
	for _, c := range checks {
		rows, err := s.pool.Query(ctx, c.sql)
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", c.name, err)
		}
		for rows.Next() {
			var where string
			if err := rows.Scan(&where); err != nil {
				rows.Close()
				return nil, fmt.Errorf("check %s: %w", c.name, err)
			}
			problems = append(problems, c.name+": not at "+where)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("check %s: %w", c.name, err)
		}
	}
	return problems, nil
}
