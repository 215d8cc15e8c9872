package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// A client cancels a tools/call with notifications/cancelled, naming the
// call's JSON-RPC request id. On a stateless server the notification is a
// request of its own, so the calls a client may cancel are kept here, by
// caller and request id: a running one by its context's cancel, and for a
// while after it answered, one whose task was still running (a client that
// cancels gives up on the answer first, and the notification may come
// after the call answered its aborted request). A cancel cancels the
// call's task, as an A2A cancel does. It reaches only the calls of this
// process: behind a balancer, a cancel that lands on another replica is
// not heard (MCP makes cancellation best-effort), and the task stays
// cancelable over A2A.

// errCancelled is the cause of a call's context when its client cancelled
// it.
var errCancelled = errors.New("the client cancelled the call")

// flightKeep is how long a call whose task was still running when it
// answered stays cancelable; maxEnded bounds how many such calls are kept.
const (
	flightKeep = time.Minute
	maxEnded   = 4096
)

// flights are the calls a client may cancel. The zero value is ready.
type flights struct {
	mu    sync.Mutex
	m     map[string]*flight
	ended int       // entries of ended calls
	swept time.Time // when ended calls past their time were last forgotten
}

// flight is one call: running (cancel set) or ended with its task still
// running then (taskID, until).
type flight struct {
	cancel    context.CancelCauseFunc
	requested bool // a cancel came while it ran
	taskID    string
	until     time.Time
}

// flightKey names the call of request id by caller: only the caller that
// made a call can cancel it.
func flightKey(c tasks.Caller, id json.RawMessage) string {
	return c.ID + "\x00" + c.CallGroup + "\x00" + string(id)
}

// start registers the running call key, cancelled through cancel.
func (f *flights) start(key string, cancel context.CancelCauseFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = make(map[string]*flight)
	}
	if old := f.m[key]; old != nil && old.cancel == nil {
		f.ended-- // a request id used again: the new call replaces the old one's record
	}
	f.m[key] = &flight{cancel: cancel}
}

// finish records that call key answered, with its task taskID ("" for
// none) still running if running; it reports whether its client cancelled
// it meanwhile (then the caller cancels the task).
func (f *flights) finish(key, taskID string, running bool, now time.Time) (requested bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.m[key]
	if fl == nil || fl.cancel == nil {
		return false
	}
	requested = fl.requested
	if f.ended >= maxEnded || now.Sub(f.swept) > flightKeep/4 {
		f.sweep(now) // a walk of the map now and then, not at each call
	}
	if requested || !running || taskID == "" || f.ended >= maxEnded {
		delete(f.m, key)
		return requested
	}
	f.m[key] = &flight{taskID: taskID, until: now.Add(flightKeep)}
	f.ended++
	return false
}

// cancelled tells call key that its client cancelled it: a running call's
// context is cancelled (its goroutine cancels the task); an ended one's
// task is returned, for the caller to cancel. "" when there is nothing
// to cancel here.
func (f *flights) cancelled(key string, now time.Time) (taskID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.m[key]
	switch {
	case fl == nil:
		return ""
	case fl.cancel != nil:
		fl.requested = true
		fl.cancel(errCancelled)
		return ""
	}
	delete(f.m, key)
	f.ended--
	if now.After(fl.until) {
		return ""
	}
	return fl.taskID
}

// sweep forgets the ended calls whose time passed.
func (f *flights) sweep(now time.Time) {
	f.swept = now
	for k, fl := range f.m {
		if fl.cancel == nil && now.After(fl.until) {
			delete(f.m, k)
			f.ended--
		}
	}
}

// cancelable is the context a call runs under, which its client's cancel
// cancels, and the func the call ends with: given the task the call
// answered (nil for none), it reports whether the client cancelled the
// call meanwhile, its task still running (then the call cancels it). A
// message without an id (a notification) cannot be cancelled.
func (rq *request) cancelable() (context.Context, func(task *a2a.Task) (cancel bool)) {
	if len(rq.id) == 0 {
		return rq.ctx, func(*a2a.Task) bool { return false }
	}
	ctx, cancel := context.WithCancelCause(rq.ctx)
	key := flightKey(rq.cl.Caller(), rq.id)
	rq.s.flights.start(key, cancel)
	return ctx, func(task *a2a.Task) bool {
		defer cancel(nil)
		running := task != nil && !task.Status.State.Terminal()
		id := ""
		if task != nil {
			id = task.ID
		}
		return rq.s.flights.finish(key, id, running, time.Now()) && running
	}
}

// cancelTask cancels task id, whose call its client cancelled, as an A2A
// cancel does (exec children end, http backends see the cancel), and is
// the call's answer: the client reads none.
func (rq *request) cancelTask(id string) error {
	if _, e := rq.s.cfg.Core.Cancel(context.WithoutCancel(rq.ctx), rq.cl, id, true); e != nil {
		return wireError(e)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Request cancelled: its task " + id + " is canceled"}
}

// cancelCall serves notifications/cancelled from cl's caller for the
// call of request id: a running call is cancelled (it cancels its task);
// the task of one that answered meanwhile is cancelled here.
func (s *Server) cancelCall(ctx context.Context, cl *transport.Call, id json.RawMessage) {
	if len(id) == 0 {
		return
	}
	if taskID := s.flights.cancelled(flightKey(cl.Caller(), id), time.Now()); taskID != "" {
		_, _ = s.cfg.Core.Cancel(ctx, cl, taskID, true) // a task that ended meanwhile stays as it ended
	}
}
