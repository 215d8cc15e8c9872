package pgstore

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// checks are the store's invariants, each a query that returns a row for
// each place it does not hold: what is wrong there, as text.
var checks = []struct{ name, sql string }{
	{"every non-terminal task is in the active set (its terminal column agrees with its state)", `SELECT encode(id, 'escape') FROM tasks
		WHERE terminal <> (state IN ('completed', 'failed', 'canceled', 'rejected'))`},
	{"every task's seq is its last event's", `SELECT encode(t.id, 'escape') FROM tasks t
		WHERE t.seq <> coalesce((SELECT max(seq) FROM task_events e WHERE e.task_id = t.id), 0)
		   OR (SELECT count(*) FROM task_events e WHERE e.task_id = t.id) <> t.seq`},
	{"every task's history_len counts its messages", `SELECT encode(t.id, 'escape') FROM tasks t
		WHERE t.history_len <> (SELECT count(*) FROM task_messages m WHERE m.task_id = t.id)
		   OR t.history_len <> coalesce((SELECT max(n) + 1 FROM task_messages m WHERE m.task_id = t.id), 0)`},
	{"every task's artifact index counts its artifact rows", `SELECT encode(t.id, 'escape') FROM tasks t
		WHERE coalesce((SELECT sum(c) FROM unnest(t.art_chunks) c), 0) <> (SELECT count(*) FROM task_artifacts a WHERE a.task_id = t.id)
		   OR cardinality(t.art_ids) <> coalesce((SELECT max(i) + 1 FROM task_artifacts a WHERE a.task_id = t.id), 0)`},
	{"every row belongs to a task", `SELECT 'events of ' || encode(task_id, 'escape') FROM events WHERE task_id NOT IN (SELECT id FROM tasks)
		UNION ALL SELECT 'messages of ' || encode(task_id, 'escape') FROM messages WHERE task_id NOT IN (SELECT id FROM tasks)
		UNION ALL SELECT 'artifacts of ' || encode(task_id, 'escape') FROM artifacts WHERE task_id NOT IN (SELECT id FROM tasks)
		UNION ALL SELECT 'key of ' || encode(task_id, 'escape') FROM idem WHERE task_id NOT IN (SELECT id FROM tasks)
		UNION ALL SELECT 'delivery of ' || encode(task_id, 'escape') FROM outbox WHERE task_id NOT IN (SELECT id FROM tasks)`},
	{"every task's stored bytes are what its rows take", `SELECT encode(id, 'escape') || ': ' || stored || ' stored, ' || counted || ' counted'
		FROM (SELECT t.id, t.stored, octet_length(t.id) + octet_length(t.owner) + octet_length(t.head) + coalesce(octet_length(t.input), 0) + 96
			+ coalesce((SELECT sum(octet_length(e.task_id) + 8 + octet_length(e.body)) FROM task_events e WHERE e.task_id = t.id), 0)
			+ coalesce((SELECT sum(octet_length(m.task_id) + 8 + octet_length(m.body)) FROM task_messages m WHERE m.task_id = t.id), 0)
			+ coalesce((SELECT sum(octet_length(a.task_id) + 8 + octet_length(a.body)) FROM task_artifacts a WHERE a.task_id = t.id), 0)
			+ coalesce((SELECT sum(octet_length(k.owner) + octet_length(k.message_id) + octet_length(k.task_id) + 32)
				FROM idem k WHERE k.task_id = t.id), 0) AS counted
			FROM tasks t) x WHERE stored <> counted`},
	{"every owner's usage is what its tasks take", `SELECT encode(coalesce(u.owner, t.owner), 'escape') FROM
		(SELECT owner, sum(tasks) AS n, sum(bytes) AS b FROM usage GROUP BY owner) u
		FULL JOIN (SELECT owner, count(*) AS n, sum(stored) AS b FROM tasks GROUP BY owner) t ON u.owner = t.owner
		WHERE coalesce(u.n, 0) <> coalesce(t.n, 0) OR coalesce(u.b, 0) <> coalesce(t.b, 0)`},
	{"every artifact's stored bytes are what its rows take", `SELECT encode(t.id, 'escape') || ' artifact ' || x.i FROM tasks t,
		unnest(t.art_stored) WITH ORDINALITY AS x(stored, i)
		WHERE x.stored <> coalesce((SELECT sum(octet_length(a.task_id) + 8 + octet_length(a.body)) FROM task_artifacts a
			WHERE a.task_id = t.id AND a.i = x.i - 1), 0)`},
}

// Check runs the store's consistency checks and returns what each found
// wrong ("" for none), or the error of one that could not run.
func (s *Store) Check(ctx context.Context) ([]string, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	problems, err := s.checkIndexes(ctx)
	if err != nil {
		return nil, err
	}
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

// createIndex finds the indexes a migration makes.
var createIndex = regexp.MustCompile(`(?m)^CREATE (?:UNIQUE )?INDEX (\w+)`)

// Indexes are the names of the indexes the migrations make, which the
// store's queries need.
func Indexes() []string {
	ms, err := migrations()
	if err != nil {
		panic(err) // the embedded files are tested
	}
	var out []string
	for _, m := range ms {
		for _, sub := range createIndex.FindAllStringSubmatch(m.sql, -1) {
			out = append(out, sub[1])
		}
	}
	return out
}

// checkIndexes returns a problem for each index of Indexes that the
// schema lacks, or that the server marked invalid (a CREATE INDEX
// CONCURRENTLY that failed).
func (s *Store) checkIndexes(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.relname::text, i.indisvalid FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema()`)
	if err != nil {
		return nil, fmt.Errorf("check the indexes: %w", s.failed(err))
	}
	valid := map[string]bool{}
	for rows.Next() {
		var name string
		var ok bool
		if err := rows.Scan(&name, &ok); err != nil {
			rows.Close()
			return nil, fmt.Errorf("check the indexes: %w", err)
		}
		valid[name] = ok
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check the indexes: %w", s.failed(err))
	}
	var problems []string
	for _, name := range Indexes() {
		switch ok, found := valid[name]; {
		case !found:
			problems = append(problems, "every index the queries need is there: not "+name+" (missing)")
		case !ok:
			problems = append(problems, "every index the queries need is there: not "+name+" (invalid: REINDEX it)")
		}
	}
	return problems, nil
}

// Tables are the store's tables, as Counts names them.
var Tables = []string{"tasks", "events", "messages", "artifacts", "idem", "usage", "outbox", "dead_letters"}

// Count is the number of rows of one table.
type Count struct {
	Table string
	Rows  int64
}

// Counts returns the rows of each of Tables, in that order, read in one
// snapshot.
func (s *Store) Counts(ctx context.Context) ([]Count, error) {
	out := make([]Count, len(Tables))
	err := s.read(ctx, func(tx pgx.Tx) error {
		for i, t := range Tables {
			out[i].Table = t
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{t}.Sanitize()).Scan(&out[i].Rows); err != nil {
				return fmt.Errorf("count %s: %w", t, err)
			}
		}
		return nil
	})
	return out, err
}
