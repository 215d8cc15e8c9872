// Package pgstore is the tasks.Store kept in PostgreSQL, so that several
// a2ad processes can share one store. It passes the conformance suite of
// package storetest, as boltstore does.
//
// Tables (migrations/, created and migrated at Open; ids, owners and
// other strings a client chose are bytea, times Unix nanoseconds):
//
//	tasks         id → owner, context_id, state, function_id, terminal,
//	              version, seq, list_at, status_at, updated_at,
//	              history_len, the artifacts' index (art_*), stored,
//	              head (the record without what grows, package record), input;
//	              when small, its first events, messages and artifacts
//	              (events0, messages0, artifacts0)
//	events        (task_id, seq) → body: the task's stream
//	messages      (task_id, n) → body: history message n
//	artifacts     (task_id, i, j) → body: artifact i (j = 0), or parts
//	              appended to it (j > 0)
//	idem          (owner, message_id) → task_id, hash
//	usage         (owner, shard) → tasks, bytes: what owners store
//	outbox        id → task_id, config_id (unique together), seq,
//	              attempts, next_at, last_error, created_at, and the
//	              claim (claimed_by, claimed_until)
//	dead_letters  id → task_id, config_id, url, attempts, last_error,
//	              created_at, dead_at
//	a2ad_migrations  version → name, applied_at
//
// The views task_events, task_messages and task_artifacts read what a
// task's row holds and its tables' rows as one, and the reads go through
// them: a new task is two rows, its own and its key's (issue 31), and a
// task written before schema 3 has only rows.
//
// A task's webhooks are in its head: there are at most
// tasks.MaxPushConfigs, every transition reads them to queue its
// deliveries, and a change of them is a write of the task like any
// other, under its version.
//
// Every change is one transaction, committed before the method returns.
// A change of a task reads it, applies the change outside any
// transaction, then writes it only if its version is still the one read
// (optimistic concurrency), in one round trip: a pipelined batch the
// server runs as one implicit transaction, its UPDATE guarded by the
// version, so that no transaction stays open while a2ad waits (a key
// bound already, or a quota near its limit, takes a transaction that
// tells which). A change that lost a race to another writer,
// in this process or another, starts again, and one that keeps losing is
// refused with tasks.ErrConflict. Nothing is ever written over a change
// it did not read.
package pgstore
