package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// The tasks extension of MCP (io.modelcontextprotocol/tasks) on the real
// binary. The official Go SDK client (v1.8.0) has no tasks support (no
// type for a handle, no way to send tasks/*), so these tests speak raw
// JSON-RPC over HTTP, as a client of the extension does; the extension's
// TypeScript client runs in interop/mcp/tasks.mjs.

// handleCatalog has a slow MCP tool that may run again after a crash,
// and one that asks a question.
const handleCatalog = `functions:
  - id: demo::sleep
    description: Sleeps.
    metadata: {"mcp.expose": true, "mcp.tier": partner}
    retry_safe: true
    timeout: 60s
    builtin: sleep
  - id: demo::ask
    description: Asks, then answers.
    metadata: {"mcp.expose": true, "mcp.tier": partner}
    input_schema: {type: object, properties: {answer: {type: string}, question: {type: string}}}
    timeout: 60s
    builtin: ask
`

// tasksMeta is the _meta of a request whose client declares the
// extension, in its per-request capabilities.
var tasksMeta = map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
	"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}

// mcpRequest is a JSON-RPC request with id to base's /mcp, with key (""
// for none), as a client of revision 2025-11-25 sends it.
func mcpRequest(tb testing.TB, base, key string, id int, method string, params map[string]any) *http.Request {
	tb.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		tb.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id) // as the extension asks of clients
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req
}

// mcpRaw posts one JSON-RPC request to base's /mcp with key ("" for
// none) and returns its raw answer and its result or error.
func mcpRaw(tb testing.TB, base, key, method string, params map[string]any) (raw []byte, result map[string]any, rpcErr map[string]any) {
	tb.Helper()
	res, err := http.DefaultClient.Do(mcpRequest(tb, base, key, 1, method, params))
	if err != nil {
		tb.Fatalf("%s: %v", method, err)
	}
	defer res.Body.Close()
	raw, err = io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		tb.Fatalf("%s: HTTP %d %v: %s", method, res.StatusCode, err, raw)
	}
	var env struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		tb.Fatalf("%s: %v: %s", method, err, raw)
	}
	return raw, env.Result, env.Error
}

// callForHandle calls tool with args, declaring the extension, and
// returns the handle it answers with.
func callForHandle(tb testing.TB, base, key, tool string, args map[string]any) map[string]any {
	tb.Helper()
	raw, res, e := mcpRaw(tb, base, key, "tools/call", map[string]any{"name": tool, "arguments": args, "_meta": tasksMeta})
	if e != nil || res["resultType"] != "task" || res["taskId"] == "" || res["pollIntervalMs"] != float64(1000) {
		tb.Fatalf("tools/call %s: want a task handle, got %s", tool, raw)
	}
	return res
}

// pollTask polls tasks/get on base until the task's status is want, and
// returns that answer.
func pollTask(tb testing.TB, base, key, id, want string) map[string]any {
	tb.Helper()
	var raw []byte
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		var res map[string]any
		raw, res, _ = mcpRaw(tb, base, key, "tasks/get", map[string]any{"taskId": id, "_meta": tasksMeta})
		if res["status"] == want {
			if res["resultType"] != "complete" || res["taskId"] != id {
				tb.Fatalf("tasks/get: %s", raw)
			}
			return res
		}
	}
	tb.Fatalf("task %s never became %s; last answer %s", id, want, raw)
	return nil
}

// TestMCPTaskHandles: with the extension declared, a long call answers
// with a handle naming its a2ad task; SIGKILLed and restarted on the same
// bbolt file, a2ad runs the retry-safe call again and the handle is
// polled to its result. A call that asks a question is a handle in
// input_required, answered with tasks/update; tasks/cancel cancels;
// another caller's task is unknown, byte for byte as a missing one; the
// same call without the declaration answers as before.
func TestMCPTaskHandles(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	acme, bob := mustAppendKey(t, keys, "acme", "partner"), mustAppendKey(t, keys, "bob", "partner")
	catalog, store := filepath.Join(dir, "catalog.yaml"), filepath.Join(dir, "a2ad.db")
	putFile(t, catalog, handleCatalog)
	args := []string{"--keys", keys, "--mcp-task-after", "300ms"}
	p := startBinary(t, catalog, store, args...)

	h := callForHandle(t, p.base, acme, "demo.sleep", map[string]any{"seconds": 2})
	id := h["taskId"].(string)
	if h["status"] != "working" || h["_meta"].(map[string]any)["io.a2ad/task-id"] != id {
		t.Fatalf("the handle: %v", h)
	}
	p.kill(t)
	p = startBinary(t, catalog, store, args...)
	done := pollTask(t, p.base, acme, id, "completed")
	res := done["result"].(map[string]any)
	if sc, _ := res["structuredContent"].(map[string]any); sc["slept"] != float64(2) || res["isError"] == true {
		t.Fatalf("the result after a restart: %v", done)
	}

	_, missing, _ := mcpRaw(t, p.base, bob, "tasks/get", map[string]any{"taskId": "no-such-task", "_meta": tasksMeta})
	rawMissing, _, eMissing := mcpRaw(t, p.base, bob, "tasks/get", map[string]any{"taskId": "no-such-task", "_meta": tasksMeta})
	rawOther, _, _ := mcpRaw(t, p.base, bob, "tasks/get", map[string]any{"taskId": id, "_meta": tasksMeta})
	if missing != nil || eMissing["code"] != float64(-32602) || eMissing["message"] != "Failed to retrieve task: Task not found" ||
		!bytes.Equal(rawMissing, rawOther) {
		t.Fatalf("another caller's task: %s\na missing one: %s", rawOther, rawMissing)
	}
	for _, m := range []string{"tasks/cancel", "tasks/update"} {
		if raw, _, _ := mcpRaw(t, p.base, bob, m, map[string]any{"taskId": id, "_meta": tasksMeta}); !bytes.Equal(raw, rawMissing) {
			t.Errorf("%s of another caller's task: %s", m, raw)
		}
	}

	ask := callForHandle(t, p.base, acme, "demo.ask", map[string]any{"question": "Approve?"})
	if ask["status"] != "input_required" {
		t.Fatalf("a call that asks: %v", ask)
	}
	asks := pollTask(t, p.base, acme, ask["taskId"].(string), "input_required")
	var key string
	for k, req := range asks["inputRequests"].(map[string]any) {
		params := req.(map[string]any)["params"].(map[string]any)
		if req.(map[string]any)["method"] != "elicitation/create" || params["message"] != "Approve?" {
			t.Fatalf("the input request: %v", req)
		}
		key = k
	}
	if _, res, e := mcpRaw(t, p.base, acme, "tasks/update", map[string]any{"taskId": ask["taskId"], "_meta": tasksMeta,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"answer": "yes"}}}}); e != nil || res["resultType"] != "complete" {
		t.Fatalf("tasks/update: %v %v", res, e)
	}
	answered := pollTask(t, p.base, acme, ask["taskId"].(string), "completed")
	if sc, _ := answered["result"].(map[string]any)["structuredContent"].(map[string]any); sc["answer"] != "yes" {
		t.Fatalf("the answered task: %v", answered)
	}

	long := callForHandle(t, p.base, acme, "demo.sleep", map[string]any{"seconds": 30})
	if _, res, e := mcpRaw(t, p.base, acme, "tasks/cancel", map[string]any{"taskId": long["taskId"], "_meta": tasksMeta}); e != nil || res["resultType"] != "complete" {
		t.Fatalf("tasks/cancel: %v %v", res, e)
	}
	pollTask(t, p.base, acme, long["taskId"].(string), "cancelled")

	raw, res, _ := mcpRaw(t, p.base, acme, "tools/call", map[string]any{"name": "demo.sleep", "arguments": map[string]any{"seconds": 1}})
	if res["resultType"] == "task" || res["isError"] == true || !strings.Contains(string(raw), `"slept":1`) {
		t.Fatalf("without the declaration: %s", raw)
	}
	raw, _, e := mcpRaw(t, p.base, acme, "tasks/get", map[string]any{"taskId": id})
	if e["code"] != float64(-32021) || e["message"] != "Missing required client capability" {
		t.Fatalf("tasks/get without the declaration: %s", raw)
	}
}

// TestMCPTaskHandleReplicas: on a shared PostgreSQL store, a call made on
// one replica answers with a handle that another replica polls to the
// end, and cancels.
func TestMCPTaskHandleReplicas(t *testing.T) {
	dsn := pgtest.Schema(t)
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, handleCatalog)
	a := startBinary(t, catalog, dsn, "--mcp-task-after", "300ms")
	b := startBinary(t, catalog, dsn, "--mcp-task-after", "300ms")

	h := callForHandle(t, a.base, "", "demo.sleep", map[string]any{"seconds": 2})
	if got := pollTask(t, b.base, "", h["taskId"].(string), "working"); got["createdAt"] != h["createdAt"] {
		t.Fatalf("replica b's view: %v, handle %v", got, h)
	}
	done := pollTask(t, b.base, "", h["taskId"].(string), "completed")
	if sc, _ := done["result"].(map[string]any)["structuredContent"].(map[string]any); sc["slept"] != float64(2) {
		t.Fatalf("the result on replica b: %v", done)
	}
	long := callForHandle(t, b.base, "", "demo.sleep", map[string]any{"seconds": 30})
	if _, _, e := mcpRaw(t, a.base, "", "tasks/cancel", map[string]any{"taskId": long["taskId"], "_meta": tasksMeta}); e != nil {
		t.Fatalf("tasks/cancel on replica a: %v", e)
	}
	pollTask(t, b.base, "", long["taskId"].(string), "cancelled")

	// Replica b tells of a task replica a runs, to its end.
	h = callForHandle(t, a.base, "", "demo.sleep", map[string]any{"seconds": 2})
	msgs, raw := listenTasks(t, b.base, h["taskId"].(string))
	last, _ := msgs[len(msgs)-2]["params"].(map[string]any)
	if last["status"] != "completed" || last["taskId"] != h["taskId"] {
		t.Fatalf("replica b's notifications of replica a's task: %s", raw)
	}
}

// TestMCPTaskNotifications: subscriptions/listen naming a handle's task
// (and one the caller does not have) is acknowledged for the task alone,
// tells each change as notifications/tasks (the last one completed, with
// the result), then ends with the listen's result.
func TestMCPTaskNotifications(t *testing.T) {
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, handleCatalog)
	p := startBinary(t, catalog, filepath.Join(t.TempDir(), "a2ad.db"), "--mcp-task-after", "300ms")
	id := callForHandle(t, p.base, "", "demo.sleep", map[string]any{"seconds": 2})["taskId"].(string)

	msgs, raw := listenTasks(t, p.base, "no-such-task", id)
	ack, done, end := msgs[0], msgs[len(msgs)-2], msgs[len(msgs)-1]
	if ack["method"] != "notifications/subscriptions/acknowledged" ||
		!strings.Contains(mustJSON(t, ack["params"]), `"notifications":{"taskIds":["`+id+`"]}`) {
		t.Fatalf("the acknowledgement: %v; the stream:\n%s", ack, raw)
	}
	params, _ := done["params"].(map[string]any)
	result, _ := params["result"].(map[string]any)
	sc, _ := result["structuredContent"].(map[string]any)
	if done["method"] != "notifications/tasks" || params["taskId"] != id || params["status"] != "completed" || sc["slept"] != float64(2) {
		t.Fatalf("the last notification: %v; the stream:\n%s", done, raw)
	}
	for _, m := range msgs[1 : len(msgs)-2] {
		if m["method"] != "notifications/tasks" || m["params"].(map[string]any)["status"] != "working" {
			t.Fatalf("a notification before the end: %v", m)
		}
	}
	if end["id"] != float64(9) || !strings.Contains(mustJSON(t, end["result"]), `"resultType":"complete"`) {
		t.Fatalf("the listen's result: %v", end)
	}
	refused, _, e := mcpRaw(t, p.base, "", "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{id}}})
	if e["code"] != float64(-32021) {
		t.Fatalf("a listen for tasks without the declaration: %s", refused)
	}
}

// listenTasks opens subscriptions/listen on base for ids, declaring the
// extension, reads the stream to its end and returns its messages (at
// least three: an acknowledgement, a notification, a result) and the
// stream as it came.
func listenTasks(tb testing.TB, base string, ids ...string) (msgs []map[string]any, raw []byte) {
	tb.Helper()
	req := mcpRequest(tb, base, "", 9, "subscriptions/listen",
		map[string]any{"notifications": map[string]any{"taskIds": ids}, "_meta": tasksMeta})
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	raw, err = io.ReadAll(res.Body) // the stream ends once the task ended
	if err != nil || res.Header.Get("Content-Type") != "text/event-stream" {
		tb.Fatalf("subscriptions/listen: %v, %s: %s", err, res.Header.Get("Content-Type"), raw)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				tb.Fatalf("an event that is not JSON: %q", data)
			}
			msgs = append(msgs, m)
		}
	}
	if len(msgs) < 3 {
		tb.Fatalf("want an acknowledgement, notifications and a result; got %s", raw)
	}
	return msgs, raw
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
