package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
)

// Errors of the task service and store.
var (
	// ErrNotFound: no task has that id, or it belongs to another caller.
	// The two are never told apart on the wire.
	ErrNotFound = errors.New("task not found")
	// ErrNotOwner is the ErrNotFound of a task that exists but belongs to
	// another caller: errors.Is(err, ErrNotFound) holds, so callers answer
	// it as not found; only the audit log tells it apart.
	ErrNotOwner = fmt.Errorf("%w: it belongs to another caller", ErrNotFound)
	// ErrTaskTerminal: a message names a task that is already terminal.
	ErrTaskTerminal = errors.New("task is terminal")
	// ErrNotCancelable: the task is already terminal.
	ErrNotCancelable = errors.New("task cannot be canceled")
	// ErrMessageIDReused: the caller sent a messageId it used before, with
	// a different message.
	ErrMessageIDReused = errors.New("messageId reused with a different message")
	// ErrTaskBusy: a message was sent to a task that is still running.
	ErrTaskBusy = errors.New("task is still running")
	// ErrBusy: the queue of calls is full (MaxConcurrent running and
	// MaxQueue waiting, across all callers).
	ErrBusy = errors.New("too many calls are waiting")
	// ErrCallerBusy: the caller has Caller.MaxCalls calls running or
	// waiting already.
	ErrCallerBusy = errors.New("too many calls of this caller are running or waiting")
	// ErrClosed: the service or store is shut down.
	ErrClosed = errors.New("closed")
	// ErrConflict: the task changed between the read and the write.
	ErrConflict = errors.New("task changed concurrently")
	// ErrStoreUnavailable: the store cannot be reached (a database
	// server down or cut off). Nothing of the request was stored, or,
	// for a write whose commit was under way, it may have been; a retry
	// once the store is back finds out. Never a refusal of what the
	// request says.
	ErrStoreUnavailable = errors.New("the task store is unavailable")
)

// Caller is who sends a request: the owner of the tasks it creates, and
// the tiers that decide what it may call. It comes from the authenticated
// connection, never from a request's payload.
type Caller struct {
	ID string // "" is the anonymous caller
	// Tiers are the caller's tiers: it may call a function offered to any
	// of them. Empty means no caller tier (the server's tier alone
	// decides).
	Tiers []string
	// Quota caps what the caller keeps stored; a new task or message
	// that would take it past the quota is refused (ErrQuotaExceeded).
	// The zero value is unlimited.
	Quota Quota
	// MaxHistory caps the messages of the caller's tasks: a message to a
	// task whose history holds MaxHistory messages already is refused
	// (ErrTaskLimit). 0 is unlimited.
	MaxHistory int
	// MaxCalls caps the caller's calls running or waiting for a slot: a
	// call beyond it is refused (ErrCallerBusy) before anything is
	// stored. 0 is unlimited.
	MaxCalls int
	// CallGroup, for the anonymous caller (ID ""), names the anonymous
	// callers whose calls MaxCalls counts together, such as one client
	// address; "" counts every anonymous caller in one group. It is
	// ignored for a caller with an ID, whose calls are counted by ID.
	CallGroup string
	// IdemWindow is how long the caller's messageIds are remembered for
	// deduplication: 0 as long as their task is kept, IdemOff never (see
	// windowed).
	IdemWindow time.Duration
	// Protocol is the protocol the caller reaches functions over: the
	// policy decides its calls for that protocol ("" is A2A).
	Protocol exposure.Protocol
}

// protocol is the protocol c's calls are decided for.
func (c Caller) protocol() exposure.Protocol {
	if c.Protocol == "" {
		return exposure.A2A
	}
	return c.Protocol
}

// callKey names whose calls are counted together: a caller by its ID, an
// anonymous one by its group. Caller IDs are never empty, so the two
// kinds never meet.
type callKey struct{ owner, group string }

// callKey is the key c's calls are counted under.
func (c Caller) callKey() callKey {
	if c.ID != "" {
		return callKey{owner: c.ID}
	}
	return callKey{group: c.CallGroup}
}

// Record is a task as the store keeps it: the A2A task plus what a2ad
// needs to run, recover, isolate and expire it.
type Record struct {
	Task  a2a.Task `json:"task"`
	Owner string   `json:"owner"`
	// CallerTiers are the tiers of the caller that created the task; a
	// recovered run is authorised again with them.
	CallerTiers []string `json:"callerTiers,omitempty"`
	// CallerTier is the single tier records written before callers had
	// several; read only.
	CallerTier string `json:"callerTier,omitempty"`
	// FunctionID is the function the task calls; "" while the task waits
	// for a message that names one.
	FunctionID string `json:"functionId,omitempty"`
	// Input is the input of the current or last call. The store keeps it
	// beside the task: Active and the operator's view read it; Get and
	// Update leave it empty, and an input an UpdateFunc sets replaces the
	// task's.
	Input json.RawMessage `json:"input,omitempty"`
	// MessageIDs are the idempotency keys this task holds; they are
	// deleted with it. The store keeps them beside the task: a record
	// passed to Create holds its first ones, and the operator's view reads
	// them; Get and Update leave the field empty.
	MessageIDs []string `json:"messageIds,omitempty"`
	// PushConfigs are the task's webhooks. A transition to a terminal or
	// interrupted state queues one delivery per config in the outbox, in
	// the same transaction.
	PushConfigs []a2a.PushConfig `json:"pushConfigs,omitempty"`
	// Group is the process group of the exec call running now, stored
	// once its child has started, so that the next start can kill what a
	// crash left of it before the task is run again or failed; nil when
	// no exec call runs (or it was not recorded).
	Group *functions.ProcessGroup `json:"processGroup,omitempty"`
	// Runner is the replica that runs the task's call while the task is
	// submitted or working: the one that moved it there (see advance);
	// "" in any other state. The store keeps it beside the head; Get and
	// Update read it, and an UpdateFunc's change of it is written.
	Runner string `json:"-"`
	// Seq is the sequence number of the task's last event.
	Seq       uint64    `json:"seq"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// ArtifactSizes are the task's artifacts' ids and sizes (as
	// ArtifactBytes counts them), in order; a read fills them in, so that
	// an UpdateFunc, whose record holds no artifacts, knows what they
	// take. Nil in a record held whole, whose artifacts say it.
	ArtifactSizes []ArtifactSize `json:"-"`
	// HistoryLen is how many messages the task's history holds; a read
	// fills it in. Task.History holds the last of them, as many as the
	// read's Scope asked for. In an UpdateFunc it counts the stored
	// messages, and Task.History holds only those fn appends.
	HistoryLen int `json:"-"`
	// WriteQuota, set by an UpdateFunc of an Update that binds no key (a
	// running call's progress or result), is the quota the change is
	// checked against: a change that would take the owner past its Bytes
	// is not written, and Update returns a *QuotaError. Never stored;
	// zero checks nothing.
	WriteQuota Quota `json:"-"`
}

// ArtifactSize is one artifact's id and size, as ArtifactBytes counts it.
type ArtifactSize struct {
	ID    string
	Bytes int64
}

// Scope says how much of a task a read returns besides its head (status,
// ids, function, input, webhooks): the last History messages of its
// history (a negative History: all of them; 0: none), and its artifacts
// if Artifacts. The head is small; history and artifacts grow with the
// task, so a read that does not need them leaves them.
type Scope struct {
	History int
	// HistoryBytes, when above 0, keeps of those messages only the
	// newest whose stored encodings take HistoryBytes at most together
	// (AppendStored's; a message stored before record v2 counts its
	// canonical encoding, as it was stored), so that what one read
	// returns is bounded however large the messages: a message that does
	// not fit ends the history there (it and those before it are left
	// out).
	HistoryBytes int64
	Artifacts    bool
	// ListBytes, when above 0, bounds a List page: it ends early, before
	// the task whose stored head, history and artifacts (as this scope
	// reads them) would take the page's past ListBytes, and its cursor
	// goes on from there. The first task is always returned, so that a
	// listing always moves on. Other reads ignore it.
	ListBytes int64
}

// The scopes most reads use.
var (
	// Head is the task without its history and artifacts.
	Head = Scope{}
	// Whole is the task with all of its history and artifacts.
	Whole = Scope{History: -1, Artifacts: true}
)

// ScopeOf is the scope of a read that returns the last historyLength
// messages (nil or negative: all of them) and, if artifacts, the
// artifacts.
func ScopeOf(historyLength *int, artifacts bool) Scope {
	sc := Scope{History: -1, Artifacts: artifacts}
	if historyLength != nil {
		sc.History = *historyLength
	}
	return sc
}

// LastFitting returns the newest messages of hist, the history of the
// task of taskID and contextID, whose encodings as the stores keep them
// (AppendStored) take budget bytes at most together: the history a Scope
// with HistoryBytes budget keeps. A budget of 0 or less keeps all. It
// encodes no more than the messages it keeps and the one that does not
// fit. (A store's read counts the bytes it holds: a message it keeps in
// record v1, with its ids, counts a little more there, so such a read may
// keep a message fewer than LastFitting does.)
func LastFitting(hist []a2a.Message, taskID, contextID string, budget int64) []a2a.Message {
	if budget <= 0 {
		return hist
	}
	var (
		used int64
		buf  []byte
	)
	for i := len(hist) - 1; i >= 0; i-- {
		var err error
		if buf, err = AppendStored(buf[:0], &hist[i], taskID, contextID); err != nil {
			return hist[i+1:] // never stored so: left out
		}
		if used += int64(len(buf)); used > budget {
			return hist[i+1:]
		}
	}
	return hist
}

// ApplyArtifact applies an artifact event to arts as a client of the
// stream does: a chunk that appends adds its parts to the artifact with
// its id; any other chunk replaces the artifact with its id; a chunk whose
// id is new is added. arts' elements are not modified in place, so a
// caller may pass a slice it shares.
func ApplyArtifact(arts []a2a.Artifact, chunk *a2a.Artifact, appendParts bool) []a2a.Artifact {
	for i := range arts {
		if arts[i].ArtifactID != chunk.ArtifactID {
			continue
		}
		out := append([]a2a.Artifact(nil), arts...)
		if appendParts {
			a := arts[i]
			a.Parts = append(append(make([]a2a.Part, 0, len(a.Parts)+len(chunk.Parts)), a.Parts...), chunk.Parts...)
			out[i] = a
		} else {
			out[i] = *chunk
		}
		return out
	}
	return append(arts[:len(arts):len(arts)], *chunk)
}

// Caller is the caller that created the task, as it was then.
func (r *Record) Caller() Caller {
	c := Caller{ID: r.Owner, Tiers: r.CallerTiers}
	if len(c.Tiers) == 0 && r.CallerTier != "" {
		c.Tiers = []string{r.CallerTier}
	}
	return c
}

// State is the task's current state.
func (r *Record) State() a2a.TaskState { return r.Task.Status.State }

// Event is one entry of a task's event log: a status change or an artifact.
type Event struct {
	Seq       uint64          `json:"seq"`
	Status    *a2a.TaskStatus `json:"status,omitempty"`
	Artifact  *a2a.Artifact   `json:"artifact,omitempty"`
	Append    bool            `json:"append,omitempty"`
	LastChunk bool            `json:"lastChunk,omitempty"`

	// rec is the task as it stood after the event, when the publisher
	// had it; it is never stored.
	rec *Record
}

// Final reports whether the event ends an interaction: a terminal or
// interrupted status.
func (e Event) Final() bool {
	return e.Status != nil && (e.Status.State.Terminal() || e.Status.State.Interrupted())
}

// Notifies reports whether a transition from prev to next is pushed to
// the task's webhooks: reaching a terminal or interrupted state.
func Notifies(prev, next a2a.TaskState) bool {
	return prev != next && (next.Terminal() || next.Interrupted())
}

// IdemKey is the idempotency key of a message: the caller and the
// messageId, with a hash of the message to detect a reused id.
type IdemKey struct {
	Owner     string
	MessageID string
	Hash      [32]byte
	// Quota is the sender's quota, which the store checks in the
	// transaction that binds the key; zero is unlimited.
	Quota Quota
	// sent is the messageId the sender chose when MessageID is qualified
	// by an idempotency window (see windowed); "" when it is the same.
	sent string
}

// KeyFor returns the idempotency key of msg sent by owner: its hash is
// the sha256 of msg's canonical encoding (AppendCanonical). A message
// without one (which the decoders refuse before it gets here) hashes as
// no bytes at all, as it always has.
func KeyFor(owner string, msg *a2a.Message) IdemKey {
	b, _ := AppendCanonical(make([]byte, 0, 512), msg)
	return IdemKey{Owner: owner, MessageID: msg.MessageID, Hash: sha256.Sum256(b)}
}

// UpdateFunc changes rec inside a store transaction and returns the events
// it produced (their Seq is assigned by the store). rec is the task's
// head: its history and artifacts are not read, so that an update costs
// what it changes, not the size of the task. The messages fn appends to
// rec.Task.History are stored after the task's history (rec.HistoryLen
// counts those); the artifacts change only through the artifact events fn
// returns, which the store applies as ApplyArtifact does; rec.Input is
// empty, and an input fn sets replaces the task's. It must not do I/O,
// block or keep rec. Returning an error, or nil events, writes nothing
// (unless an idempotency key is being bound); returning an empty, non-nil
// slice writes rec's changes without an event (for what is no event of the
// task, such as its running process group).
type UpdateFunc func(rec *Record) ([]Event, error)

// Updated completes r, a head an UpdateFunc appended r.Task.History to
// and returned evs for, with what sc asks for, as a store's Update
// returns it: read holds the history (its last messages, as sc asked)
// and, if sc.Artifacts, the artifacts of the task before fn. The history
// is the read one and the appended messages, its last sc.History; the
// artifacts, the read ones with evs applied.
func Updated(r *Record, read *a2a.Task, sc Scope, evs []Event) *Record {
	hist := r.Task.History
	if len(read.History) > 0 {
		hist = append(read.History[:len(read.History):len(read.History)], hist...)
	}
	if sc.History >= 0 && len(hist) > sc.History {
		hist = hist[len(hist)-sc.History:]
	}
	hist = LastFitting(hist, r.Task.ID, r.Task.ContextID, sc.HistoryBytes)
	if len(hist) == 0 {
		hist = nil
	}
	r.Task.History = hist
	r.Task.Artifacts = nil
	if sc.Artifacts {
		arts := read.Artifacts
		for i := range evs {
			if a := evs[i].Artifact; a != nil {
				arts = ApplyArtifact(arts, a, evs[i].Append)
			}
		}
		r.Task.Artifacts = arts
	}
	return r
}

// Store keeps tasks durably. Every method that changes a task commits
// before it returns.
type Store interface {
	// Create stores rec with its first events, and binds key to it. If
	// key is already bound to a task, nothing is written and Create
	// returns that task's record with created=false, or
	// ErrMessageIDReused if the message differs. If the new task would
	// take key.Owner past key.Quota (one task more than Quota.Tasks, or
	// more than Quota.Bytes stored), nothing is written and Create
	// returns a *QuotaError.
	Create(ctx context.Context, key IdemKey, rec *Record, events []Event) (got *Record, created bool, err error)
	// Lookup returns the whole task key is bound to: ErrNotFound if it is
	// bound to none, ErrMessageIDReused if it was bound with another
	// message.
	Lookup(ctx context.Context, key IdemKey) (*Record, error)
	// Get returns the task id owned by owner, with what sc asks for, or
	// ErrNotFound. A foreign task costs what a missing one does: its
	// owner is checked before anything of it is decoded.
	Get(ctx context.Context, owner, id string, sc Scope) (*Record, error)
	// Update applies fn to the head of the task id owned by owner, in one
	// transaction, and returns the task after the change with what sc
	// asks for. If key is not nil and already bound, fn is not called and
	// Update returns the bound task with dup=true (ErrMessageIDReused if
	// the message differs or names another task); otherwise the key is
	// bound to the task along with fn's changes, unless they would take
	// key.Owner past key.Quota.Bytes: then nothing is written and Update
	// returns a *QuotaError. (A write without a key is refused so only
	// when fn sets rec.WriteQuota; it is always counted.) Returns
	// ErrNotFound for an unknown or
	// foreign task (before reading any of it), and fn's error unchanged.
	Update(ctx context.Context, owner, id string, key *IdemKey, sc Scope, fn UpdateFunc) (rec *Record, events []Event, dup bool, err error)
	// PushConfigs applies fn to the webhooks of the task id owned by
	// owner and stores what it returns, in one transaction (fn may run
	// more than once). Returns ErrNotFound for an unknown or foreign
	// task, and fn's error unchanged.
	PushConfigs(ctx context.Context, owner, id string, fn func([]a2a.PushConfig) ([]a2a.PushConfig, error)) ([]a2a.PushConfig, error)
	// Active returns the head and the input of every task that is not
	// terminal, from the non-terminal index.
	Active(ctx context.Context) ([]*Record, error)
	// Events returns the events of task id with a sequence above after.
	Events(ctx context.Context, id string, after uint64) ([]Event, error)
	// Expire deletes up to limit terminal tasks last updated before
	// cutoff, with their events and idempotency keys, and returns how
	// many it deleted.
	Expire(ctx context.Context, cutoff time.Time, limit int) (int, error)
	// List returns up to limit of owner's tasks that match f, in
	// Cursor order (newest list time first), starting below after (nil:
	// from the newest), each with what sc asks for. total is how many of
	// owner's tasks match f in all; next is the cursor of the last task
	// returned when more follow, else nil; a page that sc.ListBytes
	// ends early has fewer than limit tasks and a next. It reads an index
	// of owner's tasks, never the tasks of other owners.
	List(ctx context.Context, owner string, f ListFilter, after *Cursor, limit int, sc Scope) (recs []*Record, total int, next *Cursor, err error)
	Leases
}

// Leases is what the sweeper needs of a store that replicas share: each
// replica holds a lease while it lives, renewed by its heartbeats, on
// the calls it runs (the tasks whose Record.Runner it is); a task whose
// runner holds no lease, or whose lease lapsed long enough ago, is an
// orphan, which another replica takes over (the rule is the sweeper's).
// Leases are timed by the store's clock, so that replicas whose clocks
// differ agree on which have lapsed.
type Leases interface {
	// Heartbeat holds replica's lease for ttl from now; a ttl of 0 or
	// less ends it at once (a replica that stops).
	Heartbeat(ctx context.Context, replica string, ttl time.Duration) error
	// Orphans returns up to limit tasks, head and input, that are
	// submitted or working and whose Runner holds no lease: the task has
	// no runner, the runner never held a lease or ended it, or its lease
	// lapsed at least grace ago (by the store's clock).
	Orphans(ctx context.Context, grace time.Duration, limit int) ([]*Record, error)
}
