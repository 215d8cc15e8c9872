package mcp

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/a2a"
)

// Long calls as task handles: the tasks extension of MCP 2026-07-28
// (io.modelcontextprotocol/tasks, SEP-2663). A client that declares the
// extension in a call's per-request capabilities gets, for a call not
// finished within Config.TaskAfter, a CreateTaskResult naming the call's
// a2ad task instead of waiting for the result; it polls tasks/get, answers
// a function waiting for input with tasks/update and gives up with
// tasks/cancel (taskmethods.go). The handle is the a2ad task itself: every
// method reads and changes it in the store through the core, for the
// caller that calls, so a handle outlives an a2ad restart and works on
// any replica of a shared store. A client that does not declare the
// extension gets the result, as before.

// The names the extension defines.
const (
	// TasksExtension is the extension's identifier, in capabilities.
	TasksExtension = "io.modelcontextprotocol/tasks"
	// clientCapabilitiesKey holds a request's capabilities in its _meta.
	clientCapabilitiesKey = "io.modelcontextprotocol/clientCapabilities"
)

// The extension's task statuses.
const (
	statusWorking       = "working"
	statusInputRequired = "input_required"
	statusCompleted     = "completed"
	statusCancelled     = "cancelled"
)

// The default hints: how soon a call becomes a handle, and how often a
// client should poll one.
const (
	DefaultTaskAfter    = time.Second
	DefaultPollInterval = time.Second
)

// declaresTasks reports whether meta, a request's _meta, declares the
// tasks extension in its per-request capabilities (an object, empty or
// not, under capabilities.extensions).
func declaresTasks(meta map[string]any) bool {
	caps, _ := meta[clientCapabilitiesKey].(map[string]any)
	exts, _ := caps["extensions"].(map[string]any)
	_, ok := exts[TasksExtension].(map[string]any)
	return ok
}

// extStatus is the extension's status of an a2ad task state. A function
// that failed or was rejected ended a call all the same: its result says
// isError, as a call answered at once does, so the task is "completed"
// (the extension's "failed" is for JSON-RPC errors, which a2ad answers
// before a task exists). A task waiting for its client, for input or for
// authorization, is "input_required"; submitted and working are
// "working".
func extStatus(st a2a.TaskState) string {
	switch {
	case st == a2a.StateCanceled:
		return statusCancelled
	case st.Terminal():
		return statusCompleted
	case st.Interrupted():
		return statusInputRequired
	}
	return statusWorking
}

// detailedTask is the extension's Task with its status's fields: a
// CreateTaskResult (resultType "task"), a tasks/get result ("complete").
type detailedTask struct {
	ResultType     string                  `json:"resultType"`
	TaskID         string                  `json:"taskId"`
	Status         string                  `json:"status"`
	StatusMessage  string                  `json:"statusMessage,omitempty"`
	CreatedAt      string                  `json:"createdAt"`
	LastUpdatedAt  string                  `json:"lastUpdatedAt"`
	TTLMs          *int64                  `json:"ttlMs"`
	PollIntervalMs int64                   `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]inputRequest `json:"inputRequests,omitempty"`
	Result         *markedResult           `json:"result,omitempty"` // marked complete, as every result of 2026-07-28 is: the extension's clients check it
}

// createTaskResult is a call's answer as a handle, through the SDK (whose
// results embed ResultBase).
type createTaskResult struct {
	sdk.ResultBase
	detailedTask
}

// inputRequest is a server-to-client request a task waits on: an
// elicitation, the only kind a2ad asks.
type inputRequest struct {
	Method string        `json:"method"`
	Params elicitRequest `json:"params"`
}

// elicitRequest are the params of elicitation/create, form mode.
type elicitRequest struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// handle is the CreateTaskResult of a call whose task t did not end
// within the bound.
func (s *Server) handle(t *a2a.Task) *createTaskResult {
	d := s.detail(t, "task", nil)
	r := &createTaskResult{detailedTask: d}
	r.Meta = sdk.Meta{TaskIDKey: t.ID, TaskStateKey: string(t.Status.State)}
	return r
}

// detail is task t as the extension shows it, resultType rt; schema is
// the input schema a task waiting for input asks for (nil: any object).
func (s *Server) detail(t *a2a.Task, rt string, schema json.RawMessage) detailedTask {
	st := t.Status
	updated := parseTime(st.Timestamp)
	created := createdAt(t.ID, updated)
	d := detailedTask{
		ResultType:     rt,
		TaskID:         t.ID,
		Status:         extStatus(st.State),
		StatusMessage:  statusText(st.Message),
		CreatedAt:      a2a.Timestamp(created),
		LastUpdatedAt:  a2a.Timestamp(updated),
		PollIntervalMs: s.pollInterval().Milliseconds(),
	}
	if st.State.Terminal() && s.cfg.Retention > 0 {
		// Kept for the retention from its end: from its creation, that
		// long plus its run.
		ttl := updated.Add(s.cfg.Retention).Sub(created).Milliseconds()
		d.TTLMs = &ttl
	}
	switch d.Status {
	case statusCompleted:
		d.Result = &markedResult{taskResult(t)}
		d.StatusMessage = ""
	case statusInputRequired:
		schema = elicitSchema(schema)
		msg := d.StatusMessage
		if msg == "" {
			msg = "The function needs more input."
		}
		d.InputRequests = map[string]inputRequest{inputKey(t): {
			Method: "elicitation/create",
			Params: elicitRequest{Mode: "form", Message: msg, RequestedSchema: schema},
		}}
	}
	return d
}

// elicitSchema is schema, a tool's input schema, as an elicitation's
// requestedSchema: MCP's has "properties", which a tool's may leave out
// (nil: any object, none declared).
func elicitSchema(schema json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(schema, &m) != nil || m == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if _, ok := m["properties"]; ok {
		return schema
	}
	m["properties"] = json.RawMessage(`{}`)
	b, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return b
}

// inputKey names the question task t waits on: its status message's id,
// new with each question, so a key is never used for two (as the
// extension requires); the status's time when the message has no id.
func inputKey(t *a2a.Task) string {
	if m := t.Status.Message; m != nil && m.MessageID != "" {
		return "input-" + m.MessageID
	}
	return "input-" + t.Status.Timestamp
}

func (s *Server) pollInterval() time.Duration {
	if s.cfg.PollInterval > 0 {
		return s.cfg.PollInterval
	}
	return DefaultPollInterval
}

// parseTime reads an A2A timestamp; now when it is absent or bad.
func parseTime(ts string) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
		return t
	}
	return time.Now()
}

// createdAt is when task id was created: a2ad's task ids are UUIDv7,
// whose first 48 bits are the creation's Unix milliseconds (the A2A task
// keeps no creation time). An id of another form (none a2ad makes) gives
// fallback.
func createdAt(id string, fallback time.Time) time.Time {
	b, err := hex.DecodeString(strings.ReplaceAll(id, "-", ""))
	if err != nil || len(b) != 16 || b[6]>>4 != 7 {
		return fallback
	}
	var ms int64
	for _, c := range b[:6] {
		ms = ms<<8 | int64(c)
	}
	return time.UnixMilli(ms)
}
