package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
	"github.com/a2ad/a2ad/tasks/record"
)

var (
	bucketTasks  = []byte("tasks")
	bucketActive = []byte("active")
	bucketOwners = []byte("owners")
	bucketIdem   = []byte("idem")
	bucketExpiry = []byte("expiry")
	bucketMeta   = []byte("meta")

	keySchema    = []byte("schema")
	keyMigrating = []byte("migrating")
)

// layout is what the engine is told of the file: its buckets, in the
// order a log record names them by (never to change: the records of an
// a2ad before name the same), and those the engine reads itself.
var layout = engine.Layout{
	Buckets: [][]byte{bucketTasks, bucketBody, bucketActive, bucketOwners, bucketIdem, bucketExpiry, bucketMeta, bucketOutbox, bucketDead, bucketRecent, bucketCounts, bucketPending, bucketDue, bucketUsage},
	Meta:    bucketMeta,
	Named:   bucketTasks,
	Fills:   map[string]float64{"tasks": appendFill, "body": appendFill, "owners": appendFill, "recent": appendFill, "outbox": appendFill, "expiry": appendFill, "active": appendFill},
	// What a skipped op counted is not stored: Open counts each owner's
	// bytes again.
	Dropped: func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyUsage) },
}

// wrap passes bbolt transaction tx through the engine's Tx: for
// migrations and the offline tools, which read the file itself.
func wrap(tx *bolt.Tx) *engine.Tx { return engine.Wrap(tx, &layout) }

// update runs fn in the engine's write transaction; the engine's errors
// become the store's (fromEngine).
func (s *Store) update(ctx context.Context, fn func(tx *engine.Tx) error) error {
	return fromEngine(s.db.Update(ctx, fn))
}

// view runs fn on a consistent snapshot of the store.
func (s *Store) view(fn func(*engine.Tx) error) error { return s.db.View(fn) }

// Flush writes every durable change to the bbolt file (a checkpoint) and
// returns when it is there: for whoever reads the file itself (DB, a
// backup).
func (s *Store) Flush() error { return fromEngine(s.db.Flush()) }

// Closed reports whether Close has begun.
func (s *Store) Closed() bool { return s.db.Closed() }

// ErrLocked is returned by Open when another process holds the file.
var ErrLocked = errors.New("store file is in use by another process (is another a2ad running on it?)")

// Options tune the store. The zero value is usable.
type Options struct {
	// LockTimeout bounds the wait for the file lock; default 2s.
	LockTimeout time.Duration
	// MaxBatch caps the writes grouped into one commit; default 256.
	MaxBatch int
	// InitialMmapSize avoids remapping (which stalls readers) while the
	// file grows; default 256 MiB of address space.
	InitialMmapSize int
	// NoSync skips fsync. For benchmarks that measure everything else
	// only; a2ad never sets it.
	NoSync bool
	// OnCommit, when set, is told of each commit: how many writes it
	// grouped (they share its one fsync) and how long it took, fsync
	// included. It runs on the single writer: it must be quick.
	OnCommit func(writes int, d time.Duration)
	// CheckpointEvery is how often changes kept in memory (and in the
	// write-ahead log) are written to the file; default 500ms. Each
	// checkpoint rewrites the last pages of every bucket it touches: at
	// 100ms a2ad spent 20% more CPU a request (BENCHMARKS.md).
	CheckpointEvery time.Duration
	// CheckpointBytes starts a checkpoint early once that much is kept in
	// memory; default 16 MiB (so memory holds at most about twice that:
	// the changes being checkpointed, and those since).
	CheckpointBytes int64
	// WALSegmentBytes is the size of a write-ahead log segment; default
	// 16 MiB.
	WALSegmentBytes int64
	// OnCheckpointError, when set, is told of a checkpoint that failed
	// (it is tried again). It runs on the writer: it must be quick.
	OnCheckpointError func(error)
	// OnTransition, when set, is told of each committed write that
	// changed a task's state; from is "" for a new task. It must be
	// quick.
	OnTransition func(from, to a2a.TaskState)
}

// Store is a tasks.Store on a bbolt file: the task layout (layout.go)
// over the engine (package engine), which makes writes durable in its
// write-ahead log and checkpoints them to the file.
type Store struct {
	db    *engine.DB
	moved func(from, to a2a.TaskState)
	lease leases // runners and leases (leases.go)

	onOutbox atomic.Pointer[func()] // called after a commit that queued push deliveries
}

// SetOutboxHook sets fn to be called after each commit that queued push
// deliveries (the sender's Wake). fn must not block.
func (s *Store) SetOutboxHook(fn func()) { s.onOutbox.Store(&fn) }

func (s *Store) queued(e *encoded) {
	if len(e.deliveries) > 0 {
		if fn := s.onOutbox.Load(); fn != nil {
			(*fn)()
		}
	}
}

// Store is a whole tasks.Backend.
var _ tasks.Backend = (*Store)(nil)

// Open opens or creates the store at path. A file another process holds
// is ErrLocked once opts.LockTimeout passes; a file replaced while Open
// waited for it is opened again. A file that is cut short, or whose
// pages bbolt cannot read at open or while the store is set up (its
// schema migrated), is a *DamagedError (ErrDamaged).
func Open(path string, opts Options) (_ *Store, err error) {
	var db *bolt.DB
	// A damaged page makes bbolt panic, or fault, in here: a migration
	// reads every task.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if engine.Recovered(recover(), path, &err) && db != nil {
			_ = db.Close()
		}
	}()
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.InitialMmapSize <= 0 {
		opts.InitialMmapSize = 256 << 20
	}
	db, err = openDB(path, 0o600, &bolt.Options{
		Timeout:         opts.LockTimeout,
		InitialMmapSize: opts.InitialMmapSize,
		FreelistType:    bolt.FreelistMapType,
		NoSync:          opts.NoSync,
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open task store %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, openError(path, err)
	}
	err = prepare(db)
	var wal *engine.Log
	if err == nil {
		wal, _, err = engine.Recover(db, &layout, engine.Mode{Server: true, SegmentBytes: opts.WALSegmentBytes, NoSync: opts.NoSync})
	}
	if err == nil {
		err = migrate(db)
	}
	if err == nil {
		err = db.Update(func(btx *bolt.Tx) error {
			tx := wrap(btx)
			if tx.Bucket(bucketMeta).Get(keyUsage) != nil {
				return nil
			}
			if err := rebuildUsage(tx); err != nil {
				return fmt.Errorf("compute stored bytes per owner: %w", err)
			}
			return nil
		})
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open task store %s: %w", path, err)
	}
	return &Store{
		db: engine.Start(db, &layout, wal, engine.Options{
			MaxBatch:          opts.MaxBatch,
			OnCommit:          opts.OnCommit,
			CheckpointEvery:   opts.CheckpointEvery,
			CheckpointBytes:   opts.CheckpointBytes,
			OnCheckpointError: opts.OnCheckpointError,
		}),
		moved: opts.OnTransition,
	}, nil
}

// prepare creates the buckets of the file of db, and its schema version
// if it is new, and marks its log open (engine.Prepare); a log gone where
// the file says a server had it open is refused first.
func prepare(db *bolt.DB) error {
	return engine.Prepare(db, &layout, func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta.Get(keySchema) == nil {
			return meta.Put(keySchema, []byte(schemaVersion))
		}
		return nil
	})
}

// Close waits for queued writes to commit, then closes the file.
func (s *Store) Close() error { return fromEngine(s.db.Close()) }

// DB exposes the bbolt handle for read-only inspection in tests and tools,
// with every change checkpointed into it first.
func (s *Store) DB() *bolt.DB {
	_ = s.Flush()
	return s.db.Bolt()
}

// Counts returns the number of commits and of writes grouped into them.
func (s *Store) Counts() (commits, writes uint64) { return s.db.Counts() }

// appendFill fills pages of the buckets whose keys mostly grow (task ids
// are time-ordered) further than bbolt's default half, so they split less.
const appendFill = 0.9

// Create implements tasks.Store.
func (s *Store) Create(ctx context.Context, key tasks.IdemKey, rec *tasks.Record, events []tasks.Event) (*tasks.Record, bool, error) {
	r := *rec
	r.MessageIDs = append(append([]string(nil), rec.MessageIDs...), key.MessageID)
	if err := checkConfigIDs(&r, nil); err != nil {
		return nil, false, err
	}
	e, err := encodeNew(&r, events, record.IDsOf(&r.Task))
	if err != nil {
		return nil, false, err
	}
	if e.deliveries, err = deliveries(&r, ""); err != nil {
		return nil, false, err
	}
	size := int64(len(r.Task.ID)+len(e.value)) + e.body.added() + idemBytes(&key, r.Task.ID) + indexBytes(r.Owner, r.Task.ID)
	var (
		boundTo string
		wrote   bool
	)
	err = s.update(ctx, func(tx *engine.Tx) error {
		boundTo = ""
		if id, hash, ok := getIdem(tx, key.Owner, key.MessageID); ok {
			if hash != key.Hash {
				return tasks.ErrMessageIDReused
			}
			boundTo = id
			return nil
		}
		if tx.Bucket(bucketTasks).Get([]byte(r.Task.ID)) != nil {
			return fmt.Errorf("create task %s: id already exists", r.Task.ID)
		}
		if err := checkQuota(tx, r.Owner, key.Quota, true, size); err != nil {
			return err
		}
		if err := addUsage(tx, r.Owner, size); err != nil {
			return err
		}
		if err := putIdem(tx, key, r.Task.ID); err != nil {
			return err
		}
		ob := tx.Bucket(bucketOwners)
		ob.FillPercent = appendFill
		if err := ob.Put(ownerKey(r.Owner, r.Task.ID), nil); err != nil {
			return err
		}
		if err := addCount(tx, r.Owner, 1); err != nil {
			return err
		}
		if err := e.put(tx, ""); err != nil {
			return err
		}
		s.lease.set(r.Task.ID, r.Runner)
		wrote = true
		return nil
	})
	if err != nil && wrote { // the commit failed
		s.lease.undo(r.Task.ID, r.Runner, "")
	}
	if err != nil {
		return nil, false, err
	}
	if boundTo == "" {
		s.queued(e)
		s.transition("", r.State())
	}
	if boundTo != "" {
		got, err := s.Get(ctx, key.Owner, boundTo, tasks.Whole)
		if errors.Is(err, tasks.ErrNotFound) {
			// Expired between the two reads: the key went with it.
			return s.Create(ctx, key, rec, events)
		}
		return got, false, err
	}
	return &r, true, nil
}

// Lookup implements tasks.Store.
func (s *Store) Lookup(ctx context.Context, key tasks.IdemKey) (*tasks.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id, hash, bound, err := s.idem(&key)
	switch {
	case err != nil:
		return nil, err
	case !bound:
		return nil, tasks.ErrNotFound
	case hash != key.Hash:
		return nil, tasks.ErrMessageIDReused
	}
	return s.Get(ctx, key.Owner, id, tasks.Whole)
}

// Get implements tasks.Store.
func (s *Store) Get(ctx context.Context, owner, id string, sc tasks.Scope) (*tasks.Record, error) {
	rt, err := s.read(ctx, owner, id, sc)
	if err != nil {
		return nil, err
	}
	r, _, err := rt.decode(id, false)
	if err != nil {
		return nil, err
	}
	r.Runner = s.lease.runner(id)
	return r, nil
}

// read copies task id of owner out of the store with what sc asks for
// (readTask: a foreign task is ErrNotOwner before anything of it is read).
func (s *Store) read(ctx context.Context, owner, id string, sc tasks.Scope) (*rawTask, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var rt *rawTask
	err := s.view(func(tx *engine.Tx) error {
		var err error
		rt, err = readTask(tx, owner, id, sc)
		return err
	})
	return rt, err
}

// errStale: the record changed between the read and the write.
var errStale = errors.New("stale record")

// errBound: the idempotency key was bound meanwhile.
var errBound = errors.New("idempotency key bound")

// Update implements tasks.Store. It reads the head (and what sc asks for),
// applies fn and encodes the change outside the writer, then writes it
// only if the head is still the one it read (optimistic concurrency); if
// not, it starts again, so fn may run more than once. What it writes is
// the new head, the events, and what fn added: appended messages and
// artifact chunks, each under a key of its own.
func (s *Store) Update(ctx context.Context, owner, id string, key *tasks.IdemKey, sc tasks.Scope, fn tasks.UpdateFunc) (*tasks.Record, []tasks.Event, bool, error) {
	for {
		rt, err := s.read(ctx, owner, id, sc)
		if err != nil {
			return nil, nil, false, err
		}
		r, arts, err := rt.decode(id, true)
		if err != nil {
			return nil, nil, false, err
		}
		runner := s.lease.runner(id)
		r.Runner = runner
		if key != nil {
			if dup, err := s.boundTo(key, id); err != nil || dup {
				if err != nil {
					return nil, nil, false, err
				}
				return r, nil, true, nil
			}
		}
		// fn gets the head: what sc asked for waits for the answer.
		read := r.Task
		r.Task.History, r.Task.Artifacts = nil, nil
		prev, listed := r.State(), listKey(r)
		had := r.PushConfigs // fn replaces the slice to change it
		evs, err := fn(r)
		if err != nil {
			return nil, nil, false, err
		}
		if err := checkConfigIDs(r, had); err != nil {
			return nil, nil, false, err
		}
		if evs == nil && key == nil {
			return tasks.Updated(r, &read, sc, nil), nil, false, nil // nothing changed
		}
		e, err := encodeChange(r, arts, evs, key)
		if err != nil {
			return nil, nil, false, err
		}
		e.listed = listed
		if e.deliveries, err = deliveries(r, prev); err != nil {
			return nil, nil, false, err
		}
		// What the change adds: the head's growth, the body's new keys
		// (less what they replace, counted in the transaction), the key.
		grow := int64(len(e.value) - len(rt.head))
		if key != nil {
			grow += idemBytes(key, id)
		}
		wrote := false
		err = s.update(ctx, func(tx *engine.Tx) error {
			if s.lease.runner(id) != runner {
				return errStale // taken over meanwhile
			}
			if err := putChange(tx, owner, id, rt.head, key, r.WriteQuota, grow, e, prev); err != nil {
				return err
			}
			s.lease.set(id, r.Runner)
			wrote = true
			return nil
		})
		if err != nil && wrote { // the commit failed
			s.lease.undo(id, r.Runner, runner)
		}
		switch {
		case errors.Is(err, errStale), errors.Is(err, errBound):
			continue
		case err != nil:
			return nil, nil, false, err
		}
		s.queued(e)
		s.transition(prev, r.State())
		r.ArtifactSizes = artifactSizes(e.arts)
		return tasks.Updated(r, &read, sc, evs), evs, false, nil
	}
}

// putChange writes change e of task id, read with head, in tx: errStale
// if the task changed since, errBound if key was bound meanwhile, a
// *tasks.QuotaError past key's quota, or, without a key, past q (the
// record's WriteQuota). grow is what the change adds besides the body's
// new keys.
func putChange(tx *engine.Tx, owner, id string, head []byte, key *tasks.IdemKey, q tasks.Quota, grow int64, e *encoded, prev a2a.TaskState) error {
	v := tx.Bucket(bucketTasks).Get([]byte(id))
	if v == nil {
		return tasks.ErrNotFound
	}
	// The whole head, not just its event sequence: a change of webhooks
	// (PushConfigs) adds no event but must not be lost.
	if !bytes.Equal(v, head) {
		return errStale
	}
	grow += e.body.growth(tx)
	if key != nil {
		if _, _, ok := getIdem(tx, key.Owner, key.MessageID); ok {
			return errBound
		}
		if err := checkQuota(tx, owner, key.Quota, false, grow); err != nil {
			return err
		}
		if err := putIdem(tx, *key, id); err != nil {
			return err
		}
	} else if err := checkQuota(tx, owner, q, false, grow); err != nil {
		return err
	}
	if err := addUsage(tx, owner, grow); err != nil {
		return err
	}
	return e.put(tx, prev)
}

// idem reads what key's message id is bound to: the task, and the hash
// of the message; bound is false if it is bound to none.
func (s *Store) idem(key *tasks.IdemKey) (id string, hash [32]byte, bound bool, err error) {
	err = s.view(func(tx *engine.Tx) error {
		id, hash, bound = getIdem(tx, key.Owner, key.MessageID)
		return nil
	})
	return id, hash, bound, err
}

// boundTo reports whether key is bound to task id already; a key bound to
// another task, or with another message, is ErrMessageIDReused.
func (s *Store) boundTo(key *tasks.IdemKey, id string) (bool, error) {
	bound, hash, exists, err := s.idem(key)
	switch {
	case err != nil:
		return false, err
	case !exists:
		return false, nil
	case hash != key.Hash || bound != id:
		return false, tasks.ErrMessageIDReused
	}
	return true, nil
}
