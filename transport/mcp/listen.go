package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// notifications/tasks: a client that declares the tasks extension opens
// subscriptions/listen naming task ids in notifications.taskIds and hears
// each change of the task as a notifications/tasks carrying what tasks/get
// would answer then, on the request's SSE stream. a2ad agrees to one task
// per listen request (the first the caller has; the acknowledgement names
// it, or none): the watch is one stream of the core, with the call's one
// audit record, its drain and its key's revocation, like an A2A
// resubscription. The stream ends with the listen's result once the task
// ended. The SDK reads no taskIds, so a2ad serves such a listen itself; any
// other goes to the SDK, as before.

// listenMessage is a subscriptions/listen request as a2ad reads it.
type listenMessage struct {
	ID     json.RawMessage `json:"id"`
	Params struct {
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
		Meta map[string]any `json:"_meta"`
	} `json:"params"`
}

// listensTasks reports whether body, a subscriptions/listen, names tasks.
func listensTasks(body []byte) bool {
	var m listenMessage
	return json.Unmarshal(body, &m) == nil && len(m.Params.Notifications.TaskIDs) > 0
}

// listenTasks serves a subscriptions/listen of cl's caller that names
// tasks.
func (s *Server) listenTasks(ctx context.Context, w http.ResponseWriter, cl *transport.Call, body []byte) {
	var m listenMessage
	_ = json.Unmarshal(body, &m) // listensTasks read it
	switch {
	case len(m.ID) == 0 || string(m.ID) == "null":
		writeAnswer(w, nil, nil, s.noteErr(cl, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: subscriptions/listen is a request: it needs an id"}))
		return
	case !declaresTasks(m.Params.Meta):
		writeAnswer(w, m.ID, nil, s.noteErr(cl, errMissingCapability))
		return
	}
	core := s.cfg.Core
	if e := core.StreamsRefused(); e != nil {
		writeAnswer(w, m.ID, nil, wireError(e))
		return
	}
	zero := 0
	var agreed []string
	for _, id := range m.Params.Notifications.TaskIDs {
		if id == "" || len(id) > a2a.MaxIDBytes {
			continue
		}
		if _, e := core.Get(ctx, cl, a2a.TaskQuery{ID: id, HistoryLength: &zero}, false); e == nil {
			agreed = []string{id}
			break
		}
	}
	lw := &listenWriter{w: w, s: s, cl: cl, ctx: ctx, sub: m.ID}
	lw.start(agreed)
	if len(agreed) == 1 {
		open := func(ctx context.Context) (transport.Opened, *a2a.Error) {
			return core.OpenWatch(ctx, cl, agreed[0], nil, false)
		}
		if e := core.Stream(ctx, cl, open, lw); e != nil {
			return // the watch was refused (draining, the key revoked): the stream ends without a result
		}
	}
	lw.finish()
}

// listenWriter writes a listen's SSE stream: the acknowledgement, a
// notifications/tasks for each change of the task, the result. It is the
// core stream's Sink.
type listenWriter struct {
	w  http.ResponseWriter
	s  *Server
	cl *transport.Call
	// ctx is the request's, kept for the reads Event makes: a Sink's
	// methods take none, and the writer lives no longer than the request.
	ctx context.Context
	sub json.RawMessage // the listen's id, its subscription id

	mu     sync.Mutex
	failed bool
	last   string // the status and time last told, to tell each change once
}

var _ transport.Sink = (*listenWriter)(nil)

// subscriptionMeta is the _meta naming the listen a message belongs to.
func (lw *listenWriter) subscriptionMeta() map[string]json.RawMessage {
	return map[string]json.RawMessage{sdk.MetaKeySubscriptionID: lw.sub}
}

// start writes the headers and the acknowledgement naming the agreed
// task ids.
func (lw *listenWriter) start(agreed []string) {
	h := lw.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	lw.w.WriteHeader(http.StatusOK)
	if agreed == nil {
		agreed = []string{}
	}
	type ackNotifications struct {
		TaskIDs []string `json:"taskIds"`
	}
	lw.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{"notifications": ackNotifications{agreed}, "_meta": lw.subscriptionMeta()}})
}

// finish writes the listen's result: the subscription ended.
func (lw *listenWriter) finish() {
	lw.send(map[string]any{"jsonrpc": "2.0", "id": lw.sub,
		"result": map[string]any{"resultType": "complete", "_meta": lw.subscriptionMeta()}})
}

// send writes v as one SSE event and flushes it.
func (lw *listenWriter) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.failed {
		return
	}
	rc := http.NewResponseController(lw.w)
	_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second)) // a client that stops reading is cut off
	if _, err := lw.w.Write(append(append([]byte("event: message\ndata: "), b...), '\n', '\n')); err != nil {
		lw.failed = true
		return
	}
	if rc.Flush() != nil {
		lw.failed = true
	}
}

// Event tells the client of the task as it stands after e, read from the
// store (an event carries a change, the notification the whole task):
// once per status.
func (lw *listenWriter) Event(e tasks.StreamEvent) error {
	var id string
	switch {
	case e.Task != nil:
		id = e.Task.ID
	case e.Status != nil:
		id = e.Status.TaskID
	default:
		return nil // artifacts: the result comes with the completed status
	}
	t, ae := lw.s.cfg.Core.Get(lw.ctx, lw.cl, a2a.TaskQuery{ID: id}, false)
	if ae != nil {
		return nil // gone meanwhile: nothing to tell
	}
	var schema json.RawMessage
	if t.Status.State.Interrupted() {
		schema = lw.s.inputSchema(lw.cl, t)
	}
	d := lw.s.detail(t, "", schema)
	if key := d.Status + " " + d.LastUpdatedAt; key != lw.last {
		lw.last = key
		lw.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks", "params": notificationTask{d}})
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.failed {
		return transport.ErrWrite
	}
	return nil
}

// notificationTask is a detailed task without a resultType, as
// notifications/tasks carries it.
type notificationTask struct{ detailedTask }

func (n notificationTask) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(n.detailedTask)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "resultType")
	return json.Marshal(m)
}

func (lw *listenWriter) Started() bool     { return true }
func (lw *listenWriter) Start()            {}
func (lw *listenWriter) Fail(e *a2a.Error) {}
func (lw *listenWriter) Close()            {}
