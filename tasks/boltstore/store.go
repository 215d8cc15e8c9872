// Package boltstore is the tasks.Store kept in one bbolt file.
//
// Buckets, all created at open, with composite keys (big-endian numbers so
// they sort):
//
//	tasks   taskID                          → seq(8) Record JSON
//	events  taskID 0x00 seq(8)              → Event JSON
//	active  taskID                          → (empty) the non-terminal index
//	owners  len(owner) owner taskID         → (empty) the index by owner
//	idem    len(owner) owner messageID      → taskID 0x00 sha256(message)
//	expiry  updatedAt(8) taskID             → (empty) terminal tasks by age
//	recent  len(owner) owner listTime(8) taskID
//	                                        → statusTime(8) len(state) state contextID
//	                                          the listing index (list.go)
//	counts  len(owner) owner                → count(8) of owner's entries in recent
//	outbox  id(8)                           → push delivery JSON: task and webhook
//	                                          ids, attempts, schedule (outbox.go)
//	pending len(taskID) taskID configID     → id(8) seq(8): the one delivery
//	                                          pending per webhook of a task
//	due     nextAt(8) id(8)                 → (empty) deliveries by due time
//	dead    id(8)                           → dead letter JSON
//	usage   len(owner) owner                → bytes(8) the owner's tasks take (usage.go)
//	meta    "schema"                        → schema version ("4"; a "2" store
//	                                          gets recent and counts at open, a
//	                                          "2" or "3" one pending and due)
//	        "usage"                         → "1" once usage is kept;
//	                                          a store without it gets it at open
//
// Every change is one transaction. Writes from concurrent callers are
// grouped into one commit (and one fsync) by a single writer goroutine,
// without any added delay: whatever queued while the previous commit was
// syncing goes into the next one.
package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

var (
	bucketTasks  = []byte("tasks")
	bucketEvents = []byte("events")
	bucketActive = []byte("active")
	bucketOwners = []byte("owners")
	bucketIdem   = []byte("idem")
	bucketExpiry = []byte("expiry")
	bucketMeta   = []byte("meta")

	keySchema     = []byte("schema")
	schemaVersion = []byte("4")
	// schemaV2 is the schema before the listing index, schemaV3 the one
	// whose outbox held a copy of the task per delivery; Open migrates
	// both.
	schemaV2 = []byte("2")
	schemaV3 = []byte("3")
)

// Closed reports whether Close has begun.
func (s *Store) Closed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

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
	// OnTransition, when set, is told of each committed write that
	// changed a task's state; from is "" for a new task. It must be
	// quick.
	OnTransition func(from, to a2a.TaskState)
}

// Store is a tasks.Store on a bbolt file.
type Store struct {
	db       *bolt.DB
	maxBatch int
	onCommit func(writes int, d time.Duration)
	moved    func(from, to a2a.TaskState)

	writes chan *write
	stop   chan struct{}
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
	mu        sync.RWMutex // held for reading by senders to writes; closed under the write lock
	closed    bool

	stats Stats

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

// Stats counts commits, for metrics and benchmarks.
type Stats struct {
	mu      sync.Mutex
	Commits uint64 // transactions committed
	Writes  uint64 // writes grouped into them
}

var _ tasks.Store = (*Store)(nil)

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
		if recovered(recover(), path, &err) && db != nil {
			_ = db.Close()
		}
	}()
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
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
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketTasks, bucketEvents, bucketActive, bucketOwners, bucketIdem, bucketExpiry, bucketMeta, bucketOutbox, bucketDead, bucketRecent, bucketCounts, bucketPending, bucketDue, bucketUsage} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get(keySchema); {
		case v == nil:
			if err := meta.Put(keySchema, schemaVersion); err != nil {
				return err
			}
		case bytes.Equal(v, schemaV2):
			if err := migrateListing(tx); err != nil {
				return fmt.Errorf("migrate store schema 2 to 3: %w", err)
			}
			fallthrough
		case bytes.Equal(v, schemaV3):
			if err := migrateOutbox(tx); err != nil {
				return fmt.Errorf("migrate store schema 3 to 4: %w", err)
			}
			if err := meta.Put(keySchema, schemaVersion); err != nil {
				return err
			}
		case !bytes.Equal(v, schemaVersion):
			return fmt.Errorf("store schema version %q is not supported (want %q)", v, schemaVersion)
		}
		if meta.Get(keyUsage) == nil {
			if err := rebuildUsage(tx); err != nil {
				return fmt.Errorf("compute stored bytes per owner: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open task store %s: %w", path, err)
	}
	s := &Store{
		db:       db,
		maxBatch: opts.MaxBatch,
		onCommit: opts.OnCommit,
		moved:    opts.OnTransition,
		writes:   make(chan *write, opts.MaxBatch),
		stop:     make(chan struct{}),
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.writer() }()
	return s, nil
}

// Close waits for queued writes to commit, then closes the file.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.stop)
		s.mu.Unlock()
		s.wg.Wait()
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}

// DB exposes the bbolt handle for read-only inspection in tests and tools.
func (s *Store) DB() *bolt.DB { return s.db }

// Counts returns the number of commits and of writes grouped into them.
func (s *Store) Counts() (commits, writes uint64) {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	return s.stats.Commits, s.stats.Writes
}

// write is one queued change. fn may run more than once: when a grouped
// transaction fails, it is rolled back and the other writes run again.
type write struct {
	fn   func(tx *bolt.Tx) error
	done chan error
}

var writePool = sync.Pool{New: func() any { return &write{done: make(chan error, 1)} }}

// update runs fn in a write transaction shared with other concurrent
// writes, and returns when it is committed (fsynced) or failed.
func (s *Store) update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := writePool.Get().(*write)
	w.fn = fn
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		writePool.Put(w)
		return tasks.ErrClosed
	}
	s.writes <- w
	s.mu.RUnlock()
	// The write is queued: wait for it even if ctx ends, so that the
	// caller learns whether it committed.
	err := <-w.done
	w.fn = nil
	writePool.Put(w)
	return err
}

func (s *Store) writer() {
	batch := make([]*write, 0, s.maxBatch)
	for {
		select {
		case w := <-s.writes:
			batch = append(batch[:0], w)
		case <-s.stop:
			// Senders hold mu.RLock while sending and closed is set
			// under the write lock, so nothing more can arrive.
			for {
				select {
				case w := <-s.writes:
					s.commit([]*write{w})
				default:
					return
				}
			}
		}
	fill:
		for len(batch) < s.maxBatch {
			select {
			case w := <-s.writes:
				batch = append(batch, w)
			default:
				break fill
			}
		}
		s.commit(batch)
	}
}

// commit runs the writes in one transaction. If one fails, the
// transaction is rolled back, the failed write gets its error, and the
// others run again without it.
func (s *Store) commit(batch []*write) {
	for len(batch) > 0 {
		failed := -1
		start := time.Now()
		err := s.updateTx(func(tx *bolt.Tx) error {
			for i, w := range batch {
				if err := w.fn(tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if err == nil {
			s.stats.mu.Lock()
			s.stats.Commits++
			s.stats.Writes += uint64(len(batch))
			s.stats.mu.Unlock()
			if s.onCommit != nil {
				s.onCommit(len(batch), time.Since(start))
			}
			for _, w := range batch {
				w.done <- nil
			}
			return
		}
		if failed < 0 { // the commit itself failed: every write failed
			for _, w := range batch {
				w.done <- err
			}
			return
		}
		batch[failed].done <- err
		batch = append(batch[:failed:failed], batch[failed+1:]...)
	}
}

// A record's value is its sequence number (8 bytes, big-endian) and its
// JSON. The writer compares the sequence to detect a change made since
// the record was read, without decoding it: all JSON work happens in the
// callers' goroutines, outside the single writer.

// encoded is a record and its new events, ready to write.
type encoded struct {
	rec        *tasks.Record
	value      []byte
	events     [][]byte
	deliveries []queuedDelivery // push deliveries the transition queues
	listed     []byte           // the task's key in recent before the change; nil for a new task
	evBytes    int64            // what the events take (eventBytes)
}

// encode assigns the events' sequence numbers after rec's and encodes
// rec and the events. rec.Seq ends at the last event's sequence.
func encode(rec *tasks.Record, events []tasks.Event) (*encoded, error) {
	e := &encoded{rec: rec, events: make([][]byte, len(events))}
	for i := range events {
		rec.Seq++
		events[i].Seq = rec.Seq
		b, err := appendEvent(make([]byte, 0, 256), &events[i])
		if err != nil {
			return nil, fmt.Errorf("encode event: %w", err)
		}
		e.events[i] = b
		e.evBytes += eventBytes(rec.Task.ID, b)
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 1024), rec.Seq)
	v, err := appendRecord(v, rec)
	if err != nil {
		return nil, fmt.Errorf("encode task: %w", err)
	}
	e.value = v
	return e, nil
}

// put writes e and keeps the active and expiry indexes in step with the
// state; prev is the state before ("" for a new task).
func (e *encoded) put(tx *bolt.Tx, prev a2a.TaskState) error {
	rec := e.rec
	id := []byte(rec.Task.ID)
	evb := tx.Bucket(bucketEvents)
	evb.FillPercent = appendFill
	first := rec.Seq - uint64(len(e.events))
	for i, b := range e.events {
		if err := evb.Put(eventKey(rec.Task.ID, first+uint64(i)+1), b); err != nil {
			return err
		}
	}
	tb := tx.Bucket(bucketTasks)
	tb.FillPercent = appendFill
	if err := tb.Put(id, e.value); err != nil {
		return err
	}
	if err := putListing(tx, e.listed, rec); err != nil {
		return err
	}
	if err := putDeliveries(tx, e.deliveries); err != nil {
		return err
	}
	state := rec.State()
	if state.Terminal() {
		if err := tx.Bucket(bucketActive).Delete(id); err != nil {
			return err
		}
		if !prev.Terminal() {
			xb := tx.Bucket(bucketExpiry)
			xb.FillPercent = appendFill
			return xb.Put(expiryKey(rec.UpdatedAt, rec.Task.ID), nil)
		}
		return nil
	}
	if prev == "" || prev.Terminal() {
		ab := tx.Bucket(bucketActive)
		ab.FillPercent = appendFill
		return ab.Put(id, nil)
	}
	return nil
}

// appendFill fills pages of the buckets whose keys mostly grow (task ids
// are time-ordered) further than bbolt's default half, so they split less.
const appendFill = 0.9

// Create implements tasks.Store.
func (s *Store) Create(ctx context.Context, key tasks.IdemKey, rec *tasks.Record, events []tasks.Event) (*tasks.Record, bool, error) {
	r := *rec
	r.MessageIDs = append(append([]string(nil), rec.MessageIDs...), key.MessageID)
	e, err := encode(&r, events)
	if err != nil {
		return nil, false, err
	}
	if e.deliveries, err = deliveries(&r, ""); err != nil {
		return nil, false, err
	}
	size := int64(len(r.Task.ID)+len(e.value)) + e.evBytes + idemBytes(&key, r.Task.ID) + indexBytes(r.Owner, r.Task.ID)
	var boundTo string
	err = s.update(ctx, func(tx *bolt.Tx) error {
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
		return e.put(tx, "")
	})
	if err != nil {
		return nil, false, err
	}
	if boundTo == "" {
		s.queued(e)
		s.transition("", r.State())
	}
	if boundTo != "" {
		got, err := s.Get(ctx, key.Owner, boundTo)
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
	var (
		id    string
		hash  [32]byte
		bound bool
	)
	err := s.view(func(tx *bolt.Tx) error {
		id, hash, bound = getIdem(tx, key.Owner, key.MessageID)
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case !bound:
		return nil, tasks.ErrNotFound
	case hash != key.Hash:
		return nil, tasks.ErrMessageIDReused
	}
	return s.Get(ctx, key.Owner, id)
}

// Get implements tasks.Store.
func (s *Store) Get(ctx context.Context, owner, id string) (*tasks.Record, error) {
	r, _, err := s.getRaw(ctx, owner, id)
	return r, err
}

// getRaw is Get, with the stored value it decoded.
func (s *Store) getRaw(ctx context.Context, owner, id string) (*tasks.Record, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var v []byte
	err := s.view(func(tx *bolt.Tx) error {
		v = append(v, tx.Bucket(bucketTasks).Get([]byte(id))...)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if v == nil {
		return nil, nil, tasks.ErrNotFound
	}
	r, err := decodeRecord(id, v)
	if err != nil {
		return nil, nil, err
	}
	if r.Owner != owner {
		return nil, nil, tasks.ErrNotOwner
	}
	return r, v, nil
}

// errStale: the record changed between the read and the write.
var errStale = errors.New("stale record")

// errBound: the idempotency key was bound meanwhile.
var errBound = errors.New("idempotency key bound")

// Update implements tasks.Store. It reads the record, applies fn and
// encodes the result outside the writer, then writes it only if the
// record is still at the sequence it read (optimistic concurrency); if
// not, it starts again, so fn may run more than once.
func (s *Store) Update(ctx context.Context, owner, id string, key *tasks.IdemKey, fn tasks.UpdateFunc) (*tasks.Record, []tasks.Event, bool, error) {
	for {
		r, read, err := s.getRaw(ctx, owner, id)
		if err != nil {
			return nil, nil, false, err
		}
		if key != nil {
			if dup, err := s.boundTo(key, id); err != nil || dup {
				return r, nil, dup, err
			}
		}
		prev, listed := r.State(), listKey(r)
		evs, err := fn(r)
		if err != nil {
			return nil, nil, false, err
		}
		if evs == nil && key == nil {
			return r, nil, false, nil // nothing changed
		}
		if key != nil {
			r.MessageIDs = append(r.MessageIDs, key.MessageID)
		}
		e, err := encode(r, evs)
		if err != nil {
			return nil, nil, false, err
		}
		e.listed = listed
		if e.deliveries, err = deliveries(r, prev); err != nil {
			return nil, nil, false, err
		}
		grow := int64(len(e.value)-len(read)) + e.evBytes
		if key != nil {
			grow += idemBytes(key, id)
		}
		err = s.update(ctx, func(tx *bolt.Tx) error {
			v := tx.Bucket(bucketTasks).Get([]byte(id))
			if v == nil {
				return tasks.ErrNotFound
			}
			// The whole value, not just its event sequence: a change of
			// webhooks (PushConfigs) adds no event but must not be lost.
			if !bytes.Equal(v, read) {
				return errStale
			}
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
			}
			if err := addUsage(tx, owner, grow); err != nil {
				return err
			}
			return e.put(tx, prev)
		})
		switch {
		case errors.Is(err, errStale), errors.Is(err, errBound):
			continue
		case err != nil:
			return nil, nil, false, err
		}
		s.queued(e)
		s.transition(prev, r.State())
		return r, evs, false, nil
	}
}

// boundTo reports whether key is bound to task id already; a key bound to
// another task, or with another message, is ErrMessageIDReused.
func (s *Store) boundTo(key *tasks.IdemKey, id string) (bool, error) {
	var (
		bound  string
		hash   [32]byte
		exists bool
	)
	err := s.view(func(tx *bolt.Tx) error {
		bound, hash, exists = getIdem(tx, key.Owner, key.MessageID)
		return nil
	})
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

// transition tells OnTransition of a committed change of state.
func (s *Store) transition(from, to a2a.TaskState) {
	if s.moved != nil && from != to {
		s.moved(from, to)
	}
}

// ActiveStates counts the tasks that are not terminal, by state. It reads
// the non-terminal index and decodes only each task's state; the counts
// of terminal tasks would take a read of every task, so it has none.
func (s *Store) ActiveStates(ctx context.Context) (map[a2a.TaskState]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make(map[a2a.TaskState]int)
	err := s.view(func(tx *bolt.Tx) error {
		tb := tx.Bucket(bucketTasks)
		return tx.Bucket(bucketActive).ForEach(func(k, _ []byte) error {
			v := tb.Get(k)
			if len(v) < 8 {
				return fmt.Errorf("active task %s: no record", k)
			}
			var r struct {
				Task struct {
					Status struct {
						State a2a.TaskState `json:"state"`
					} `json:"status"`
				} `json:"task"`
			}
			if err := json.Unmarshal(v[8:], &r); err != nil {
				return fmt.Errorf("active task %s: %w", k, err)
			}
			out[r.Task.Status.State]++
			return nil
		})
	})
	return out, err
}

// Active implements tasks.Store.
func (s *Store) Active(ctx context.Context) ([]*tasks.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*tasks.Record
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketActive).ForEach(func(k, _ []byte) error {
			r, err := getRecord(tx, string(k))
			if err != nil {
				return fmt.Errorf("active task %s: %w", k, err)
			}
			out = append(out, r)
			return nil
		})
	})
	return out, err
}

// Events implements tasks.Store.
func (s *Store) Events(ctx context.Context, id string, after uint64) ([]tasks.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []tasks.Event
	err := s.view(func(tx *bolt.Tx) error {
		prefix := append([]byte(id), 0)
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(eventKey(id, after+1)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var e tasks.Event
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode event %x: %w", k, err)
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// Expire implements tasks.Store. It writes nothing when nothing has
// expired.
func (s *Store) Expire(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	end := expiryKey(cutoff, "")
	var due bool
	if err := s.view(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketExpiry).Cursor().First()
		due = k != nil && bytes.Compare(k, end) < 0
		return nil
	}); err != nil || !due {
		return 0, err
	}
	var n int
	err := s.update(ctx, func(tx *bolt.Tx) error {
		n = 0
		c := tx.Bucket(bucketExpiry).Cursor()
		var victims [][]byte
		for k, _ := c.First(); k != nil && bytes.Compare(k, end) < 0 && len(victims) < limit; k, _ = c.Next() {
			victims = append(victims, append([]byte(nil), k...))
		}
		for _, k := range victims {
			if err := deleteTask(tx, string(k[8:])); err != nil {
				return err
			}
			if err := tx.Bucket(bucketExpiry).Delete(k); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

func deleteTask(tx *bolt.Tx, id string) error {
	r, err := getRecord(tx, id)
	if errors.Is(err, tasks.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	// What the task took is counted as it is deleted (storedSize).
	size := int64(len(id)+len(tx.Bucket(bucketTasks).Get([]byte(id)))) + indexBytes(r.Owner, id)
	ib := tx.Bucket(bucketIdem)
	for _, m := range r.MessageIDs {
		k := idemKey(r.Owner, m)
		if v := ib.Get(k); v != nil {
			size += int64(len(k) + len(v))
		}
		if err := ib.Delete(k); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketOwners).Delete(ownerKey(r.Owner, id)); err != nil {
		return err
	}
	if err := deleteListing(tx, r); err != nil {
		return err
	}
	if err := deleteDeliveries(tx, id); err != nil {
		return err
	}
	if err := tx.Bucket(bucketActive).Delete([]byte(id)); err != nil {
		return err
	}
	prefix := append([]byte(id), 0)
	c := tx.Bucket(bucketEvents).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Seek(prefix) {
		size += eventBytes(id, v)
		if err := c.Delete(); err != nil {
			return err
		}
	}
	if err := addUsage(tx, r.Owner, -size); err != nil {
		return err
	}
	return tx.Bucket(bucketTasks).Delete([]byte(id))
}

func getRecord(tx *bolt.Tx, id string) (*tasks.Record, error) {
	v := tx.Bucket(bucketTasks).Get([]byte(id))
	if v == nil {
		return nil, tasks.ErrNotFound
	}
	return decodeRecord(id, v)
}

func decodeRecord(id string, v []byte) (*tasks.Record, error) {
	if len(v) < 8 {
		return nil, fmt.Errorf("decode task %s: value of %d bytes", id, len(v))
	}
	var r tasks.Record
	if err := json.Unmarshal(v[8:], &r); err != nil {
		return nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	r.Seq = binary.BigEndian.Uint64(v)
	return &r, nil
}

func getIdem(tx *bolt.Tx, owner, messageID string) (taskID string, hash [32]byte, ok bool) {
	v := tx.Bucket(bucketIdem).Get(idemKey(owner, messageID))
	if len(v) < 33 {
		return "", hash, false
	}
	copy(hash[:], v[len(v)-32:])
	return string(v[:len(v)-33]), hash, true
}

func putIdem(tx *bolt.Tx, key tasks.IdemKey, taskID string) error {
	v := make([]byte, 0, len(taskID)+33)
	v = append(v, taskID...)
	v = append(v, 0)
	v = append(v, key.Hash[:]...)
	return tx.Bucket(bucketIdem).Put(idemKey(key.Owner, key.MessageID), v)
}

// lengthPrefixed keys keep one owner's keys from running into another's,
// whatever bytes the ids hold.
func lengthPrefixed(owner, rest string) []byte {
	k := binary.AppendUvarint(make([]byte, 0, 2+len(owner)+len(rest)), uint64(len(owner)))
	k = append(k, owner...)
	return append(k, rest...)
}

func idemKey(owner, messageID string) []byte { return lengthPrefixed(owner, messageID) }
func ownerKey(owner, taskID string) []byte   { return lengthPrefixed(owner, taskID) }

func eventKey(id string, seq uint64) []byte {
	k := make([]byte, 0, len(id)+9)
	k = append(k, id...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// expiryKey orders by time. Times before 1970 (a cutoff computed from a
// very long retention) clamp to zero rather than wrap to the far future.
func expiryKey(t time.Time, id string) []byte {
	ns := t.UnixNano()
	if ns < 0 || t.Year() < 1970 {
		ns = 0
	}
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(id)), uint64(ns))
	return append(k, id...)
}
