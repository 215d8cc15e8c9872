package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/transport"
)

// The _meta keys a2ad reads in tools/call and writes in its result.
const (
	// IdempotencyKey names a call in tools/call's params._meta: a resend
	// with the same key (and the same arguments) from the same caller
	// answers the same task, as a resent A2A message does; without it
	// every call is new. A string of 1 to MaxIdempotencyKey bytes.
	IdempotencyKey = "io.a2ad/idempotency-key"
	// TaskIDKey is the a2ad task of the call, in the result's _meta: the
	// operator sees it in the operator view and `a2ad tasks`, and the
	// caller may read it over A2A.
	TaskIDKey = "io.a2ad/task-id"
	// TaskStateKey is the state the task was in when the call answered.
	TaskStateKey = "io.a2ad/task-state"
)

// MaxIdempotencyKey is the longest idempotency key, in bytes: with its
// prefix, the task's messageId stays within a2a.MaxIDBytes.
const MaxIdempotencyKey = a2a.MaxIDBytes - len(keyPrefix)

// keyPrefix starts the messageId of a call sent with an idempotency key,
// so that an MCP key never meets an A2A client's messageId.
const keyPrefix = "mcp:"

// maxEchoedName bounds the tool name an error echoes.
const maxEchoedName = 128

// unknownTool is the error of a call to a tool the caller may not see:
// the same, byte for byte, whether the tool is hidden from it or does not
// exist (no existence oracle).
func unknownTool(name string) *jsonrpc.Error {
	if len(name) > maxEchoedName {
		name = strings.ToValidUTF8(name[:maxEchoedName], "") + "…"
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Unknown tool " + strconv.Quote(name)}
}

// invalidParams is a -32602 naming where and what.
func invalidParams(where, what string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + where + ": " + what}
}

// errKeyReused answers a resend whose key names a call with other
// arguments.
var errKeyReused = invalidParams("_meta."+IdempotencyKey, "reused with different arguments")

// call serves tools/call: the tool's function, sent through the core as
// a blocking A2A message/send, becomes a durable task; its outcome is the
// result. A refusal (the tool unknown or hidden, bad arguments, a limit)
// is a JSON-RPC error; a function that fails is a result with isError.
//
// sdkCtx is the context the SDK handed the call, which its notifications
// go out under (to the request's own response stream).
func (rq *request) call(sdkCtx context.Context, req *sdk.CallToolRequest) (sdk.Result, error) {
	s, cl, p := rq.s, rq.cl, req.Params
	f, id, reason := s.find(cl.Caller(), p.Name)
	if f == nil {
		cl.NoteDenied(id, reason)
		return nil, unknownTool(p.Name)
	}
	args := json.RawMessage(bytes.TrimSpace(p.Arguments)) // the params' own copy
	switch {
	case len(args) == 0 || string(args) == "null":
		args = json.RawMessage("{}")
	case args[0] != '{':
		return nil, rq.fail(invalidParams("arguments", "must be an object"))
	}
	msgID, e := messageID(p.Meta)
	if e != nil {
		return nil, rq.fail(e)
	}
	data, err := json.Marshal(struct {
		Skill string          `json:"skill"`
		Input json.RawMessage `json:"input"`
	}{f.ID, args})
	if err != nil {
		return nil, rq.fail(invalidParams("arguments", "must be a JSON object"))
	}
	sp := a2a.SendParams{Message: a2a.Message{MessageID: msgID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(data)}}}
	if p.RequestState != "" {
		// A retry with the answer to its function's question (elicit.go).
		next, res, e := rq.resume(f, args, p)
		if e != nil {
			return nil, e
		} else if next == nil {
			return res, nil
		}
		sp, args = *next, next.Message.Parts[0].Data
	}
	var (
		task  *a2a.Task
		reply *a2a.Message
		ae    *a2a.Error
	)
	ctx, finish := rq.cancelable()
	token, ss := progressToken(req)
	after := s.handleAfter(p.Meta)
	if (token != nil || after > 0) && s.cfg.Core.StreamsRefused() == nil {
		task, reply, ae = rq.sendWatched(ctx, sdkCtx, ss, token, after, sp)
	} else {
		task, reply, ae = s.cfg.Core.Send(ctx, cl, sp)
	}
	if finish(task) {
		return nil, rq.cancelTask(task.ID)
	}
	switch {
	case ae == transport.ErrMessageIDReused:
		return nil, errKeyReused
	case ae != nil:
		return nil, wireError(ae)
	case reply != nil:
		return result(reply.TaskID, a2a.StateCompleted, reply.Parts), nil
	case after > 0 && !task.Status.State.Terminal():
		return s.handle(task), nil
	case task.Status.State == a2a.StateInputRequired && declaresElicitation(p.Meta):
		return askInput(f, task, args), nil
	}
	return taskResult(task), nil
}

// handleAfter is how long a call whose params' _meta is meta may run
// before it answers with a task handle: 0 (never) unless the client
// declares the tasks extension on it and handles are on.
func (s *Server) handleAfter(meta sdk.Meta) time.Duration {
	if s.cfg.TaskAfter <= 0 || !declaresTasks(meta) {
		return 0
	}
	return s.cfg.TaskAfter
}

// fail notes e, a refusal of the call's params, in the audit record.
func (rq *request) fail(e *jsonrpc.Error) *jsonrpc.Error {
	rq.cl.NoteError(&a2a.Error{Code: int(e.Code), Message: e.Message}, nil)
	return e
}

// messageID is the messageId of a call whose params._meta is meta: the
// prefixed idempotency key, or a new id when there is none.
func messageID(meta sdk.Meta) (string, *jsonrpc.Error) {
	v, ok := meta[IdempotencyKey]
	if !ok {
		var b [16]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:]), nil
	}
	key, ok := v.(string)
	if !ok || key == "" || len(key) > MaxIdempotencyKey {
		return "", invalidParams("_meta."+IdempotencyKey, "must be a string of 1 to "+strconv.Itoa(MaxIdempotencyKey)+" bytes")
	}
	return keyPrefix + key, nil
}

// wireError is the JSON-RPC error of e, an A2A error of the core.
func wireError(e *a2a.Error) *jsonrpc.Error {
	out := &jsonrpc.Error{Code: int64(e.Code), Message: e.Message}
	if e.Data != nil {
		out.Data, _ = json.Marshal(e.Data)
	}
	return out
}

// taskResult is the result of a call answered with its task: the
// function's output for a completed one; isError with the function's
// error, or with what the task waits for, otherwise.
func taskResult(t *a2a.Task) *sdk.CallToolResult {
	st := t.Status
	if st.State == a2a.StateCompleted {
		var parts []a2a.Part
		for _, art := range t.Artifacts {
			parts = append(parts, art.Parts...)
		}
		if st.Message != nil {
			parts = append(parts, st.Message.Parts...)
		}
		return result(t.ID, st.State, parts)
	}
	text := statusText(st.Message)
	switch {
	case st.State == a2a.StateInputRequired || st.State == a2a.StateAuthRequired:
		text = "The function needs more input before it can go on: " + text + " Call the tool again with it in the arguments."
	case !st.State.Terminal():
		text = "The call is still running, as task " + t.ID + ": it did not end within the server's blocking timeout."
	case text == "":
		text = "The call ended " + string(st.State) + "."
	}
	res := result(t.ID, st.State, []a2a.Part{a2a.TextPart(text)})
	res.IsError = true
	return res
}

// statusText is the text of a status message: its text parts, joined.
func statusText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var texts []string
	for _, p := range m.Parts {
		if p.Kind == a2a.PartText && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// result is a CallToolResult of task taskID in state with parts as its
// content: a data part as its JSON text (and, the only data part, as the
// structured content), a file as an image, audio, a resource link or an
// embedded resource.
func result(taskID string, state a2a.TaskState, parts []a2a.Part) *sdk.CallToolResult {
	res := &sdk.CallToolResult{
		Content: []sdk.Content{},
		Meta:    sdk.Meta{TaskIDKey: taskID, TaskStateKey: string(state)},
	}
	data := 0
	for i, p := range parts {
		switch p.Kind {
		case a2a.PartText:
			res.Content = append(res.Content, &sdk.TextContent{Text: p.Text})
		case a2a.PartData:
			data++
			res.Content = append(res.Content, &sdk.TextContent{Text: string(p.Data)})
			res.StructuredContent = p.Data
		case a2a.PartFile:
			if c := fileContent(taskID, i, p.File); c != nil {
				res.Content = append(res.Content, c)
			}
		}
	}
	if data != 1 {
		res.StructuredContent = nil
	}
	return res
}

// fileContent is a file part as MCP content: by URI, a resource link;
// inline, an image or audio for those media types, else an embedded
// resource named in the task. Nil for a file part with neither.
func fileContent(taskID string, i int, f *a2a.FileContent) sdk.Content {
	if f == nil {
		return nil
	}
	if f.URI != "" {
		name := f.Name
		if name == "" {
			name = f.URI
		}
		return &sdk.ResourceLink{URI: f.URI, Name: name, MIMEType: f.MimeType}
	}
	b, err := base64.StdEncoding.DecodeString(f.Bytes)
	if err != nil {
		return nil
	}
	switch {
	case strings.HasPrefix(f.MimeType, "image/"):
		return &sdk.ImageContent{Data: b, MIMEType: f.MimeType}
	case strings.HasPrefix(f.MimeType, "audio/"):
		return &sdk.AudioContent{Data: b, MIMEType: f.MimeType}
	}
	uri := "a2ad:task/" + taskID + "/part/" + strconv.Itoa(i)
	return &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: uri, MIMEType: f.MimeType, Blob: b}}
}
