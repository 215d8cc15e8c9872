package pgstore

import "context"

// Schema 3 holds a small new task's first events, messages and artifacts
// in its row. A replica of schema 2 still running beside newer ones, as a
// rolling upgrade has them for a while (docs/replicas.md), reads only the
// tables: it would not see such a task's history, artifacts or events.
// So while a replica of schema 2 holds a live lease, a store writes new
// tasks as schema 2 did, which both read; each replica's lease says the
// schema of the a2ad holding it (leases.schema: 2 for one that predates
// the column, which it never writes). An older a2ad refuses to start on a
// newer schema, so once the last one has stopped (its lease deleted) or
// lapsed, only newer ones hold leases: every store sees that at its next
// heartbeat, and writes one row a task from then on.

// oldReadersQuery tells whether a replica that reads only the tables (of
// schema 2, before schema 3) holds a live lease.
const oldReadersQuery = `SELECT EXISTS (SELECT FROM leases WHERE schema < 3 AND until > now())`

// readOldReaders sets s.oldReaders from the leases. A store that cannot
// tell keeps what it knew (at Open: that there are none).
func (s *Store) readOldReaders(ctx context.Context) error {
	var old bool
	if err := s.pool.QueryRow(ctx, oldReadersQuery).Scan(&old); err != nil {
		return err
	}
	s.oldReaders.Store(old)
	return nil
}
