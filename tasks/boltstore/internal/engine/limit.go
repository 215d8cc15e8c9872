package engine

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// What bbolt's Put refuses, checked when a write is made, before it
// changes anything: a write the checkpoint could not apply must never
// reach the log, whose record would then fail every checkpoint after it.
// Every bucket exists from open on and none holds a nested bucket, so a
// key too short or too long, and a value too long, are all a put can
// meet. The store turns these errors into its own (which the task
// service knows).

// ErrTooLarge is matched (errors.Is) by every *LimitError.
var ErrTooLarge = errors.New("too large for the engine's file")

// LimitError is a put bbolt would refuse: an empty key, one over bbolt's
// MaxKeySize, or a value over MaxValueSize. Nothing of the write was kept.
type LimitError struct {
	Bucket string
	What   string // what is wrong, for the operator and the log
}

func (e *LimitError) Error() string {
	return "the file cannot hold " + e.What + " (bucket " + e.Bucket + ")"
}

// Is makes errors.Is(err, ErrTooLarge) hold.
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }

// LimitProblem says what bbolt would refuse in a put of key and value,
// "" if nothing.
func LimitProblem(key, value []byte) string {
	switch {
	case len(key) == 0:
		return "an empty key"
	case len(key) > bolt.MaxKeySize:
		return fmt.Sprintf("a key of %d bytes (bbolt's limit is %d)", len(key), bolt.MaxKeySize)
	case int64(len(value)) > bolt.MaxValueSize:
		return fmt.Sprintf("a value of %d bytes (bbolt's limit is %d)", len(value), int64(bolt.MaxValueSize))
	}
	return ""
}

// checkPut is the *LimitError of a put of key and value into bucket i,
// or nil.
func (l *Layout) checkPut(i int, key, value []byte) error {
	if what := LimitProblem(key, value); what != "" {
		return &LimitError{Bucket: l.name(i), What: what}
	}
	return nil
}

// permanent reports whether err, from a checkpoint, is one that trying
// again cannot mend: bbolt refused what a record holds.
func permanent(err error) bool {
	for _, e := range []error{ErrTooLarge, berrors.ErrKeyRequired, berrors.ErrKeyTooLarge, berrors.ErrValueTooLarge, berrors.ErrIncompatibleValue, berrors.ErrBucketNotFound} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// ErrClosed is every write's error once Close has begun.
var ErrClosed = errors.New("the engine is closed")

// ErrStopped is matched (errors.Is) by every *StoppedError.
var ErrStopped = errors.New("the engine stopped taking writes")

// StoppedError is the refusal of every write once a checkpoint met a
// change that bbolt refuses (which the write-time checks should have kept
// out of the log): trying again cannot mend it, and taking more writes
// would only grow the log and memory. What was acknowledged before is in
// the write-ahead log.
type StoppedError struct {
	Path  string
	Cause error
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("the file %s stopped taking writes: a checkpoint cannot apply a change (%v)", e.Path, e.Cause)
}

// Is makes errors.Is(err, ErrStopped) hold.
func (e *StoppedError) Is(target error) bool { return target == ErrStopped }

func (e *StoppedError) Unwrap() error { return e.Cause }

// UnwritableError is the refusal of writes while the engine cannot write
// to its disk (full, over a quota or a file size limit, failing): its log
// cannot take the record, or its checkpoints fail for long enough that
// the log would grow without bound. Nothing acknowledged is lost; writes
// are taken again as soon as the disk takes them.
type UnwritableError struct {
	Path  string
	Cause error
}

func (e *UnwritableError) Error() string {
	return fmt.Sprintf("the file %s cannot be written (%v)", e.Path, e.Cause)
}

func (e *UnwritableError) Unwrap() error { return e.Cause }

// Writable is nil while the engine takes writes; else why not: the
// *StoppedError every write gets once it stopped, or an *UnwritableError
// while its disk takes no writes (its log's last write failed, or its
// last checkpoint did). Once the log failed it is tried again on each
// checkpoint tick (probeLog), so the engine becomes writable again
// without waiting for a write.
func (db *DB) Writable() error {
	if e := db.stopped.Load(); e != nil {
		return e
	}
	if e := db.logFailed.Load(); e != nil {
		return e
	}
	if e := db.ckptFailed.Load(); e != nil {
		return e
	}
	return nil
}

// cannotWrite records err, the log's failure to take a record, and
// returns the *UnwritableError the writes get.
func (db *DB) cannotWrite(err error) error {
	e := &UnwritableError{Path: db.bdb.Path(), Cause: err}
	db.logFailed.Store(e)
	return e
}

// probeLog tries the log's next write without a record, once the log has
// failed: the header's bytes of zeros where the next record goes, synced
// (a new segment if the current one is full). It clears the failure if
// that works.
func (db *DB) probeLog() {
	if db.logFailed.Load() == nil {
		return
	}
	if err := db.wal.probe(); err == nil {
		db.logFailed.Store(nil)
	}
}
