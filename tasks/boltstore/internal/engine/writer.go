package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/internal/crashpoint"
)

// The single writer: concurrent changes are grouped into one log record
// (wal.go), one fdatasync, and kept in the active layer (kv.go) until a
// checkpoint (checkpoint.go) writes them to the file.

// write is one queued change. fn may fail; its changes are then undone
// and the group goes on without it.
type write struct {
	fn     func(tx *Tx) error
	done   chan error
	failed bool
}

var writePool = sync.Pool{New: func() any { return &write{done: make(chan error, 1)} }}

// Update runs fn in a write transaction shared with other concurrent
// writes, and returns when it is durable (its log record fsynced) or
// failed: fn's error, ErrClosed, a *StoppedError or an *UnwritableError,
// a *DamagedError.
func (db *DB) Update(ctx context.Context, fn func(tx *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := writePool.Get().(*write)
	w.fn = fn
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		writePool.Put(w)
		return ErrClosed
	}
	db.writes <- w
	db.mu.RUnlock()
	// The write is queued: wait for it even if ctx ends, so that the
	// caller learns whether it committed.
	err := <-w.done
	w.fn = nil
	writePool.Put(w)
	return err
}

// Flush writes every durable change to the bbolt file (a checkpoint) and
// returns when it is there: for whoever reads the file itself (Bolt, a
// backup).
func (db *DB) Flush() error {
	_, err := db.flushFor(false)
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

// CopyTx checkpoints everything and returns a read transaction of the
// file as it is then, without the mark that the log is open: a copy of it
// needs no log. The caller rolls it back.
func (db *DB) CopyTx() (*bolt.Tx, error) { return db.flushFor(true) }

func (db *DB) flushFor(copy bool) (*bolt.Tx, error) {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return nil, ErrClosed
	}
	r := flushReq{copy: copy, done: make(chan flushAns, 1)}
	db.flushes <- r
	db.mu.RUnlock()
	a := <-r.done
	return a.tx, a.err
}

// answer runs flush request r on the writer. For a copy it clears the
// file's mark, unless cleared already, and begins the read transaction
// before any checkpoint can set it again (freeze).
func (db *DB) answer(r flushReq) {
	err := db.flush()
	if err != nil || !r.copy {
		r.done <- flushAns{err: err}
		return
	}
	if db.marked {
		if err := db.l.MarkOpen(db.bdb, false); err != nil {
			r.done <- flushAns{err: err}
			return
		}
		db.marked = false
	}
	tx, err := db.bdb.Begin(false)
	r.done <- flushAns{tx: tx, err: err}
}

func (db *DB) writer() {
	batch := make([]*write, 0, db.maxBatch)
	tick := time.NewTicker(db.ckptEvery)
	defer tick.Stop()
	for {
		select {
		case w := <-db.writes:
			batch = append(batch[:0], w)
		case err := <-db.ckptDone:
			db.checkpointed(err)
			continue
		case <-tick.C:
			db.probeLog()
			db.maybeFreeze(true)
			continue
		case r := <-db.flushes:
			db.answer(r)
			continue
		case <-db.stop:
			// Senders hold mu.RLock while sending and closed is set
			// under the write lock, so nothing more can arrive.
		drain:
			for {
				select {
				case w := <-db.writes:
					db.commit([]*write{w})
				default:
					break drain
				}
			}
			db.closing = true // the last checkpoint clears the mark
			db.closeErr = db.flush()
			close(db.ckptReq)
			if db.closeErr == nil && db.marked { // nothing to checkpoint
				if db.closeErr = db.l.MarkOpen(db.bdb, false); db.closeErr == nil {
					db.marked = false
				}
			}
			if db.closeErr == nil {
				db.closeErr = db.wal.close()
			}
			return
		}
	fill:
		for len(batch) < db.maxBatch {
			select {
			case w := <-db.writes:
				batch = append(batch, w)
			default:
				break fill
			}
		}
		db.commit(batch)
		db.maybeFreeze(false)
	}
}

// commit runs the writes of batch over the active layer, each undone if
// it fails, appends what the others changed to the log, and tells each
// how it went once the record is synced.
func (db *DB) commit(batch []*write) {
	start := time.Now()
	if e := db.stopped.Load(); e != nil {
		for _, w := range batch {
			w.done <- e
		}
		return
	}
	if db.ckptErr != nil && db.act.size > db.ckptBytes*4 {
		err := &UnwritableError{Path: db.bdb.Path(), Cause: fmt.Errorf("its checkpoints fail, and its log holds four checkpoints' worth: %w", db.ckptErr)}
		for _, w := range batch {
			w.done <- err
		}
		return
	}
	ws := &db.ws
	ws.reset()
	ok := 0
	err := ViewGuarded(db.bdb, func(tx *bolt.Tx) error {
		t := &db.wtxn
		t.reset(db.l, tx, db.act, db.frozen, ws)
		defer t.reset(nil, nil, nil, nil, nil)
		for _, w := range batch {
			mark := len(ws.undo)
			w.failed = false
			if err := w.fn(t); err != nil {
				ws.rollback(db.act, mark)
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
		if lsn, err = db.wal.append(ws.rec); err == nil {
			db.act.lsn = lsn
			db.act.size += ws.size
			db.publish(&ws.touched)
			db.logFailed.Store(nil)
		} else {
			err = db.cannotWrite(err)
		}
	}
	if err != nil { // damage met, or the log failed: none of it happened
		ws.rollback(db.act, 0)
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
	db.stats.mu.Lock()
	db.stats.commits++
	db.stats.writes += uint64(ok)
	db.stats.mu.Unlock()
	if db.onCommit != nil {
		db.onCommit(ok, time.Since(start))
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
func (db *DB) publish(touched *[maxBuckets]bool) {
	old := db.snap.Load()
	pub := new(layer)
	*pub = *old.active
	for i, t := range touched {
		if !t {
			continue
		}
		if db.act.t[i] != nil {
			pub.t[i] = db.act.t[i].Clone()
		}
		pub.seq[i], pub.set[i] = db.act.seq[i], db.act.set[i]
	}
	pub.lsn = db.act.lsn
	db.snap.Store(&snapshot{active: pub, frozen: db.frozen, freezes: db.freezes})
}

// snapshot is what a reader reads over a bbolt read transaction.
type snapshot struct {
	active, frozen *layer
	freezes        uint64 // freezes done when it was published
}

// View runs fn on a consistent snapshot: the published layers over a
// bbolt read transaction, under guard (a damaged page is a
// *DamagedError). A snapshot older than a checkpoint the file already
// holds would see that checkpoint's newer changes under its own: it is
// taken again.
func (db *DB) View(fn func(*Tx) error) error {
	for {
		sn := db.snap.Load()
		retry := false
		t := txnPool.Get().(*Tx)
		err := ViewGuarded(db.bdb, func(tx *bolt.Tx) error {
			if db.committing.Load() > sn.freezes {
				retry = true
				return nil
			}
			t.reset(db.l, tx, sn.active, sn.frozen, nil)
			return fn(t)
		})
		t.reset(nil, nil, nil, nil, nil) // hold no snapshot while pooled
		txnPool.Put(t)
		if !retry {
			return err
		}
	}
}
