package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/transport"
)

// The methods of the tasks extension on a handle: tasks/get, tasks/update
// and tasks/cancel. The SDK knows none of them, so a2ad reads and answers
// them itself, after the core admitted the request (authentication,
// limits, body cap) as for any other message. Each reads or changes the
// a2ad task in the store through the core, for the caller that calls: a
// task of another caller and one that does not exist get the same error,
// byte for byte (errUnknownTask).

// CodeMissingCapability is the extension's error for a client that did
// not declare it on a request that needs it.
const CodeMissingCapability = -32021

// errUnknownTask is the error of a task id the caller has no task of:
// the same whether the task is another caller's or does not exist (no
// existence oracle), in the words of the extension's example.
var errUnknownTask = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}

// errMissingCapability answers a tasks/* request whose _meta does not
// declare the extension, naming it as the extension says.
var errMissingCapability = &jsonrpc.Error{Code: CodeMissingCapability, Message: "Missing required client capability",
	Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}`)}

// isTaskMethod reports whether method is one of the extension's.
func isTaskMethod(method string) bool {
	return method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel"
}

// taskMessage is a tasks/* request as a2ad reads it.
type taskMessage struct {
	ID     json.RawMessage `json:"id"`
	Params struct {
		TaskID         any                        `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		Meta           map[string]any             `json:"_meta"`
	} `json:"params"`
}

// emptyAck is the empty acknowledgement of tasks/update and tasks/cancel.
var emptyAck = map[string]string{"resultType": "complete"}

// serveTask answers method, a tasks/* request of cl's caller whose body
// is body.
func (s *Server) serveTask(ctx context.Context, w http.ResponseWriter, cl *transport.Call, method string, body []byte) {
	var m taskMessage
	if err := json.Unmarshal(body, &m); err != nil {
		writeAnswer(w, nil, nil, s.noteErr(cl, invalidParams("params", "must be an object with a string taskId")))
		return
	}
	if len(m.ID) == 0 || string(m.ID) == "null" {
		writeAnswer(w, nil, nil, s.noteErr(cl, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: " + method + " is a request: it needs an id"}))
		return
	}
	if !declaresTasks(m.Params.Meta) {
		writeAnswer(w, m.ID, nil, s.noteErr(cl, errMissingCapability))
		return
	}
	id, _ := m.Params.TaskID.(string)
	if id == "" || len(id) > a2a.MaxIDBytes {
		writeAnswer(w, m.ID, nil, s.noteErr(cl, invalidParams("taskId", "must be a string of 1 to "+strconv.Itoa(a2a.MaxIDBytes)+" bytes")))
		return
	}
	var (
		res any
		e   *jsonrpc.Error
	)
	switch method {
	case "tasks/get":
		res, e = s.getTask(ctx, cl, id)
	case "tasks/cancel":
		res, e = s.cancelHandle(ctx, cl, id)
	default:
		res, e = s.updateTask(ctx, cl, id, m.Params.InputResponses)
	}
	writeAnswer(w, m.ID, res, e)
}

// noteErr notes e, a refusal of a request's params, in the audit record.
func (s *Server) noteErr(cl *transport.Call, e *jsonrpc.Error) *jsonrpc.Error {
	cl.NoteError(&a2a.Error{Code: int(e.Code), Message: e.Message}, nil)
	return e
}

// taskError is the JSON-RPC error of e, the core's answer about a task:
// not found (another caller's, or none) is errUnknownTask.
func taskError(e *a2a.Error) *jsonrpc.Error {
	if e.Code == a2a.CodeTaskNotFound {
		return errUnknownTask
	}
	return wireError(e)
}

// getTask serves tasks/get: the task as it stands, with its result when
// it ended and the question it waits on when it waits.
func (s *Server) getTask(ctx context.Context, cl *transport.Call, id string) (any, *jsonrpc.Error) {
	t, e := s.cfg.Core.Get(ctx, cl, a2a.TaskQuery{ID: id}, true)
	if e != nil {
		return nil, taskError(e)
	}
	var schema json.RawMessage
	if t.Status.State.Interrupted() {
		schema = s.inputSchema(cl, t)
	}
	return s.detail(t, "complete", schema), nil
}

// inputSchema is the input schema of the tool task t calls, as tools/list
// gives it, for the question the task asks; nil when the task names no
// tool the caller sees.
func (s *Server) inputSchema(cl *transport.Call, t *a2a.Task) json.RawMessage {
	fn := firstSkill(t)
	if fn == "" {
		return nil
	}
	for _, f := range s.visible(cl.Caller()) {
		if schema, ok := tool(f).InputSchema.(json.RawMessage); ok && f.ID == fn {
			return schema
		}
	}
	return nil
}

// firstSkill is the function t's first message names (a tools/call's
// does); "" for none.
func firstSkill(t *a2a.Task) string {
	if len(t.History) == 0 {
		return ""
	}
	first := *t
	first.History = t.History[:1]
	return functionOf(&first)
}

// cancelHandle serves tasks/cancel: the task is cancelled as an A2A
// cancel does (exec children end, HTTP backends see the cancel). A task
// that ended meanwhile stays as it ended: the cancel is acknowledged, as
// the extension's cooperative cancel allows.
func (s *Server) cancelHandle(ctx context.Context, cl *transport.Call, id string) (any, *jsonrpc.Error) {
	if _, e := s.cfg.Core.Cancel(ctx, cl, id, true); e != nil && e.Code != a2a.CodeTaskNotCancelable {
		return nil, taskError(e)
	}
	return emptyAck, nil
}

// elicitResult is an input response: the client's answer to the
// elicitation a task waits on.
type elicitResult struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content"`
}

// updateTask serves tasks/update: the response to the question the task
// waits on resumes it as an A2A answer does (its content is the
// function's new input); a declined or cancelled question cancels the
// task. A response to any other key (none outstanding, answered, or
// never asked) is ignored, as the extension says.
func (s *Server) updateTask(ctx context.Context, cl *transport.Call, id string, responses map[string]json.RawMessage) (any, *jsonrpc.Error) {
	core := s.cfg.Core
	zero := 0
	t, e := core.Get(ctx, cl, a2a.TaskQuery{ID: id, HistoryLength: &zero}, false)
	if e != nil {
		return nil, taskError(e)
	}
	key := inputKey(t)
	raw, ok := responses[key]
	if !t.Status.State.Interrupted() || !ok {
		return emptyAck, nil
	}
	var r elicitResult
	if json.Unmarshal(raw, &r) != nil {
		return nil, s.noteErr(cl, invalidParams("inputResponses."+key, "must be an elicitation result"))
	}
	switch r.Action {
	case "accept":
	case "decline", "cancel":
		return s.cancelHandle(ctx, cl, id)
	default:
		return nil, s.noteErr(cl, invalidParams("inputResponses."+key+".action", "must be accept, decline or cancel"))
	}
	input := r.Content
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	if input[0] != '{' {
		return nil, s.noteErr(cl, invalidParams("inputResponses."+key+".content", "must be an object"))
	}
	no := false
	// The answer's messageId is the question's: the same response sent
	// again is the same message, not a second answer.
	msg := a2a.Message{MessageID: keyPrefix + key, TaskID: id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(input)}}
	if _, _, e := core.Send(ctx, cl, a2a.SendParams{Message: msg, Blocking: &no}); e != nil && e != transport.ErrMessageIDReused {
		return nil, taskError(e)
	}
	return emptyAck, nil
}

// writeAnswer writes a JSON-RPC response to request id: res, or e.
func writeAnswer(w http.ResponseWriter, id json.RawMessage, res any, e *jsonrpc.Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *jsonrpc.Error  `json:"error,omitempty"`
	}{"2.0", id, res, e}
	b, err := json.Marshal(out)
	if err != nil {
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	w.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
