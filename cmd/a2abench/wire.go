package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// protocol is the A2A version the load speaks to a server: 0.3 to a2ad,
// js, sdk and floor (all of them serve it), 1.0 to sdk2 (a2a-go v2 serves
// only 1.0). a2ad answers both; 0.3 keeps its runs comparable with
// earlier ones.
type protocol struct {
	// path is the endpoint's path under the base URL: /a2a, or /mcp.
	path string
	// mcp: the load is MCP's tools/call of demo.echo, not an A2A send.
	mcp          bool
	version      string // the A2A-Version header ("" sends none: 0.3)
	send, stream string // the JSON-RPC methods
	// message is the request's message before and after its messageId.
	message [2]string
	// sendParams follow the message in a blocking send's params.
	sendParams string
}

// echoData is the data part every request sends: a call of demo::echo.
const echoData = `{"skill":"demo::echo","input":{"message":"hello"}}`

var (
	a2a03 = &protocol{
		path: "/a2a",
		send: "message/send", stream: "message/stream",
		message:    [2]string{`{"kind":"message","messageId":"`, `","role":"user","parts":[{"kind":"data","data":` + echoData + `}]}`},
		sendParams: `,"configuration":{"blocking":true}`,
	}
	// In 1.0 a send blocks unless it asks for returnImmediately.
	a2a10 = &protocol{
		path: "/a2a", version: "1.0", send: "SendMessage", stream: "SendStreamingMessage",
		message: [2]string{`{"messageId":"`, `","role":"ROLE_USER","parts":[{"data":` + echoData + `}]}`},
	}
)

// onceData calls bench::once, which workingCatalog adds: an echo that is
// not retry-safe, so that every call goes through working before it runs.
const onceData = `{"skill":"bench::once","input":{"message":"hello"}}`

// a2a03Once is a2a03 calling bench::once.
var a2a03Once = &protocol{
	path: "/a2a", send: a2a03.send, stream: a2a03.stream, sendParams: a2a03.sendParams,
	message: [2]string{a2a03.message[0], strings.Replace(a2a03.message[1], echoData, onceData, 1)},
}

// protocolOf is the protocol the load speaks to the server name.
func protocolOf(name string) *protocol {
	switch name {
	case "sdk2":
		return a2a10
	case "a2ad-pg-working":
		return a2a03Once
	case "a2ad-mcp", "mcp-sdk":
		return mcpEcho
	case "a2ad-mcp26", "mcp-sdk26":
		return mcpEcho26
	}
	return a2a03
}

// mcpEcho is MCP's tools/call of demo.echo (the tool a2ad's example
// catalogue opts demo::echo into MCP as), at revision 2025-11-25.
var mcpEcho = &protocol{path: "/mcp", mcp: true, version: "2025-11-25"}

// mcpEcho26 is mcpEcho at revision 2026-07-28: the Go SDK client's
// default, whose requests carry their revision, the client's info and
// capabilities in their _meta, and Mcp-Method and Mcp-Name headers.
var mcpEcho26 = &protocol{path: "/mcp", mcp: true, version: "2026-07-28"}

// mcpCall is a tools/call's body around its id; mcpCall26 the same in
// 2026-07-28.
var (
	mcpCall   = [2]string{`{"jsonrpc":"2.0","id":`, `,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"hello"}}}`}
	mcpCall26 = [2]string{mcpCall[0], `,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"hello"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"a2abench","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`}
)

// mcpAnswer is what a2abench checks of a tools/call's answer: a result
// that is not a tool error and, from a2ad, names its completed task.
type mcpAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
		// Meta holds a2ad's task keys (strings) and, from 2026-07-28,
		// the server's info (an object).
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// checkCalled checks the answer b to tools/call id.
func checkCalled(b []byte, id int64) error {
	var r mcpAnswer
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("decode response: %v: %.200s", err, b)
	}
	switch {
	case r.Error != nil:
		return fmt.Errorf("JSON-RPC error %d: %s", r.Error.Code, r.Error.Message)
	case r.Result == nil:
		return fmt.Errorf("response without a result: %.200s", b)
	case string(r.ID) != strconv.FormatInt(id, 10):
		return fmt.Errorf("response id %s, want %d", r.ID, id)
	case r.Result.IsError:
		return fmt.Errorf("a tool error: %.200s", b)
	}
	if st, ok := r.Result.Meta["io.a2ad/task-state"]; ok && string(st) != `"completed"` {
		return fmt.Errorf("the call's task is %s, want completed", st)
	}
	return nil
}

// writeRequest writes JSON-RPC request id into body: a blocking send or,
// with stream, a streaming send, with a fresh messageId.
func (p *protocol) writeRequest(body *bytes.Buffer, id int64, stream bool) {
	body.Reset()
	if p.mcp {
		call := mcpCall
		if p == mcpEcho26 {
			call = mcpCall26
		}
		body.WriteString(call[0])
		body.WriteString(strconv.FormatInt(id, 10))
		body.WriteString(call[1])
		return
	}
	method, params := p.send, p.sendParams
	if stream {
		method, params = p.stream, ""
	}
	body.WriteString(`{"jsonrpc":"2.0","id":`)
	body.WriteString(strconv.FormatInt(id, 10))
	body.WriteString(`,"method":"`)
	body.WriteString(method)
	body.WriteString(`","params":{"message":`)
	body.WriteString(p.message[0])
	body.WriteString(newUUID())
	body.WriteString(p.message[1])
	body.WriteString(params)
	body.WriteString(`}}`)
}

// setHeaders sets the headers of a request in the protocol.
func (p *protocol) setHeaders(req *http.Request) {
	req.Header.Set("Content-Type", "application/json")
	switch {
	case p.mcp:
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", p.version)
		if p == mcpEcho26 {
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "demo.echo")
		}
	case p.version != "":
		req.Header.Set("A2A-Version", p.version)
	}
}

// event is a result as the checks read it, in 0.3's words whichever the
// protocol: its kind ("task", "status-update", "artifact-update",
// "message"), its task state ("completed", "input-required", ...) and
// whether it ends a stream.
type event struct {
	kind, state string
	final       bool
}

// status is the part of a task or status-update the checks read.
type status struct {
	Status struct {
		State string `json:"state"`
	} `json:"status"`
}

// answer is the part of a JSON-RPC response that a2abench checks: the
// answer to a send, or one event of a stream. A 0.3 result names its kind
// (only a status-update has final); a 1.0 result wraps the object in a
// member named for its kind, and the stream ends after a status-update
// in a terminal or interrupted state.
type answer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Kind  string `json:"kind"`
		Final bool   `json:"final"`
		status
		Task           *status          `json:"task"`
		StatusUpdate   *status          `json:"statusUpdate"`
		ArtifactUpdate *json.RawMessage `json:"artifactUpdate"`
		Message        *json.RawMessage `json:"message"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// decode reads data, a response or stream event (what, for errors), as
// a JSON-RPC result for request id.
func (p *protocol) decode(data []byte, id int64, what string) (event, error) {
	var r answer
	if err := json.Unmarshal(data, &r); err != nil {
		return event{}, fmt.Errorf("decode %s: %v: %.200s", what, err, data)
	}
	switch {
	case r.Error != nil:
		return event{}, fmt.Errorf("JSON-RPC error %d: %s", r.Error.Code, r.Error.Message)
	case r.Result == nil:
		return event{}, fmt.Errorf("%s without a result: %.200s", what, data)
	case string(r.ID) != strconv.FormatInt(id, 10):
		return event{}, fmt.Errorf("%s id %s, want %d", what, r.ID, id)
	}
	res := r.Result
	if p.version == "" {
		return event{kind: res.Kind, state: res.Status.State, final: res.Kind == "status-update" && res.Final}, nil
	}
	var ev event
	n := 0
	if res.Task != nil {
		ev, n = event{kind: "task", state: state10(res.Task.Status.State)}, n+1
	}
	if res.StatusUpdate != nil {
		ev, n = event{kind: "status-update", state: state10(res.StatusUpdate.Status.State)}, n+1
		ev.final = endsStream[ev.state]
	}
	if res.ArtifactUpdate != nil {
		ev, n = event{kind: "artifact-update"}, n+1
	}
	if res.Message != nil {
		ev, n = event{kind: "message"}, n+1
	}
	if n != 1 {
		return event{}, fmt.Errorf("%s result with %d of task, statusUpdate, artifactUpdate and message, want 1: %.200s", what, n, data)
	}
	return ev, nil
}

// state10 spells a 1.0 task state as 0.3 does: TASK_STATE_INPUT_REQUIRED
// is input-required. Anything else is returned as it is.
func state10(s string) string {
	rest, ok := strings.CutPrefix(s, "TASK_STATE_")
	if !ok {
		return s
	}
	return strings.ReplaceAll(strings.ToLower(rest), "_", "-")
}

// endsStream are the states whose 1.0 status-update ends a stream.
var endsStream = map[string]bool{
	"completed": true, "failed": true, "canceled": true, "rejected": true,
	"input-required": true, "auth-required": true,
}
