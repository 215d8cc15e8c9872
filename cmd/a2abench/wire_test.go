package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestWriteRequest(t *testing.T) {
	for _, tc := range []struct {
		p              *protocol
		stream         bool
		method, header string
		role, blocking string // the message's role, configuration.blocking ("" without)
		partKind       string // the part's "kind" ("" without: 1.0 has none)
	}{
		{a2a03, false, "message/send", "", "user", "true", `"data"`},
		{a2a03, true, "message/stream", "", "user", "", `"data"`},
		{a2a10, false, "SendMessage", "1.0", "ROLE_USER", "", ""},
		{a2a10, true, "SendStreamingMessage", "1.0", "ROLE_USER", "", ""},
	} {
		var body bytes.Buffer
		body.WriteString("stale")
		tc.p.writeRequest(&body, 42, tc.stream)
		var req struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  struct {
				Message struct {
					MessageID string `json:"messageId"`
					Role      string `json:"role"`
					Parts     []map[string]json.RawMessage
				} `json:"message"`
				Configuration *struct {
					Blocking json.RawMessage `json:"blocking"`
				} `json:"configuration"`
			} `json:"params"`
		}
		if err := json.Unmarshal(body.Bytes(), &req); err != nil {
			t.Fatalf("%s: %v: %s", tc.method, err, body.Bytes())
		}
		m := req.Params.Message
		blocking := ""
		if c := req.Params.Configuration; c != nil {
			blocking = string(c.Blocking)
		}
		if req.JSONRPC != "2.0" || string(req.ID) != "42" || req.Method != tc.method || len(m.MessageID) != 36 ||
			m.Role != tc.role || blocking != tc.blocking || len(m.Parts) != 1 {
			t.Errorf("%s: request %s", tc.method, body.Bytes())
			continue
		}
		if string(m.Parts[0]["data"]) != echoData || string(m.Parts[0]["kind"]) != tc.partKind {
			t.Errorf("%s: part %s", tc.method, body.Bytes())
		}
		r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/a2a", nil)
		tc.p.setHeaders(r)
		if r.Header.Get("A2A-Version") != tc.header || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: headers %v", tc.method, r.Header)
		}
	}
	if protocolOf("sdk2") != a2a10 || protocolOf("sdk") != a2a03 || protocolOf("a2ad") != a2a03 {
		t.Fatal("protocolOf: only sdk2 is spoken to in 1.0")
	}
}

func TestCheckSent(t *testing.T) {
	for _, tc := range []struct {
		p       *protocol
		answer  string
		wantErr string
	}{
		{a2a03, `{"jsonrpc":"2.0","id":7,"result":{"kind":"task","id":"t","status":{"state":"completed"}}}`, ""},
		{a2a03, `{"jsonrpc":"2.0","id":7,"result":{"kind":"task","id":"t","status":{"state":"working"}}}`, `a "task" in state "working"`},
		{a2a03, `{"jsonrpc":"2.0","id":7,"result":{"kind":"message","messageId":"m"}}`, `a "message" in state ""`},
		{a2a03, `{"jsonrpc":"2.0","id":8,"result":{"kind":"task","status":{"state":"completed"}}}`, "response id 8, want 7"},
		{a2a03, `{"jsonrpc":"2.0","id":7}`, "response without a result"},
		{a2a03, `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params"}}`, "JSON-RPC error -32602: Invalid params"},
		// A 1.0 answer read as 0.3 has no kind.
		{a2a03, `{"jsonrpc":"2.0","id":7,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}}}`, `a "" in state ""`},
		{a2a10, `{"jsonrpc":"2.0","id":7,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}}}`, ""},
		{a2a10, `{"jsonrpc":"2.0","id":7,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}}`,
			`a "task" in state "input-required"`},
		{a2a10, `{"jsonrpc":"2.0","id":7,"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[]}}}`, `a "message" in state ""`},
		{a2a10, `{"jsonrpc":"2.0","id":7,"result":{"kind":"task","id":"t","status":{"state":"completed"}}}`,
			"result with 0 of task, statusUpdate, artifactUpdate and message, want 1"},
		{a2a10, `{"jsonrpc":"2.0","id":7,"result":{"task":{"status":{"state":"TASK_STATE_COMPLETED"}},"message":{}}}`, "with 2 of task"},
		{a2a10, `{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"Task not found"}}`, "JSON-RPC error -32001: Task not found"},
		{a2a10, `{"jsonrpc":"2.0","id":7,`, "decode response"},
	} {
		checkErr(t, tc.answer, tc.p.checkSent([]byte(tc.answer), 7), tc.wantErr)
	}
}

func TestReadStream10(t *testing.T) {
	const (
		task   = `{"jsonrpc":"2.0","id":7,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_SUBMITTED"}}}}`
		done   = `{"jsonrpc":"2.0","id":7,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}}}`
		work   = `{"jsonrpc":"2.0","id":7,"result":{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING"}}}}`
		art    = `{"jsonrpc":"2.0","id":7,"result":{"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a","parts":[]}}}}`
		final  = `{"jsonrpc":"2.0","id":7,"result":{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_COMPLETED"}}}}`
		failed = `{"jsonrpc":"2.0","id":7,"result":{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_FAILED"}}}}`
		input  = `{"jsonrpc":"2.0","id":7,"result":{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}}`
		old    = `{"jsonrpc":"2.0","id":7,"result":{"kind":"status-update","taskId":"t","status":{"state":"completed"},"final":true}}`
	)
	ev := func(data string) string { return "id: x\ndata: " + data + "\n\n" }
	checkReadStream(t, a2a10, []streamCase{
		{"sdk2: submitted, working, artifact, completed", ev(task) + ev(work) + ev(art) + ev(final), 4, ""},
		{"a2ad: the completed task, then the status", ev(done) + ev(final), 2, ""},
		{"a completed task alone does not end it", ev(done), 1, "without a final status-update"},
		{"working does not end it", ev(task) + ev(work), 2, "without a final status-update"},
		{"an event after the end", ev(final) + ev(work), 2, "after the final status-update"},
		{"failed", ev(task) + ev(failed), 2, `in state "failed"`},
		{"input-required ends it, not completed", ev(task) + ev(input), 2, `in state "input-required"`},
		{"a 0.3 event", ev(old), 1, "result with 0 of task"},
	})
}

func TestTmpfsStore(t *testing.T) {
	root := t.TempDir()
	defer func(r string) { tmpfsRoot = r }(tmpfsRoot)
	tmpfsRoot = root
	store, remove, err := tmpfsStore("a2ad-tmpfs")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(store)
	if filepath.Dir(dir) != root || filepath.Base(store) != "a2ad-tmpfs.db" {
		t.Fatalf("store %s, want a2ad-tmpfs.db in a directory of its own under %s", store, root)
	}
	// What the store makes: its file and its log beside it.
	if err := os.WriteFile(store, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(store+".wal", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s after remove: %v", dir, err)
	}

	// Writable: nothing skipped, nothing said, nothing left behind.
	var w bytes.Buffer
	servers := []string{"a2ad", "a2ad-tmpfs", "sdk2"}
	if got := skipUnavailable(servers, &w); strings.Join(got, ",") != "a2ad,a2ad-tmpfs,sdk2" || w.Len() != 0 {
		t.Fatalf("writable: %q, said %q", got, w.String())
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("the check left %d entries in %s", len(left), root)
	}
	// Not writable (missing): a2ad-tmpfs is skipped, in one line.
	tmpfsRoot = filepath.Join(root, "missing")
	got := skipUnavailable(servers, &w)
	if strings.Join(got, ",") != "a2ad,sdk2" || strings.Join(servers, ",") != "a2ad,a2ad-tmpfs,sdk2" {
		t.Fatalf("not writable: %q (servers now %q)", got, servers)
	}
	if line := w.String(); strings.Count(line, "\n") != 1 ||
		!strings.HasPrefix(line, "a2abench: skipping a2ad-tmpfs: "+tmpfsRoot+" is not writable: ") {
		t.Fatalf("said %q", line)
	}
	// Without a2ad-tmpfs, nothing is checked.
	w.Reset()
	if got := skipUnavailable([]string{"a2ad"}, &w); len(got) != 1 || w.Len() != 0 {
		t.Fatalf("without a2ad-tmpfs: %q, said %q", got, w.String())
	}
}

// streamCase is an SSE stream and what readStream must make of it: how
// many events it reads, and a part of its error ("" for none).
type streamCase struct {
	name    string
	in      string
	events  int
	wantErr string
}

// checkReadStream reads each case's stream as an answer to request 7 in
// protocol proto.
func checkReadStream(t *testing.T, proto *protocol, cases []streamCase) {
	t.Helper()
	for _, tc := range cases {
		p := newSSEReader(nil)
		p.reset(strings.NewReader(tc.in))
		n, err := readStream(p, proto, 7)
		if n != tc.events {
			t.Errorf("%s: %d events, want %d", tc.name, n, tc.events)
		}
		checkErr(t, tc.name, err, tc.wantErr)
	}
}

// checkErr checks err is nil when want is "", else that it contains want.
func checkErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", what, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: error %v, want one containing %q", what, err, want)
	}
}

// TestMCPRequests serves a2abench's tools/call, in each revision it
// speaks, with the MCP Go SDK's stateless server (as mcp-sdk's): the SDK
// accepts it (in 2026-07-28, its _meta triple and its Mcp-Method and
// Mcp-Name headers) and checkCalled reads the answer.
func TestMCPRequests(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "mcpserver", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "demo.echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	for name, p := range map[string]*protocol{"a2ad-mcp": mcpEcho, "mcp-sdk": mcpEcho, "a2ad-mcp26": mcpEcho26, "mcp-sdk26": mcpEcho26} {
		if protocolOf(name) != p || packages[name] == "" {
			t.Errorf("%s: protocol %+v, package %q", name, protocolOf(name), packages[name])
		}
	}
	for _, p := range []*protocol{mcpEcho, mcpEcho26} {
		var body bytes.Buffer
		p.writeRequest(&body, 42, false)
		req := httptest.NewRequest(http.MethodPost, "/mcp", &body)
		p.setHeaders(req)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if err := checkCalled(rec.Body.Bytes(), 42); rec.Code != http.StatusOK || err != nil {
			t.Errorf("%s: HTTP %d %v: %s", p.version, rec.Code, err, rec.Body.Bytes())
		}
	}
	failed := `{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.a2ad/task-state":"failed","io.modelcontextprotocol/serverInfo":{"name":"a2ad"}}}}`
	if err := checkCalled([]byte(failed), 1); err == nil || !strings.Contains(err.Error(), `"failed"`) {
		t.Errorf("a failed task's answer: %v", err)
	}
}
