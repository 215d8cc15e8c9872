package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// What a subscriptions/listen agrees to (listen.go says how it is
// served): the filter its acknowledgement carries, and what the stream
// then watches.

// maxListenIDs is how many of a filter's task ids, and of its URIs, a
// listen looks at: each costs a read of the store.
const maxListenIDs = 16

// ackFilter is the filter of a listen's acknowledgement: the subset of
// the request's that a2ad honours.
type ackFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// TaskIDs is there, empty or not, when the request asked for tasks.
	TaskIDs *[]string `json:"taskIds,omitempty"`
}

// agreement is what a listen agreed to.
type agreement struct {
	filter ackFilter
	// Tools: the stream hears reloads, from next on; view is the caller's
	// tools as they were when it was agreed.
	Tools bool
	next  <-chan struct{}
	view  [sha256.Size]byte
	// task is the one task watched, "" for none; tasks is whether its
	// changes are told as notifications/tasks, uri its URI when they are
	// told as notifications/resources/updated ("" when not), and
	// baseline the task's changeKey when it was agreed.
	task     string
	tasks    bool
	uri      string
	baseline string
}

// agree reads what m asks for and decides what the listen honours:
// toolsListChanged always; of its task ids (when asksTasks) and then of
// its URIs, the first that names a task of the caller's. A URI of another
// caller's task, of no task, or of no a2ad task at all is left out alike.
func (s *Server) agree(ctx context.Context, cl *transport.Call, m *listenMessage, asksTasks bool) *agreement {
	n := &m.Params.Notifications
	ag := &agreement{}
	if n.ToolsListChanged {
		ag.Tools, ag.filter.ToolsListChanged = true, true
		// First the reload to wait for, then the view: a reload between
		// the two is heard, not missed.
		ag.next = s.reloads.wait()
		ag.view = s.toolsView(cl)
	}
	has := func(id string) bool {
		if ag.task != "" {
			return id == ag.task
		}
		zero := 0
		if id == "" || len(id) > a2a.MaxIDBytes {
			return false
		}
		t, e := s.cfg.Core.Get(ctx, cl, a2a.TaskQuery{ID: id, HistoryLength: &zero}, false)
		if e != nil {
			return false
		}
		ag.task, ag.baseline = id, changeKey(t)
		return true
	}
	if asksTasks {
		ids := []string{}
		for _, id := range n.TaskIDs[:min(len(n.TaskIDs), maxListenIDs)] {
			if has(id) {
				ids, ag.tasks = []string{id}, true
				break
			}
		}
		ag.filter.TaskIDs = &ids
	}
	for _, uri := range n.ResourceSubscriptions[:min(len(n.ResourceSubscriptions), maxListenIDs)] {
		id, ok := strings.CutPrefix(uri, TaskURIPrefix)
		if ok && !strings.ContainsAny(id, "/?#") && has(id) {
			ag.uri, ag.filter.ResourceSubscriptions = uri, []string{uri}
			break
		}
	}
	return ag
}

// changeKey tells one state of a task from the next: its status and the
// time it took it.
func changeKey(t *a2a.Task) string {
	return string(t.Status.State) + " " + t.Status.Timestamp
}

// reloads tells the listens that hear reloads of each one: wait's
// channel is closed at the next tell.
type reloads struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns the channel the next reload closes.
func (r *reloads) wait() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch == nil {
		r.ch = make(chan struct{})
	}
	return r.ch
}

// tell wakes every listen waiting for a reload.
func (r *reloads) tell() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch != nil {
		close(r.ch)
		r.ch = nil
	}
}

// Reloaded tells the server that the catalogue or the keys were reloaded:
// each listen that asked for toolsListChanged gets
// notifications/tools/list_changed if the tools its caller sees changed.
// Call it after each reload.
func (s *Server) Reloaded() { s.reloads.tell() }

// toolsView sums up the tools cl's caller sees over MCP, with the tiers
// its credentials have now, as tools/list would show them: a change of
// any of them, or of which, changes it.
func (s *Server) toolsView(cl *transport.Call) [sha256.Size]byte {
	caller := cl.Caller()
	if s.cfg.Tiers != nil {
		caller.Tiers = s.cfg.Tiers(cl.Principal())
	}
	h := sha256.New()
	for _, f := range s.visible(caller) {
		b, _ := json.Marshal(tool(f))
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// run is the stream of a listen: the watch of its task (nil for none),
// and the reloads it hears, if it does, until the client leaves or the
// stream is ended. The watch ends with its task, the reloads do not.
func (lw *listenWriter) run(watch *transport.Opened) func(ctx context.Context, emit func(tasks.StreamEvent) error) error {
	return func(ctx context.Context, emit func(tasks.StreamEvent) error) error {
		switch {
		case !lw.ag.Tools:
			return watch.Run(ctx, emit)
		case watch == nil:
			return lw.hearReloads(ctx)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		var wg sync.WaitGroup
		var err error
		wg.Go(func() {
			err = lw.hearReloads(ctx)
			cancel(err) // the client is gone, or the stream ended: the watch too
		})
		if werr := watch.Run(ctx, emit); werr != nil {
			cancel(werr) // cut off (a slow reader): the whole stream ends
		}
		wg.Wait()
		return err
	}
}

// hearReloads tells the client notifications/tools/list_changed after
// each reload that changed the tools its caller sees, and keeps the
// stream alive in between, until ctx ends: it returns ctx's cause (the
// core tells a revoked key from a drain by it), or ErrWrite once the
// client is gone.
func (lw *listenWriter) hearReloads(ctx context.Context) error {
	next, seen := lw.ag.next, lw.ag.view
	var tick <-chan time.Time
	if every := lw.s.cfg.Core.KeepAlive(); every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick:
			lw.write([]byte(": keep-alive\n\n"))
		case <-next:
			next = lw.s.reloads.wait()
			if v := lw.s.toolsView(lw.cl); v != seen {
				seen = v
				lw.send(lw.notification("notifications/tools/list_changed", nil))
			}
		}
		if lw.broken() {
			return transport.ErrWrite
		}
	}
}

// listenRevision is the first revision with subscriptions/listen.
const listenRevision = "2026-07-28"

// capabilities are the server's capabilities for a request of revision
// version: a client of revision 2026-07-28 or later hears list changes
// and resource updates on a listen (tools.listChanged,
// resources.subscribe); an older one would wait for them on a session's
// stream, which this stateless server has not, or send
// resources/subscribe, which it does not serve, so it is offered neither.
func capabilities(version string) *sdk.ServerCapabilities {
	listens := version >= listenRevision
	return &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: listens}, Resources: &sdk.ResourceCapabilities{Subscribe: listens}}
}
