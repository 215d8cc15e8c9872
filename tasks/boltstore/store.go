// Package boltstore is the tasks.Store kept in one bbolt file.
//
// Buckets, all created at open, with composite keys (big-endian numbers so
// they sort):
//
//	tasks   taskID                          → Record JSON
//	events  taskID 0x00 seq(8)              → Event JSON
//	active  taskID                          → (empty) the non-terminal index
//	owners  len(owner) owner taskID         → (empty) the index by owner
//	idem    len(owner) owner messageID      → taskID 0x00 sha256(message)
//	expiry  updatedAt(8) taskID             → (empty) terminal tasks by age
//	meta    "schema"                        → schema version
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
	"sync"
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
	schemaVersion = []byte("1")
)

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
}

// Store is a tasks.Store on a bbolt file.
type Store struct {
	db       *bolt.DB
	maxBatch int

	writes chan *write
	stop   chan struct{}
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
	mu        sync.RWMutex // held for reading by senders to writes; closed under the write lock
	closed    bool

	stats Stats
}

// Stats counts commits, for metrics and benchmarks.
type Stats struct {
	mu      sync.Mutex
	Commits uint64 // transactions committed
	Writes  uint64 // writes grouped into them
}

var _ tasks.Store = (*Store)(nil)

// Open opens or creates the store at path.
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.InitialMmapSize <= 0 {
		opts.InitialMmapSize = 256 << 20
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:         opts.LockTimeout,
		InitialMmapSize: opts.InitialMmapSize,
		FreelistType:    bolt.FreelistMapType,
		NoSync:          opts.NoSync,
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open task store %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open task store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketTasks, bucketEvents, bucketActive, bucketOwners, bucketIdem, bucketExpiry, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get(keySchema); {
		case v == nil:
			return meta.Put(keySchema, schemaVersion)
		case !bytes.Equal(v, schemaVersion):
			return fmt.Errorf("store schema version %q is not supported (want %q)", v, schemaVersion)
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
		err := s.db.Update(func(tx *bolt.Tx) error {
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

// Create implements tasks.Store.
func (s *Store) Create(ctx context.Context, key tasks.IdemKey, rec *tasks.Record, events []tasks.Event) (*tasks.Record, bool, error) {
	var got *tasks.Record
	var created bool
	err := s.update(ctx, func(tx *bolt.Tx) error {
		got, created = nil, false
		if id, hash, ok := getIdem(tx, key.Owner, key.MessageID); ok {
			if hash != key.Hash {
				return tasks.ErrMessageIDReused
			}
			r, err := getRecord(tx, id)
			if err != nil {
				return err
			}
			got = r
			return nil
		}
		if tx.Bucket(bucketTasks).Get([]byte(rec.Task.ID)) != nil {
			return fmt.Errorf("create task %s: id already exists", rec.Task.ID)
		}
		r := *rec
		r.MessageIDs = append(append([]string(nil), rec.MessageIDs...), key.MessageID)
		if err := putIdem(tx, key, r.Task.ID); err != nil {
			return err
		}
		if err := tx.Bucket(bucketOwners).Put(ownerKey(r.Owner, r.Task.ID), nil); err != nil {
			return err
		}
		if err := save(tx, &r, events, ""); err != nil {
			return err
		}
		got, created = &r, true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return got, created, nil
}

// Get implements tasks.Store.
func (s *Store) Get(ctx context.Context, owner, id string) (*tasks.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var rec *tasks.Record
	err := s.db.View(func(tx *bolt.Tx) error {
		r, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		if r.Owner != owner {
			return tasks.ErrNotFound
		}
		rec = r
		return nil
	})
	return rec, err
}

// Update implements tasks.Store.
func (s *Store) Update(ctx context.Context, owner, id string, key *tasks.IdemKey, fn tasks.UpdateFunc) (*tasks.Record, []tasks.Event, bool, error) {
	var (
		out    *tasks.Record
		events []tasks.Event
		dup    bool
	)
	err := s.update(ctx, func(tx *bolt.Tx) error {
		out, events, dup = nil, nil, false
		r, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		if r.Owner != owner {
			return tasks.ErrNotFound
		}
		if key != nil {
			if boundID, hash, ok := getIdem(tx, key.Owner, key.MessageID); ok {
				if hash != key.Hash || boundID != id {
					return tasks.ErrMessageIDReused
				}
				out, dup = r, true
				return nil
			}
		}
		prevState := r.State()
		evs, err := fn(r)
		if err != nil {
			return err
		}
		if key != nil {
			if err := putIdem(tx, *key, id); err != nil {
				return err
			}
			r.MessageIDs = append(r.MessageIDs, key.MessageID)
		}
		if len(evs) == 0 && key == nil {
			out = r
			return nil // nothing changed
		}
		if err := save(tx, r, evs, prevState); err != nil {
			return err
		}
		out, events = r, evs
		return nil
	})
	if err != nil {
		return nil, nil, false, err
	}
	return out, events, dup, nil
}

// save writes rec and its new events (assigning their sequence numbers)
// and keeps the active and expiry indexes in step with the state.
func save(tx *bolt.Tx, rec *tasks.Record, events []tasks.Event, prev a2a.TaskState) error {
	evb := tx.Bucket(bucketEvents)
	for i := range events {
		rec.Seq++
		events[i].Seq = rec.Seq
		b, err := json.Marshal(&events[i])
		if err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
		if err := evb.Put(eventKey(rec.Task.ID, rec.Seq), b); err != nil {
			return err
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode task: %w", err)
	}
	id := []byte(rec.Task.ID)
	if err := tx.Bucket(bucketTasks).Put(id, b); err != nil {
		return err
	}
	state := rec.State()
	if state.Terminal() {
		if err := tx.Bucket(bucketActive).Delete(id); err != nil {
			return err
		}
		if !prev.Terminal() {
			return tx.Bucket(bucketExpiry).Put(expiryKey(rec.UpdatedAt, rec.Task.ID), nil)
		}
		return nil
	}
	if prev == "" || prev.Terminal() {
		return tx.Bucket(bucketActive).Put(id, nil)
	}
	return nil
}

// Active implements tasks.Store.
func (s *Store) Active(ctx context.Context) ([]*tasks.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*tasks.Record
	err := s.db.View(func(tx *bolt.Tx) error {
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
	err := s.db.View(func(tx *bolt.Tx) error {
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

// Expire implements tasks.Store.
func (s *Store) Expire(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	var n int
	err := s.update(ctx, func(tx *bolt.Tx) error {
		n = 0
		end := expiryKey(cutoff, "")
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
	for _, m := range r.MessageIDs {
		if err := tx.Bucket(bucketIdem).Delete(idemKey(r.Owner, m)); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketOwners).Delete(ownerKey(r.Owner, id)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketActive).Delete([]byte(id)); err != nil {
		return err
	}
	prefix := append([]byte(id), 0)
	c := tx.Bucket(bucketEvents).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketTasks).Delete([]byte(id))
}

func getRecord(tx *bolt.Tx, id string) (*tasks.Record, error) {
	v := tx.Bucket(bucketTasks).Get([]byte(id))
	if v == nil {
		return nil, tasks.ErrNotFound
	}
	var r tasks.Record
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("decode task %s: %w", id, err)
	}
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
