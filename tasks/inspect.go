package tasks

import (
	"context"
	"errors"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

// Inspector is the operator's read-only view of a store: every task of
// every owner, and the push deliveries given up on. It has no method that
// writes, and looking is never activity: it refreshes no expiry. Each
// method reads one consistent snapshot, refuses a canceled context, and
// is safe for concurrent use. A Backend returns it from Inspect.
type Inspector interface {
	// Overview counts the store's tasks, deliveries and bytes. Its cost
	// is bounded (see Overview.ByState).
	Overview(ctx context.Context) (*Overview, error)
	// Tasks returns the heads (no history, no artifacts) of up to limit
	// tasks that match q, with ids below after ("": from the highest),
	// highest id first; an error if limit is not positive. A call
	// examines a bounded number of tasks, so a page may be short of
	// limit, even empty, while TaskPage.Next says more may follow.
	Tasks(ctx context.Context, q TaskQuery, after string, limit int) (*TaskPage, error)
	// Task returns task id, whoever owns it, whole and with its input and
	// message ids, and its whole event log in sequence order. Returns
	// ErrNotFound if no task has that id.
	Task(ctx context.Context, id string) (*Record, []Event, error)
	// DeadLetters returns up to limit dead letters with ids above after,
	// oldest first (never nil), and whether more follow.
	DeadLetters(ctx context.Context, after uint64, limit int) ([]DeadLetter, bool, error)
}

// States are the task states in the order the operator's view lists them:
// the non-terminal ones, then the terminal ones.
var States = []a2a.TaskState{
	a2a.StateSubmitted, a2a.StateWorking, a2a.StateInputRequired, a2a.StateAuthRequired, a2a.StateUnknown,
	a2a.StateCompleted, a2a.StateFailed, a2a.StateCanceled, a2a.StateRejected,
}

// Overview is a store at a glance.
type Overview struct {
	// Tasks counts every task, NonTerminal those not in a terminal state;
	// both are exact.
	Tasks, NonTerminal int
	// ByState counts tasks per state, for the states it has a key for
	// (a counted state without tasks is there with 0): every state of
	// States when the store holds at most the inspector's bound of tasks;
	// else the non-terminal ones when at most that many are non-terminal;
	// else none. A state outside States, which a2ad never writes, gets
	// its own key.
	ByState map[a2a.TaskState]int
	// ByStateComplete is true when ByState counts every task.
	ByStateComplete bool
	// FileBytes is the size the store takes on disk; DataBytes the size
	// of the data in it (the rest is space allocated ahead).
	FileBytes, DataBytes int64
	// OutboxDepth counts the push deliveries waiting, DeadLetters those
	// given up on.
	OutboxDepth, DeadLetters int
}

// TaskQuery selects tasks; its zero value selects every task.
type TaskQuery struct {
	// State is the state to match; "" matches any.
	State a2a.TaskState
	// FunctionID is the function to match; "" matches any.
	FunctionID string
	// Owner, when not nil, is the caller to match ("" is the anonymous
	// caller).
	Owner *string
}

// TaskPage is one page of Inspector.Tasks.
type TaskPage struct {
	// Tasks are the matches, by task id, highest first (a2ad's ids are
	// time-ordered: newest created first).
	Tasks []*Record
	// Next, when not "", is the id to pass as after for the next page. It
	// may be set while Tasks is short of the limit, even empty: the scan
	// bound was reached before the page filled.
	Next string
	// Scanned counts the tasks examined.
	Scanned int
}

// ErrDeadLetterNotFound: no dead letter has that id (never had, or it
// was retried or dropped already).
var ErrDeadLetterNotFound = errors.New("dead letter not found")

// DeadLetter is a push delivery the store gave up on, as operators see
// it: never its token, credentials or body.
type DeadLetter struct {
	ID        uint64
	TaskID    string
	ConfigID  string
	URL       string
	Attempts  int
	LastError string
	CreatedAt time.Time
	DeadAt    time.Time
}
