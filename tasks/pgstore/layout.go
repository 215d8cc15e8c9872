package pgstore

import (
	"context"

	"github.com/a2ad/a2ad/tasks/record"
)

// A replica of an older schema still running beside newer ones, as a
// rolling upgrade has them for a while (docs/replicas.md), reads what its
// schema wrote and nothing newer:
//   - schema 3 holds a small new task's first events, messages and
//     artifacts in its row; a replica of schema 2 reads only the tables,
//     and would not see such a task's history, artifacts or events;
//   - schema 4 writes record v2 (package record): messages without the
//     ids of their task, which a replica of schema 3 or older would
//     answer without them.
//
// So while a replica of an older schema holds a live lease, a store
// writes as that schema did, which both read; each replica's lease says
// the schema of the a2ad holding it (leases.schema: 2 for one that
// predates the column, which it never writes). An older a2ad refuses to
// start on a newer schema, so once the last one has stopped (its lease
// deleted) or lapsed, only newer ones hold leases: every store sees that
// at its next heartbeat, and writes as its own schema from then on.

// oldestQuery reads the oldest schema of an a2ad holding a live lease
// (NULL when none does).
const oldestQuery = `SELECT min(schema) FROM leases WHERE until > now()`

// setOldest records the oldest schema read by oldestQuery.
func (s *Store) setOldest(oldest *int32) {
	v := int32(SchemaVersion())
	if oldest != nil {
		v = min(v, *oldest)
	}
	s.oldest.Store(v)
}

// readOldest sets s.oldest from the leases. A store that cannot tell
// keeps what it knew (at Open: that there are none older).
func (s *Store) readOldest(ctx context.Context) error {
	var oldest *int32
	if err := s.pool.QueryRow(ctx, oldestQuery).Scan(&oldest); err != nil {
		return err
	}
	s.setOldest(oldest)
	return nil
}

// inline tells whether a new task's first rows may go in its row: no
// replica of schema 2 holds a live lease.
func (s *Store) inline() bool { return s.oldest.Load() >= 3 }

// idsOf returns what the messages of the task of in are written with:
// in (record v2) once no replica of schema 3 or older holds a live lease,
// none (record v1) until then.
func (s *Store) idsOf(in record.IDs) record.IDs {
	if s.oldest.Load() < 4 {
		return record.IDs{}
	}
	return in
}
