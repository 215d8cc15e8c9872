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

// subscriptions/listen (revision 2026-07-28) opens a stream of the
// notifications its filter names, which a2ad serves itself (the SDK's
// listen lives in a session):
//
//   - notifications.toolsListChanged: notifications/tools/list_changed
//     after each reload that changes the tools the caller sees;
//   - notifications.resourceSubscriptions: notifications/resources/updated
//     for each change of the caller's task a URI names (resources.go);
//   - notifications.taskIds, for a client that declares the tasks
//     extension: notifications/tasks carrying what tasks/get would answer
//     then.
//
// One listen is one stream, carrying every kind agreed, and watches at
// most one task: the first the caller has among its taskIds, then among
// its URIs (the acknowledgement names it in each field that named it).
// A URI of another caller's task and one of no task are left out of the
// acknowledgement alike. The stream is one stream of the core, with the
// call's one audit record, its drain and its key's revocation, like an A2A
// resubscription. It ends with the listen's result once its task ended,
// unless it hears reloads too: then when the client leaves, or the server
// drains. A listen that asks for nothing a2ad serves (prompts, say) is
// acknowledged with an empty filter and answered at once.

// listenMessage is a subscriptions/listen request as a2ad reads it.
type listenMessage struct {
	ID     json.RawMessage `json:"id"`
	Params struct {
		Notifications struct {
			ToolsListChanged      bool     `json:"toolsListChanged"`
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
			TaskIDs               []string `json:"taskIds"`
		} `json:"notifications"`
		Meta map[string]any `json:"_meta"`
	} `json:"params"`
}

// listen serves a subscriptions/listen of cl's caller.
func (s *Server) listen(ctx context.Context, w http.ResponseWriter, cl *transport.Call, body []byte) {
	var m listenMessage
	if json.Unmarshal(body, &m) != nil {
		writeAnswer(w, readEnvelope(body).ID, nil, s.noteErr(cl, invalidParams("notifications",
			"must be an object whose toolsListChanged is a boolean and whose resourceSubscriptions and taskIds are arrays of strings")))
		return
	}
	asksTasks := s.cfg.TaskAfter > 0 && len(m.Params.Notifications.TaskIDs) > 0
	switch {
	case len(m.ID) == 0 || string(m.ID) == "null":
		writeAnswer(w, nil, nil, s.noteErr(cl, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: subscriptions/listen is a request: it needs an id"}))
		return
	case asksTasks && !declaresTasks(m.Params.Meta):
		writeAnswer(w, m.ID, nil, s.noteErr(cl, errMissingCapability))
		return
	}
	core := s.cfg.Core
	if e := core.StreamsRefused(); e != nil {
		writeAnswer(w, m.ID, nil, wireError(e))
		return
	}
	ag := s.agree(ctx, cl, &m, asksTasks)
	lw := &listenWriter{w: w, s: s, cl: cl, ctx: ctx, sub: m.ID, ag: ag, lastURI: ag.baseline}
	lw.start()
	if ag.task != "" || ag.Tools {
		open := func(ctx context.Context) (transport.Opened, *a2a.Error) {
			var watch *transport.Opened
			if ag.task != "" {
				o, e := core.OpenWatch(ctx, cl, ag.task, nil, false)
				if e != nil {
					return transport.Opened{}, e
				}
				watch = &o
			}
			return transport.OpenFunc(lw.run(watch)), nil
		}
		if e := core.Stream(ctx, cl, open, lw); e != nil {
			// Refused after the acknowledgement (draining, or the key
			// revoked before the stream was registered): the listen's answer
			// is the refusal, as for a stream the core ends later.
			lw.Fail(e)
			return
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

	ag *agreement

	mu     sync.Mutex
	failed bool
	ended  bool   // the listen's answer is written
	last   string // the status and time last told as notifications/tasks, to tell each change once
	// lastURI is the task's status and time last told as
	// notifications/resources/updated (at first, when it was agreed).
	lastURI string
}

var _ transport.Sink = (*listenWriter)(nil)

// subscriptionMeta is the _meta naming the listen a message belongs to.
func (lw *listenWriter) subscriptionMeta() map[string]json.RawMessage {
	return map[string]json.RawMessage{sdk.MetaKeySubscriptionID: lw.sub}
}

// start writes the headers and the acknowledgement naming what was
// agreed.
func (lw *listenWriter) start() {
	h := lw.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	lw.w.WriteHeader(http.StatusOK)
	lw.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{"notifications": lw.ag.filter, "_meta": lw.subscriptionMeta()}})
}

// finish writes the listen's result, unless its answer is written: the
// subscription ended.
func (lw *listenWriter) finish() {
	lw.mu.Lock()
	ended := lw.ended
	lw.ended = true
	lw.mu.Unlock()
	if ended {
		return
	}
	lw.send(map[string]any{"jsonrpc": "2.0", "id": lw.sub,
		"result": map[string]any{"resultType": "complete", "_meta": lw.subscriptionMeta()}})
}

// send writes v as one SSE event and flushes it.
func (lw *listenWriter) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	lw.write(append(append([]byte("event: message\ndata: "), b...), '\n', '\n'))
}

// write writes b, SSE, to the client and flushes it.
func (lw *listenWriter) write(b []byte) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.failed {
		return
	}
	rc := http.NewResponseController(lw.w)
	_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second)) // a client that stops reading is cut off
	if _, err := lw.w.Write(b); err != nil {
		lw.failed = true
		return
	}
	if rc.Flush() != nil {
		lw.failed = true
	}
}

// Event tells the client of the task as it stands after e, read from the
// store (an event carries a change, the notification the whole task):
// once per status, as notifications/tasks and notifications/resources/updated,
// as agreed.
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
	if lw.ag.tasks {
		var schema json.RawMessage
		if t.Status.State.Interrupted() {
			schema = lw.s.inputSchema(lw.cl, t)
		}
		d := lw.s.detail(t, "", schema)
		if key := d.Status + " " + d.LastUpdatedAt; key != lw.last {
			lw.last = key
			lw.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks", "params": notificationTask{d, lw.sub}})
		}
	}
	if lw.ag.uri != "" {
		if key := changeKey(t); key != lw.lastURI {
			lw.lastURI = key
			lw.send(lw.notification("notifications/resources/updated", map[string]any{"uri": lw.ag.uri}))
		}
	}
	if lw.broken() {
		return transport.ErrWrite
	}
	return nil
}

// broken reports whether a write to the client failed.
func (lw *listenWriter) broken() bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.failed
}

// notification is a notification of method on the listen's stream:
// params and the listen's subscription id in _meta.
func (lw *listenWriter) notification(method string, params map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = lw.subscriptionMeta()
	return map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
}

// notificationTask is a detailed task without a resultType, as
// notifications/tasks carries it, with the listen's subscription id in
// its _meta, as every message on a listen's stream has.
type notificationTask struct {
	detailedTask
	sub json.RawMessage
}

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
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
	}
	meta[sdk.MetaKeySubscriptionID] = n.sub
	if m["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

func (lw *listenWriter) Started() bool { return true }
func (lw *listenWriter) Start()        {}

// Fail answers the listen with e (its key was revoked): the stream ends
// with that error instead of a result.
func (lw *listenWriter) Fail(e *a2a.Error) {
	lw.mu.Lock()
	ended := lw.ended
	lw.ended = true
	lw.mu.Unlock()
	if !ended {
		lw.send(map[string]any{"jsonrpc": "2.0", "id": lw.sub, "error": wireError(e)})
	}
}
func (lw *listenWriter) Close() {}
