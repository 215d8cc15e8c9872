package boltstore

import (
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// What bbolt's Put refuses, checked when a write is made, before it
// changes anything: a write the checkpoint could not apply must never
// reach the log, whose record would then fail every checkpoint after it.
// Every bucket exists from Open on and none holds a nested bucket, so a
// key too short or too long, and a value too long, are all a put can
// meet.

// ErrTooLarge is matched (errors.Is) by every *LimitError.
var ErrTooLarge = errors.New("too large for the task store")

// LimitError is a write the store refuses because its file could not hold
// it: an empty key, one over bbolt's MaxKeySize, or a value over
// MaxValueSize. Nothing of the write was kept. It also matches
// tasks.ErrInvalidInput: what the caller sent cannot be stored.
type LimitError struct {
	Bucket string
	What   string // what is wrong, for the operator and the log
}

func (e *LimitError) Error() string {
	return "the task store cannot hold " + e.What + " (bucket " + e.Bucket + ")"
}

// Is makes errors.Is(err, ErrTooLarge) and errors.Is(err,
// tasks.ErrInvalidInput) hold.
func (e *LimitError) Is(target error) bool {
	return target == ErrTooLarge || target == tasks.ErrInvalidInput
}

// limitProblem says what bbolt would refuse in a put of key and value,
// "" if nothing.
func limitProblem(key, value []byte) string {
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
func checkPut(i int, key, value []byte) error {
	if what := limitProblem(key, value); what != "" {
		return &LimitError{Bucket: bucketName(i), What: what}
	}
	return nil
}

func bucketName(i int) string {
	if i < 0 || i >= nBuckets {
		return fmt.Sprintf("#%d", i)
	}
	return string(buckets[i])
}

// checkConfigIDs refuses (a *LimitError) a push config of rec whose id
// would make a pending key bbolt cannot hold, unless old (the task's
// configs before the write) has it already: the delivery a later
// transition queues could not be written, and the task could not end.
func checkConfigIDs(rec *tasks.Record, old []a2a.PushConfig) error {
	for _, c := range rec.PushConfigs {
		if slices.ContainsFunc(old, func(o a2a.PushConfig) bool { return o.ID == c.ID }) {
			continue
		}
		if err := checkPut(bucketIndex(bucketPending), pendingKey(rec.Task.ID, c.ID), nil); err != nil {
			return err
		}
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

// ErrStopped is matched (errors.Is) by every *StoppedError.
var ErrStopped = errors.New("the task store stopped taking writes")

// StoppedError is the refusal of every write once a checkpoint met a
// change that bbolt refuses (which the write-time checks should have kept
// out of the log): trying again cannot mend it, and taking more writes
// would only grow the log and memory. What was acknowledged before is in
// the write-ahead log. It also matches tasks.ErrStoreUnavailable.
type StoppedError struct {
	Path  string
	Cause error
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("the task store %s stopped taking writes: a checkpoint cannot apply a change to the file (%v); every write acknowledged is in its write-ahead log: stop the server and check the store", e.Path, e.Cause)
}

// Is makes errors.Is(err, ErrStopped) and errors.Is(err,
// tasks.ErrStoreUnavailable) hold.
func (e *StoppedError) Is(target error) bool {
	return target == ErrStopped || target == tasks.ErrStoreUnavailable
}

func (e *StoppedError) Unwrap() error { return e.Cause }

// UnwritableError is the refusal of writes while the store cannot write
// to its disk (full, over a quota or a file size limit, failing): its log
// cannot take the record, or its checkpoints fail for long enough that
// the log would grow without bound. Nothing acknowledged is lost; the
// store takes writes again as soon as it can write. It matches
// tasks.ErrStoreUnavailable, which callers get as -32057, retryable.
type UnwritableError struct {
	Path  string
	Cause error
}

func (e *UnwritableError) Error() string {
	return fmt.Sprintf("the task store %s cannot write to its disk (%v): changes are refused until it can; nothing acknowledged is lost", e.Path, e.Cause)
}

// Is makes errors.Is(err, tasks.ErrStoreUnavailable) hold.
func (e *UnwritableError) Is(target error) bool { return target == tasks.ErrStoreUnavailable }

func (e *UnwritableError) Unwrap() error { return e.Cause }

// Writable is nil while the store takes writes; else why not (/readyz
// reads it): the *StoppedError every write gets once it stopped, or an
// *UnwritableError while its disk takes no writes (its log's last write
// failed, or its last checkpoint did). A store whose log failed tries it
// again on each checkpoint tick (probeLog), so it becomes ready again
// without waiting for a write that a balancer would not send it.
func (s *Store) Writable() error {
	if e := s.stopped.Load(); e != nil {
		return e
	}
	if e := s.logFailed.Load(); e != nil {
		return e
	}
	if e := s.ckptFailed.Load(); e != nil {
		return e
	}
	return nil
}

// cannotWrite records err, the log's failure to take a record, and
// returns the *UnwritableError the writes get.
func (s *Store) cannotWrite(err error) error {
	e := &UnwritableError{Path: s.db.Path(), Cause: err}
	s.logFailed.Store(e)
	return e
}

// probeLog tries the log's next write without a record, once the log has
// failed: the header's bytes of zeros where the next record goes, synced
// (a new segment if the current one is full). It clears the failure if
// that works.
func (s *Store) probeLog() {
	if s.logFailed.Load() == nil {
		return
	}
	if err := s.wal.probe(); err == nil {
		s.logFailed.Store(nil)
	}
}
