package boltstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/internal/crashpoint"
	"github.com/a2ad/a2ad/tasks"
)

// The single writer: concurrent changes are grouped into one log record
// (wal.go), one fdatasync, and kept in the active layer (kv.go) until a
// checkpoint (checkpoint.go) writes them to the file.

// write is one queued change. fn may fail; its changes are then undone
// and the group goes on without it.
type write struct {
	fn     func(tx *txn) error
	done   chan error
	failed bool
}

var writePool = sync.Pool{New: func() any { return &write{done: make(chan error, 1)} }}

// update runs fn in a write transaction shared with other concurrent
// writes, and returns when it is durable (its log record fsynced) or
// failed.
func (s *Store) update(ctx context.Context, fn func(tx *txn) error) error {
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

// Flush writes every durable change to the bbolt file (a checkpoint) and
// returns when it is there: for whoever reads the file itself (DB, a
// backup).
func (s *Store) Flush() error {
	_, err := s.flushFor(false)
	return err
}

// flushReq asks the writer to checkpoint everything; with copy, also for
// a read transaction of the file as it is then, without the mark that
// the log is open (a copy needs no log).
type flushReq struct {
	copy bool
	done chan flushAns
}

type flushAns struct {
	tx  *bolt.Tx
	err error
}

func (s *Store) flushFor(copy bool) (*bolt.Tx, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, tasks.ErrClosed
	}
	r := flushReq{copy: copy, done: make(chan flushAns, 1)}
	s.flushes <- r
	s.mu.RUnlock()
	a := <-r.done
	return a.tx, a.err
}

// answer runs flush request r on the writer. For a copy it clears the
// file's mark, unless cleared already, and begins the read transaction
// before any checkpoint can set it again (freeze).
func (s *Store) answer(r flushReq) {
	err := s.flush()
	if err != nil || !r.copy {
		r.done <- flushAns{err: err}
		return
	}
	if s.marked {
		if err := markOpen(s.db, false); err != nil {
			r.done <- flushAns{err: err}
			return
		}
		s.marked = false
	}
	tx, err := s.db.Begin(false)
	r.done <- flushAns{tx: tx, err: err}
}

func (s *Store) writer() {
	batch := make([]*write, 0, s.maxBatch)
	tick := time.NewTicker(s.ckptEvery)
	defer tick.Stop()
	for {
		select {
		case w := <-s.writes:
			batch = append(batch[:0], w)
		case err := <-s.ckptDone:
			s.checkpointed(err)
			continue
		case <-tick.C:
			s.probeLog()
			s.maybeFreeze(true)
			continue
		case r := <-s.flushes:
			s.answer(r)
			continue
		case <-s.stop:
			// Senders hold mu.RLock while sending and closed is set
			// under the write lock, so nothing more can arrive.
		drain:
			for {
				select {
				case w := <-s.writes:
					s.commit([]*write{w})
				default:
					break drain
				}
			}
			s.closing = true // the last checkpoint clears the mark
			s.closeErr = s.flush()
			close(s.ckptReq)
			if s.closeErr == nil && s.marked { // nothing to checkpoint
				if s.closeErr = markOpen(s.db, false); s.closeErr == nil {
					s.marked = false
				}
			}
			if s.closeErr == nil {
				s.closeErr = s.wal.close()
			}
			return
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
		s.maybeFreeze(false)
	}
}

// commit runs the writes of batch over the active layer, each undone if
// it fails, appends what the others changed to the log, and tells each
// how it went once the record is synced.
func (s *Store) commit(batch []*write) {
	start := time.Now()
	if e := s.stopped.Load(); e != nil {
		for _, w := range batch {
			w.done <- e
		}
		return
	}
	if s.ckptErr != nil && s.act.size > s.ckptBytes*4 {
		err := &UnwritableError{Path: s.db.Path(), Cause: fmt.Errorf("its checkpoints fail, and its log holds four checkpoints' worth: %w", s.ckptErr)}
		for _, w := range batch {
			w.done <- err
		}
		return
	}
	ws := &s.ws
	ws.reset()
	ok := 0
	err := viewGuarded(s.db, func(tx *bolt.Tx) error {
		t := &s.wtxn
		t.reset(tx, s.act, s.frozen, ws)
		defer t.reset(nil, nil, nil, nil)
		for _, w := range batch {
			mark := len(ws.undo)
			w.failed = false
			if err := w.fn(t); err != nil {
				ws.rollback(s.act, mark)
				w.failed = true
				w.done <- err
				continue
			}
			ok++
		}
		return nil
	})
	if err == nil && ok > 0 && len(ws.rec) > 0 {
		var lsn uint64
		if lsn, err = s.wal.append(ws.rec); err == nil {
			s.act.lsn = lsn
			s.act.size += ws.size
			s.publish(&ws.touched)
			s.logFailed.Store(nil)
		} else {
			err = s.cannotWrite(err)
		}
	}
	if err != nil { // damage met, or the log failed: none of it happened
		ws.rollback(s.act, 0)
		for _, w := range batch {
			if !w.failed {
				w.done <- err
			}
		}
		return
	}
	if ok == 0 {
		return
	}
	s.stats.mu.Lock()
	s.stats.Commits++
	s.stats.Writes += uint64(ok)
	s.stats.mu.Unlock()
	if s.onCommit != nil {
		s.onCommit(ok, time.Since(start))
	}
	for _, w := range batch {
		if !w.failed {
			w.done <- nil
		}
	}
	crashpoint.Hit("wal.ack")
}

// publish gives readers a new snapshot: the active layer as it is now
// (its touched trees cloned, the others as last published).
func (s *Store) publish(touched *[nBuckets]bool) {
	old := s.snap.Load()
	pub := new(layer)
	*pub = *old.active
	for i, t := range touched {
		if !t {
			continue
		}
		if s.act.t[i] != nil {
			pub.t[i] = s.act.t[i].Clone()
		}
		pub.seq[i], pub.set[i] = s.act.seq[i], s.act.set[i]
	}
	pub.lsn = s.act.lsn
	s.snap.Store(&snapshot{active: pub, frozen: s.frozen, freezes: s.freezes})
}

// snapshot is what a reader reads over a bbolt read transaction.
type snapshot struct {
	active, frozen *layer
	freezes        uint64 // freezes done when it was published
}

// view runs fn on a consistent snapshot: the published layers over a
// bbolt read transaction, under guard (a damaged page is a
// *DamagedError). A snapshot older than a checkpoint the file already
// holds would see that checkpoint's newer changes under its own: it is
// taken again.
func (s *Store) view(fn func(*txn) error) error {
	for {
		sn := s.snap.Load()
		retry := false
		t := txnPool.Get().(*txn)
		err := viewGuarded(s.db, func(tx *bolt.Tx) error {
			if s.committing.Load() > sn.freezes {
				retry = true
				return nil
			}
			t.reset(tx, sn.active, sn.frozen, nil)
			return fn(t)
		})
		t.reset(nil, nil, nil, nil) // hold no snapshot while pooled
		txnPool.Put(t)
		if !retry {
			return err
		}
	}
}

// start runs the writer and the checkpointer of the store on db, opened
// and recovered, with its log.
func start(db *bolt.DB, wal *walLog, opts Options) *Store {
	s := &Store{
		db:       db,
		maxBatch: opts.MaxBatch,
		onCommit: opts.OnCommit,
		moved:    opts.OnTransition,
		writes:   make(chan *write, opts.MaxBatch),
		flushes:  make(chan flushReq),
		marked:   true, // by Open
		stop:     make(chan struct{}),
		wal:      wal,
		ckptReq:  make(chan *layer, 1),
		ckptDone: make(chan error, 1),

		ckptEvery:         opts.CheckpointEvery,
		ckptBytes:         opts.CheckpointBytes,
		act:               new(layer),
		onCheckpointError: opts.OnCheckpointError,
	}
	s.snap.Store(&snapshot{active: new(layer)})
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.writer() }()
	go func() { defer s.wg.Done(); s.checkpointer() }()
	return s
}
