package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/tasks"
)

// Leases (tasks.Leases): a replica's lease is a row of leases, timed by
// the database's clock so that replicas on hosts whose clocks differ
// agree; a task's runner is its runner column, written with the rest of
// its row (rowCols), so that a replica that adopts an orphan does it in
// the Update that moves it, under the task's version: of replicas adopting
// one orphan at once, one wins.

var _ tasks.Leases = (*Store)(nil)

// staleLeases is how long the row of a lapsed lease is kept: a replica
// that is gone for longer has no row, which reads as a lapsed lease too.
const staleLeases = "1 hour"

// Heartbeat implements tasks.Leases. It also deletes the rows of leases
// that lapsed long ago, which the replicas that held them left behind.
func (s *Store) Heartbeat(ctx context.Context, replica string, ttl time.Duration) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		if ttl <= 0 {
			_, err := tx.Exec(ctx, `DELETE FROM leases WHERE replica = $1`, replica)
			return err
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO leases (replica, until, schema) VALUES ($1, now() + $2::bigint * interval '1 microsecond', $3)
			ON CONFLICT (replica) DO UPDATE SET until = EXCLUDED.until, schema = EXCLUDED.schema`, replica, ttl.Microseconds(), SchemaVersion())
		b.Queue(`DELETE FROM leases WHERE until < now() - interval '` + staleLeases + `'`)
		b.Queue(oldestQuery).QueryRow(func(row pgx.Row) error {
			var oldest *int32
			if err := row.Scan(&oldest); err != nil {
				return err
			}
			s.setOldest(oldest)
			return nil
		})
		return sendBatch(ctx, tx, b)
	})
}

// orphansQuery reads up to $1 orphans, from tasks_active: submitted or
// working tasks whose runner holds no lease, or one that lapsed at least
// $2 microseconds ago.
const orphansQuery = `SELECT ` + headCols + `, NULL::bytea[], NULL::bytea[], t.input FROM tasks t
	WHERE NOT t.terminal AND t.state IN ('submitted', 'working')
	AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.replica = t.runner
		AND l.until > now() - $2::bigint * interval '1 microsecond')
	LIMIT $1`

// Orphans implements tasks.Leases.
func (s *Store) Orphans(ctx context.Context, grace time.Duration, limit int) ([]*tasks.Record, error) {
	return s.records(ctx, orphansQuery, limit, grace.Microseconds())
}
