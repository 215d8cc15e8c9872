package boltstore

import (
	"errors"
	"fmt"
	"slices"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
)

// The store's errors for what the engine refuses (fromEngine): a put
// bbolt would refuse, checked when a write is made (engine.LimitError);
// writes stopped, or refused while the disk takes none.

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

// checkConfigIDs refuses (a *LimitError) a push config of rec whose id
// would make a pending key bbolt cannot hold, unless old (the task's
// configs before the write) has it already: the delivery a later
// transition queues could not be written, and the task could not end.
func checkConfigIDs(rec *tasks.Record, old []a2a.PushConfig) error {
	for _, c := range rec.PushConfigs {
		if slices.ContainsFunc(old, func(o a2a.PushConfig) bool { return o.ID == c.ID }) {
			continue
		}
		if what := engine.LimitProblem(pendingKey(rec.Task.ID, c.ID), nil); what != "" {
			return &LimitError{Bucket: string(bucketPending), What: what}
		}
	}
	return nil
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
// again on each checkpoint tick, so it becomes ready again without
// waiting for a write that a balancer would not send it.
func (s *Store) Writable() error { return fromEngine(s.db.Writable()) }

// fromEngine is err, from the engine, as the store's own error, which the
// task service knows (tasks.ErrClosed, tasks.ErrInvalidInput,
// tasks.ErrStoreUnavailable): the engine knows nothing of tasks.
func fromEngine(err error) error {
	var (
		le *engine.LimitError
		se *engine.StoppedError
		ue *engine.UnwritableError
	)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrClosed):
		return tasks.ErrClosed
	case errors.As(err, &le):
		return &LimitError{Bucket: le.Bucket, What: le.What}
	case errors.As(err, &se):
		return &StoppedError{Path: se.Path, Cause: se.Cause}
	case errors.As(err, &ue):
		return &UnwritableError{Path: ue.Path, Cause: ue.Cause}
	}
	return err
}
