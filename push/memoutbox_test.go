package push_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/a2ad/a2ad/push"
)

// MemOutbox is an in-memory push.Outbox for tests. It keeps the real
// outbox's rules (Due returns at most one delivery per (task, config):
// the lowest ID, if it is due) and records every call but Request's.
// Due hands out no request fields; Request those of the delivery as
// added.
type MemOutbox struct {
	// DueErr, when set, is called with Due's context at the start of
	// every Due; a non-nil result is returned as Due's error. RequestErr
	// is the same for Request. Set them before the sender starts.
	DueErr     func(ctx context.Context) error
	RequestErr func(ctx context.Context, id uint64) error

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]push.Delivery
	dead    []push.Delivery
	gone    map[uint64]bool
	done    []uint64 // delivered IDs, in order
	calls   []OutboxCall
}

// OutboxCall is one recorded call of a MemOutbox method.
type OutboxCall struct {
	Method string // "Due", "Delivered", "Retry" or "Dead"
	// Due's arguments.
	Now   time.Time
	Limit int
	// Delivered's, Retry's and Dead's arguments.
	ID       uint64
	Seq      uint64 // Delivered only
	URL      string // Dead only
	Attempts int
	Next     time.Time // Retry only
	LastErr  string
}

var _ push.Outbox = (*MemOutbox)(nil)

// NewMemOutbox returns an empty outbox.
func NewMemOutbox() *MemOutbox {
	return &MemOutbox{pending: make(map[uint64]push.Delivery), gone: make(map[uint64]bool)}
}

// Gone makes delivery id's task gone: Request drops it with push.ErrGone.
func (o *MemOutbox) Gone(id uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gone[id] = true
}

// Add stores d with the next ID and returns that ID. A zero NextAt makes
// it due at once.
func (o *MemOutbox) Add(d push.Delivery) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nextID++
	d.ID = o.nextID
	o.pending[d.ID] = d
	return d.ID
}

// Due implements push.Outbox.
func (o *MemOutbox) Due(ctx context.Context, now time.Time, limit int) ([]push.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if o.DueErr != nil {
		if err := o.DueErr(ctx); err != nil {
			return nil, err
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, OutboxCall{Method: "Due", Now: now, Limit: limit})

	type pair struct{ task, config string }
	first := make(map[pair]push.Delivery)
	for _, d := range o.pending {
		p := pair{d.TaskID, d.ConfigID}
		if f, ok := first[p]; !ok || d.ID < f.ID {
			first[p] = d
		}
	}
	var due []push.Delivery
	for _, d := range first {
		if !d.NextAt.After(now) {
			// As the real outbox: the request comes from Request.
			due = append(due, push.Delivery{ID: d.ID, TaskID: d.TaskID, ConfigID: d.ConfigID,
				Attempts: d.Attempts, NextAt: d.NextAt, LastError: d.LastError})
		}
	}
	slices.SortFunc(due, func(a, b push.Delivery) int { return cmp.Compare(a.ID, b.ID) })
	if len(due) > limit {
		due = due[:limit]
	}
	return due, nil
}

// Request implements push.Outbox. It fails if d is not pending.
func (o *MemOutbox) Request(ctx context.Context, d *push.Delivery) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.RequestErr != nil {
		if err := o.RequestErr(ctx, d.ID); err != nil {
			return err
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.pending[d.ID]
	switch {
	case !ok:
		return fmt.Errorf("request: no pending delivery %d", d.ID)
	case o.gone[d.ID]:
		delete(o.pending, d.ID)
		return push.ErrGone
	}
	d.URL, d.Token, d.Auth, d.Task, d.Wire, d.Seq = p.URL, p.Token, p.Auth, p.Task, p.Wire, p.Seq
	return nil
}

// Delivered implements push.Outbox. It fails if id is not pending.
func (o *MemOutbox) Delivered(ctx context.Context, id, seq uint64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, OutboxCall{Method: "Delivered", ID: id, Seq: seq})
	if _, ok := o.pending[id]; !ok {
		return fmt.Errorf("delivered: no pending delivery %d", id)
	}
	delete(o.pending, id)
	o.done = append(o.done, id)
	return nil
}

// Retry implements push.Outbox. It fails if id is not pending.
func (o *MemOutbox) Retry(ctx context.Context, id uint64, attempts int, next time.Time, lastErr string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, OutboxCall{Method: "Retry", ID: id, Attempts: attempts, Next: next, LastErr: lastErr})
	d, ok := o.pending[id]
	if !ok {
		return fmt.Errorf("retry: no pending delivery %d", id)
	}
	d.Attempts, d.NextAt, d.LastError = attempts, next, lastErr
	o.pending[id] = d
	return nil
}

// Dead implements push.Outbox. It fails if id is not pending.
func (o *MemOutbox) Dead(ctx context.Context, id uint64, url string, attempts int, lastErr string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, OutboxCall{Method: "Dead", ID: id, URL: url, Attempts: attempts, LastErr: lastErr})
	d, ok := o.pending[id]
	if !ok {
		return fmt.Errorf("dead: no pending delivery %d", id)
	}
	delete(o.pending, id)
	d.Attempts, d.LastError = attempts, lastErr
	o.dead = append(o.dead, d)
	return nil
}

// Calls returns the recorded calls, Due's included, in order.
func (o *MemOutbox) Calls() []OutboxCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.calls)
}

// Outcomes returns the recorded Delivered, Retry and Dead calls, in
// order.
func (o *MemOutbox) Outcomes() []OutboxCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []OutboxCall
	for _, c := range o.calls {
		if c.Method != "Due" {
			out = append(out, c)
		}
	}
	return out
}

// DeliveredIDs returns the delivered IDs, in the order they were
// delivered.
func (o *MemOutbox) DeliveredIDs() []uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.done)
}

// DeadLetters returns the dead-lettered deliveries, in order.
func (o *MemOutbox) DeadLetters() []push.Delivery {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.dead)
}

// Pending returns how many deliveries are neither delivered nor dead.
func (o *MemOutbox) Pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending)
}
