package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/record"
)

// ErrExists is Import's error for a task id, or an idempotency key, that
// the store has already: an import adds, it never overwrites.
var ErrExists = errors.New("exists already in the target store")

// Import writes tasks exported from another store (a2ad store migrate),
// all of them in one transaction: each with its events and their
// sequence numbers, history, artifacts and their chunks, input,
// idempotency keys and pending deliveries, and its owner's usage as this
// store counts it. A task id or key the store holds already is ErrExists,
// and nothing of the batch is written.
func (s *Store) Import(ctx context.Context, batch []*tasks.Exported) error {
	cs := make([]*change, len(batch))
	sizes := make([]int64, len(batch))
	for i, e := range batch {
		c, size, err := encodeImport(e, s.idsOf(record.IDsOf(&e.Record.Task)))
		if err != nil {
			return fmt.Errorf("import task %s: %w", e.Record.Task.ID, err)
		}
		cs[i], sizes[i] = c, size
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		usage := map[string][2]int64{}
		b := &pgx.Batch{}
		for i, e := range batch {
			r := cs[i].rec
			b.Queue(insertTask, cs[i].insertValues(sizes[i])...).
				Exec(func(tag pgconn.CommandTag) error {
					if tag.RowsAffected() == 0 {
						return fmt.Errorf("import task %s: %w", r.Task.ID, ErrExists)
					}
					return nil
				})
			cs[i].queueRows(b)
			queueImported(b, e)
			u := usage[r.Owner]
			usage[r.Owner] = [2]int64{u[0] + 1, u[1] + sizes[i]}
		}
		for owner, u := range usage {
			queueUsage(b, shardOf(tx.Conn()), owner, u[0], u[1])
		}
		return sendBatch(ctx, tx, b)
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return fmt.Errorf("import: %s: %w", pe.Detail, ErrExists)
	}
	return err
}

// encodeImport encodes e as a new task's rows, keeping its events'
// sequence numbers and its artifacts' chunks, and returns what it takes.
// Its messages leave ids out (see change.ids).
func encodeImport(e *tasks.Exported, ids record.IDs) (*change, int64, error) {
	r := *e.Record
	r.HistoryLen, r.ArtifactSizes = len(e.History), nil
	c := &change{rec: &r, ids: ids}
	for i := range e.Events {
		b, err := record.AppendEvent(nil, &e.Events[i], ids)
		if err != nil {
			return nil, 0, fmt.Errorf("encode event: %w", err)
		}
		c.evSeq, c.evBody = append(c.evSeq, int64(e.Events[i].Seq)), append(c.evBody, b)
		c.grow += rowBytes(r.Task.ID, b)
	}
	if err := c.encodeHistory(0, e.History); err != nil {
		return nil, 0, err
	}
	for i := range e.Artifacts {
		if err := c.importArtifact(int32(i), &e.Artifacts[i]); err != nil {
			return nil, 0, err
		}
	}
	if err := c.setInput(r.Input); err != nil {
		return nil, 0, err
	}
	c.grow += int64(len(r.Task.ID)+len(r.Owner)) + taskOverhead
	if err := c.encodeHead(); err != nil {
		return nil, 0, err
	}
	size := c.grow
	for _, k := range e.Keys {
		size += idemBytes(&tasks.IdemKey{Owner: r.Owner, MessageID: k.MessageID}, r.Task.ID)
	}
	return c, size, nil
}

// importArtifact writes artifact i and its chunks as rows (i, 0), (i, 1), ….
func (c *change) importArtifact(i int32, a *tasks.ExportedArtifact) error {
	x := &c.idx
	x.ids = append(x.ids, []byte(a.Artifact.ArtifactID))
	x.chunks = append(x.chunks, int32(1+len(a.Chunks)))
	x.bytes = append(x.bytes, tasks.PartBytes(a.Artifact.Parts))
	x.stored = append(x.stored, 0)
	if err := c.newArtifact(i, &a.Artifact); err != nil {
		return err
	}
	for j, ps := range a.Chunks {
		b, err := tasks.AppendCanonicalParts(nil, ps)
		if err != nil {
			return fmt.Errorf("encode artifact chunk: %w", err)
		}
		c.putArtifactRow(i, int32(j+1), b)
		x.bytes[i] += tasks.PartBytes(ps)
	}
	return nil
}

// queueImported queues the writes of e's idempotency keys and pending
// deliveries, which take new ids of this store's outbox.
func queueImported(b *pgx.Batch, e *tasks.Exported) {
	id, owner := []byte(e.Record.Task.ID), []byte(e.Record.Owner)
	for _, k := range e.Keys {
		b.Queue(`INSERT INTO idem (owner, message_id, task_id, hash) VALUES ($1, $2, $3, $4)`,
			owner, []byte(k.MessageID), id, k.Hash[:])
	}
	for _, d := range e.Deliveries {
		b.Queue(`INSERT INTO outbox (id, task_id, config_id, seq, attempts, next_at, last_error, created_at, claimed_until)
			VALUES (nextval('outbox_ids'), $1, $2, $3, $4, $5, $6, $7, 0)`,
			id, []byte(d.ConfigID), int64(d.Seq), int32(d.Attempts), nanos(d.NextAt), []byte(d.LastError), nanos(d.CreatedAt))
	}
}

// ImportDeadLetters writes dead letters exported from another store, in
// their order, in one transaction. Each takes a new id of this store's
// outbox: the ids of the other store could be this one's already.
func (s *Store) ImportDeadLetters(ctx context.Context, ds []tasks.DeadLetter) error {
	if len(ds) == 0 {
		return nil
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, d := range ds {
			b.Queue(`INSERT INTO dead_letters (id, task_id, config_id, url, attempts, last_error, created_at, dead_at)
				VALUES (nextval('outbox_ids'), $1, $2, $3, $4, $5, $6, $7)`,
				[]byte(d.TaskID), []byte(d.ConfigID), []byte(d.URL), int32(d.Attempts), []byte(d.LastError),
				nanos(d.CreatedAt), nanos(d.DeadAt))
		}
		return sendBatch(ctx, tx, b)
	})
}
