package engine

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Options tune a DB. A zero value takes its default.
type Options struct {
	// MaxBatch caps the writes grouped into one log record; default 256.
	MaxBatch int
	// OnCommit, when set, is told of each group made durable: how many
	// writes it held and how long it took, fdatasync included. It runs
	// on the single writer: it must be quick.
	OnCommit func(writes int, d time.Duration)
	// CheckpointEvery is how often the changes kept in memory are written
	// to the file; default 500ms.
	CheckpointEvery time.Duration
	// CheckpointBytes starts a checkpoint early once that much is kept in
	// memory; default 16 MiB.
	CheckpointBytes int64
	// OnCheckpointError, when set, is told of a checkpoint that failed
	// (it is tried again). It runs on the writer: it must be quick.
	OnCheckpointError func(error)
}

// DB is a bbolt file with its write-ahead log, served: a single writer
// groups Update's writes into log records, readers View the layers over
// the file, and a checkpointer writes the layers to the file.
type DB struct {
	bdb      *bolt.DB
	l        *Layout
	maxBatch int
	onCommit func(writes int, d time.Duration)

	writes  chan *write
	flushes chan flushReq
	stop    chan struct{}
	wg      sync.WaitGroup

	// The write-ahead log and the layers (writer.go, checkpoint.go).
	wal        *Log
	snap       atomic.Pointer[snapshot] // what readers read
	committing atomic.Uint64            // the freeze a checkpoint commits
	ckptReq    chan *layer
	ckptDone   chan error
	ckptEvery  time.Duration
	ckptBytes  int64
	// The writer's own.
	act               *layer
	frozen            *layer
	freezes           uint64
	inFlight          bool
	ckptErr           error
	stopped           atomic.Pointer[StoppedError]    // set once a checkpoint fails for good
	logFailed         atomic.Pointer[UnwritableError] // the log's last write failed
	ckptFailed        atomic.Pointer[UnwritableError] // the last checkpoint failed
	marked            bool                            // the file says its log is open (walmark.go)
	closing           bool
	ws                wstate
	wtxn              Tx // the writer's, reused
	onCheckpointError func(error)

	closeOnce sync.Once
	closeErr  error
	mu        sync.RWMutex // held for reading by senders to writes; closed under the write lock
	closed    bool

	stats struct {
		mu      sync.Mutex
		commits uint64 // groups made durable (a log record and its sync each)
		writes  uint64 // writes grouped into them
	}
}

// Prepare readies bdb, a file of layout l at path, to be served: a log
// gone where the file says a server had it open is refused (a *LogError);
// then, in one transaction, every bucket is created, setup runs (the
// store's own first values), and the file is marked as having its log
// open until a clean Close.
func Prepare(bdb *bolt.DB, l *Layout, setup func(*bolt.Tx) error) error {
	if err := l.check(); err != nil {
		return err
	}
	if err := l.MissingLog(bdb, bdb.Path()); err != nil {
		return err
	}
	return bdb.Update(func(tx *bolt.Tx) error {
		for _, b := range l.Buckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if err := setup(tx); err != nil {
			return err
		}
		return l.setOpen(tx, true)
	})
}

// Start serves bdb, prepared (Prepare) and recovered (Recover, which
// returned wal): it runs the writer and the checkpointer until Close.
func Start(bdb *bolt.DB, l *Layout, wal *Log, opts Options) *DB {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery = 500 * time.Millisecond
	}
	if opts.CheckpointBytes <= 0 {
		opts.CheckpointBytes = 16 << 20
	}
	db := &DB{
		bdb:      bdb,
		l:        l,
		maxBatch: opts.MaxBatch,
		onCommit: opts.OnCommit,
		writes:   make(chan *write, opts.MaxBatch),
		flushes:  make(chan flushReq),
		marked:   true, // by Prepare
		stop:     make(chan struct{}),
		wal:      wal,
		ckptReq:  make(chan *layer, 1),
		ckptDone: make(chan error, 1),

		ckptEvery:         opts.CheckpointEvery,
		ckptBytes:         opts.CheckpointBytes,
		act:               new(layer),
		onCheckpointError: opts.OnCheckpointError,
	}
	db.snap.Store(&snapshot{active: new(layer)})
	db.wg.Add(2)
	go func() { defer db.wg.Done(); db.writer() }()
	go func() { defer db.wg.Done(); db.checkpointer() }()
	return db
}

// Close waits for queued writes to commit, checkpoints everything, clears
// the file's mark that its log is open, and closes the file.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.mu.Lock()
		db.closed = true
		close(db.stop)
		db.mu.Unlock()
		db.wg.Wait() // the writer checkpoints everything and sets closeErr
		if err := db.bdb.Close(); db.closeErr == nil {
			db.closeErr = err
		}
	})
	return db.closeErr
}

// Closed reports whether Close has begun.
func (db *DB) Closed() bool {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.closed
}

// Bolt is the bbolt file itself: what it holds lags the durable changes
// until a Flush.
func (db *DB) Bolt() *bolt.DB { return db.bdb }

// Counts returns the number of groups made durable and of writes grouped
// into them.
func (db *DB) Counts() (commits, writes uint64) {
	db.stats.mu.Lock()
	defer db.stats.mu.Unlock()
	return db.stats.commits, db.stats.writes
}

// Pending reports whether the log of the file at path holds segments: a
// server that stopped without closing the file left changes there.
func Pending(path string) (bool, error) {
	segs, _, _, err := listWAL(Dir(path))
	return len(segs) > 0, err
}

// updateTx is bdb.Update under guard, for the checkpointer: a damaged
// page a write reaches fails the checkpoint with a *DamagedError.
func (db *DB) updateTx(fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { Recovered(recover(), db.bdb.Path(), &err) }()
	return db.bdb.Update(fn)
}
