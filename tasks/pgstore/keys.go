package pgstore

import (
	"context"
	"errors"
	"hash/fnv"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/tasks"
)

// Idempotency keys (schema 4): the key a task is created with is held in
// the task's row (key_id, key_hash: one unique index entry, no row of its
// own); a key a later message binds to a task is a row of idem. Two tables
// share no unique index, so every bind of a key first takes the key's
// turn (keyLock), to the end of its transaction, then looks in both
// (task_keys) with a snapshot taken after the lock: of two binds of one
// key, the second sees the first's.

// keyLock is the first key of the advisory lock of an idempotency key
// (the second is keyHash): "keys" in ASCII.
const keyLock = 0x6b657973

// keyHash is the second key of key's advisory lock. Two keys of one hash
// only take turns.
func keyHash(key *tasks.IdemKey) int32 {
	h := fnv.New32a()
	h.Write([]byte(key.Owner))
	h.Write([]byte{0})
	h.Write([]byte(key.MessageID))
	return int32(h.Sum32())
}

const (
	// lockKey takes the turn of the key keyHash ($2) names.
	lockKey = `SELECT pg_advisory_xact_lock($1, $2)`
	// keyNotInIdem fails (division_by_zero) when key ($1, $2) is a row
	// of idem; keyNotInTasks when a task's row holds it. Each runs once
	// the key's turn is taken.
	keyNotInIdem  = `SELECT 1 / (NOT EXISTS (SELECT FROM idem WHERE owner = $1 AND message_id = $2))::integer`
	keyNotInTasks = `SELECT 1 / (NOT EXISTS (SELECT FROM tasks WHERE owner = $1 AND key_id = $2))::integer`
	// insertIdem binds a key to a task, in idem; it fails
	// (unique_violation) on a key idem holds already.
	insertIdem = `INSERT INTO idem (owner, message_id, task_id, hash) VALUES ($1, $2, $3, $4)`
	// lookupQuery reads what a key is bound to, wherever it is held.
	lookupQuery = `SELECT task_id, hash FROM task_keys WHERE owner = $1 AND message_id = $2`
)

// queueKeyTurn queues taking key's turn, then the check (keyNotInIdem or
// keyNotInTasks) that the table the bind does not write holds no such
// key, and returns the check's index in b.
func queueKeyTurn(b *pgx.Batch, key *tasks.IdemKey, check string) int {
	b.Queue(lockKey, int32(keyLock), keyHash(key))
	b.Queue(check, []byte(key.Owner), []byte(key.MessageID))
	return b.Len() - 1
}

// boundTo takes key's turn in tx and returns the task key is bound to,
// "" if none (the caller binds it, in the same transaction), or
// ErrMessageIDReused if it is bound for another message.
func boundTo(ctx context.Context, tx pgx.Tx, key *tasks.IdemKey) (string, error) {
	if _, err := tx.Exec(ctx, lockKey, int32(keyLock), keyHash(key)); err != nil {
		return "", err
	}
	bound, hash, err := lookup(ctx, tx, key)
	switch {
	case err != nil:
		return "", err
	case bound != "" && hash != key.Hash:
		return "", tasks.ErrMessageIDReused
	}
	return bound, nil
}

// querier is what both a pool and a transaction do.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

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
