package tasks

import (
	"context"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

// Backend is the whole of what a2ad asks of a store, named once. A store
// is one package that implements it (tasks/boltstore: a bbolt file;
// tasks/pgstore: a PostgreSQL database that replicas share), checked
// beside its type:
//
//	var _ tasks.Backend = (*boltstore.Store)(nil)
//
// Its parts, by the role that uses them:
//
//   - Store (with Leases): the task service and the sweeper keep tasks,
//     their events, idempotency keys, webhooks and leases in it.
//   - Outbox: the push sender drains the deliveries that transitions
//     queue in the same commit (push.Outbox is this part).
//   - Gauges: the metrics and the operator count tasks and deliveries
//     (metrics.Outbox and admin.Outbox are subsets of it).
//   - Replay: the operator retries or drops a dead letter
//     (admin.DeadLetterOutbox is this part).
//   - Inspect: the operator's read-only view, which lists tasks and
//     dead letters (admin's Inspector).
//   - Lifecycle: the hook that wakes the push sender, and Close.
//
// A store may have more abilities, each a small interface that whoever
// needs it asserts: Shared and Claims (several a2ad processes on one
// store: the relay and the push sender find them), Writable (a store
// that can stop taking writes, for /readyz), Importer (the target of
// a2ad store migrate), and the admin listener's admin.Pinger (the
// readiness probe of a store across a network) and admin.BackupSource
// (the online backup of a store file).
//
// Tools that work on a store file no server holds (check, compact,
// repair, the offline backup and export of a bbolt file) are the
// command's, for the kinds the opener table marks as files.
//
// A third store is then: one package implementing Backend, one var _
// check beside it, one row in the opener table of tasks/stores (keyed by
// the scheme of the store URL), and the conformance suite run over it
// (storetest.Run).
type Backend interface {
	Store
	Outbox
	Gauges
	Replay
	// Inspect returns the operator's read-only view of the store, its
	// walks bounded by b (a zero bound is the store's default). It is
	// safe for concurrent use and stays usable while the store is open.
	Inspect(b InspectBounds) Inspector
	// SetOutboxHook sets fn to be called after each commit that queued
	// push deliveries (it wakes the push sender). fn must not block.
	SetOutboxHook(fn func())
	// Closed reports whether Close has begun.
	Closed() bool
	// Close closes the store; it then refuses writes with ErrClosed, and
	// a second Close returns nil.
	Close() error
}

// Gauges are the counts the metrics and the operator read of a store.
type Gauges interface {
	// OutboxDepth counts the deliveries waiting: at most one per webhook
	// of a task.
	OutboxDepth(ctx context.Context) (int, error)
	// DeadLetterCount counts the dead letters.
	DeadLetterCount(ctx context.Context) (int, error)
	// ActiveStates counts the tasks that are not terminal, by state.
	ActiveStates(ctx context.Context) (map[a2a.TaskState]int, error)
}

// Replay is what the operator changes of the dead letters, once a
// webhook's receiver is fixed. (They are listed by
// Inspector.DeadLetters.)
type Replay interface {
	// RetryDeadLetter puts dead letter id back in the outbox, due at now
	// with its attempts reset (it reports the task as it stands when it
	// is sent, and joins its webhook's waiting delivery if there is one),
	// wakes the sender and returns the letter; ErrDeadLetterNotFound if
	// there is none.
	RetryDeadLetter(ctx context.Context, id uint64, now time.Time) (DeadLetter, error)
	// DropDeadLetter deletes dead letter id and returns it;
	// ErrDeadLetterNotFound if there is none.
	DropDeadLetter(ctx context.Context, id uint64) (DeadLetter, error)
}

// InspectBounds bound the walks of an Inspector, so that no request reads
// a huge store whole; zero is the store's default.
type InspectBounds struct {
	// StateCount is the number of tasks above which Overview stops
	// counting terminal states (see Overview.ByState).
	StateCount int
	// Scan bounds the tasks one Inspector.Tasks call examines.
	Scan int
}

// Apply sets each bound of b that is set (above zero) on the limits a
// store's inspector holds: one rule for every store.
func (b InspectBounds) Apply(stateCount, scan *int) {
	if b.StateCount > 0 {
		*stateCount = b.StateCount
	}
	if b.Scan > 0 {
		*scan = b.Scan
	}
}

// The default bounds of an Inspector's walks.
const (
	// DefaultStateCountLimit is how many tasks Overview counts by state
	// at most.
	DefaultStateCountLimit = 100_000
	// DefaultScanLimit is how many tasks one Tasks call examines. It is
	// above the largest page (1000), so an unfiltered page always fills.
	DefaultScanLimit = 10_000
)

// Optional abilities: a Backend may have them; whoever needs one asserts
// it.

// Writable is a Backend that can stop taking writes while it runs (a full
// disk): nil while it takes them, or why not.
type Writable interface {
	Writable() error
}

// Importer is a Backend that takes what another exported (Exported), the
// target of a2ad store migrate. Each call is one transaction; an id or
// idempotency key it holds already is an error, never overwritten.
type Importer interface {
	Import(ctx context.Context, batch []*Exported) error
	ImportDeadLetters(ctx context.Context, ds []DeadLetter) error
}
