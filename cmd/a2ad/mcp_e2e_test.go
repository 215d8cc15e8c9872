package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/internal/oidctest"
)

// mcpCatalog has an MCP tool for partners, one for internal callers with
// an output schema, an A2A-only skill, and a function MCP never sees.
const mcpCatalog = `functions:
  - id: demo::echo
    description: Returns its input.
    metadata: {"a2a.expose": true, "a2a.tier": partner, "mcp.expose": true, "mcp.tier": partner, "mcp.read_only": true}
    retry_safe: true
    builtin: echo
  - id: ops::count
    description: Counts, structured.
    metadata: {"mcp.expose": true, "mcp.tier": [internal]}
    input_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
    output_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
    builtin: echo
  - id: demo::skill
    metadata: {"a2a.expose": true, "a2a.tier": [partner, internal]}
    builtin: echo
  - id: engine::status
    metadata: {"mcp.expose": true}
    builtin: echo
`

// bearerTransport sends each request with an API key as a bearer token
// (keyTransport sends it in X-API-Key).
type bearerTransport struct{ key string }

func (k bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the official Go SDK client to the binary's /mcp
// with key.
func mcpSession(tb testing.TB, base, key string) *sdk.ClientSession {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "a2ad-interop", Version: "1"}, nil)
	s, err := c.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{key}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	if ir := s.InitializeResult(); ir != nil {
		tb.Logf("MCP revision %s", ir.ProtocolVersion)
	}
	return s
}

// TestMCPInterop runs the official Go SDK client against the real binary:
// two keys of two tiers see two tool lists; a call answers structured
// output and its task id; a resend with the same idempotency key answers
// the same task; another caller's task is unknown to it (over A2A, where
// the owner reads it); a hidden tool is an unknown one.
func TestMCPInterop(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	partner := mustAppendKey(t, keys, "acme", "partner")
	internal := mustAppendKey(t, keys, "ops", "internal")
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, mcpCatalog)
	audit := filepath.Join(dir, "audit.log")
	p := startBinary(t, catalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--audit-log", audit)
	ctx := context.Background()

	ps, is := mcpSession(t, p.base, partner), mcpSession(t, p.base, internal)
	for _, tc := range []struct {
		s    *sdk.ClientSession
		who  string
		want []string
	}{{ps, "partner", []string{"demo.echo"}}, {is, "internal", []string{"ops.count"}}} {
		res, err := tc.s.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list as %s: %v", tc.who, err)
		}
		var got []string
		for _, tl := range res.Tools {
			got = append(got, tl.Name)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("tools/list as %s (-want +got):\n%s", tc.who, diff)
		}
	}

	call := func(s *sdk.ClientSession, name string, args any, key string) (*sdk.CallToolResult, error) {
		params := &sdk.CallToolParams{Name: name, Arguments: args}
		if key != "" {
			params.Meta = sdk.Meta{"io.a2ad/idempotency-key": key}
		}
		return s.CallTool(ctx, params)
	}
	res, err := call(is, "ops.count", map[string]any{"n": 3}, "order-1")
	if err != nil {
		t.Fatalf("tools/call ops.count: %v", err)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	taskID, _ := res.Meta["io.a2ad/task-id"].(string)
	if res.IsError || string(structured) != `{"n":3}` || taskID == "" || res.Meta["io.a2ad/task-state"] != "completed" {
		t.Fatalf("tools/call ops.count = isError %v, structured %s, _meta %v", res.IsError, structured, res.Meta)
	}
	if text, ok := res.Content[0].(*sdk.TextContent); !ok || text.Text != `{"n":3}` {
		t.Errorf("content = %#v, want the output as text", res.Content)
	}
	again, err := call(is, "ops.count", map[string]any{"n": 3}, "order-1")
	if err != nil || again.Meta["io.a2ad/task-id"] != taskID {
		t.Errorf("resend with the same key: %v, task %v; want task %s", err, again.Meta, taskID)
	}
	other, err := call(is, "ops.count", map[string]any{"n": 3}, "")
	if err != nil || other.Meta["io.a2ad/task-id"] == taskID {
		t.Errorf("call without a key: %v, task %v; want a new task", err, other.Meta)
	}
	if _, err := call(is, "ops.count", map[string]any{"n": 4}, "order-1"); err == nil || !strings.Contains(err.Error(), "reused with different arguments") {
		t.Errorf("the key with other arguments: %v", err)
	}
	if _, err := call(is, "ops.count", map[string]any{"n": "three"}, ""); err == nil || !strings.Contains(err.Error(), "does not match the schema of skill ops::count") {
		t.Errorf("arguments against the schema: %v", err)
	}

	// The task is the owner's over A2A too, and unknown to another caller.
	k := &keyed{base: p.base}
	if got := state(resultTask(t, k.ok(t, internal, "tasks/get", map[string]any{"id": taskID}))); got != "completed" {
		t.Errorf("the owner's tasks/get over A2A: %s", got)
	}
	status, _, body := k.call(t, partner, "tasks/get", map[string]any{"id": taskID})
	if status != http.StatusOK || !strings.Contains(string(body), `"code":-32001`) {
		t.Errorf("another caller's tasks/get: HTTP %d %s; want -32001", status, body)
	}

	for _, name := range []string{"ops.count", "demo.skill", "engine.status", "no.such"} {
		_, err := call(ps, name, map[string]any{}, "")
		if err == nil || !strings.Contains(err.Error(), `Unknown tool "`+name+`"`) {
			t.Errorf("partner calls %s: %v; want Unknown tool", name, err)
		}
	}
	echo, err := call(ps, "demo.echo", map[string]any{"message": "hi"}, "")
	if err != nil || echo.IsError {
		t.Fatalf("partner calls demo.echo: %v %v", err, echo)
	}

	var mcpCalls, denied int
	for _, r := range auditFile(t, audit) {
		if r["transport"] == "mcp" && r["rpc_method"] == "tools/call" {
			mcpCalls++
			if r["outcome"] == "policy_denied" {
				denied++
			}
		}
	}
	if mcpCalls != 10 || denied != 4 {
		t.Errorf("audit: %d MCP tools/call records, %d policy_denied; want 10, 4", mcpCalls, denied)
	}
	_, metrics := httpGet(t, p.admin+"/metrics")
	for _, want := range []string{
		`a2ad_requests_total{method="tools/call",outcome="ok",reason="completed",transport="mcp"} 4`,
		`a2ad_requests_total{method="tools/call",outcome="policy_denied",reason="denied_tier",transport="mcp"} 1`,
		`a2ad_requests_total{method="tools/list",outcome="ok",reason="ok",transport="mcp"} 2`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	t.Run("resources", func(t *testing.T) {
		mcpResources(t, is, ps, taskID, other.Meta["io.a2ad/task-id"].(string), echo.Meta["io.a2ad/task-id"].(string))
	})
}

// mcpResources: each caller's tasks are its resources, newest first; the
// owner reads its task as A2A 1.0 JSON; to another caller it is the same
// error as a task that does not exist.
func mcpResources(t *testing.T, owner, stranger *sdk.ClientSession, taskID, newer, strangers string) {
	ctx := context.Background()
	uris := func(s *sdk.ClientSession) map[string]int {
		res, err := s.ListResources(ctx, nil)
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		at := map[string]int{}
		for i, r := range res.Resources {
			at[r.URI] = i
			if r.URI == "a2ad://tasks/"+taskID && (r.Description != "Call of ops::count, state completed" || r.MIMEType != "application/json" || r.Name != taskID) {
				t.Errorf("resource %+v", r)
			}
		}
		return at
	}
	mine := uris(owner)
	i, ok := mine["a2ad://tasks/"+taskID]
	if j, newerOK := mine["a2ad://tasks/"+newer]; !ok || !newerOK || j > i {
		t.Errorf("owner's resources %v: want %s, after the newer %s", mine, taskID, newer)
	}
	theirs := uris(stranger)
	if _, ok := theirs["a2ad://tasks/"+taskID]; ok || len(theirs) != 1 {
		t.Errorf("another caller's resources %v: want only its own task %s", theirs, strangers)
	}
	uri := "a2ad://tasks/" + taskID
	res, err := owner.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("the owner's resources/read: %v %v", err, res)
	}
	var task struct {
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &task); err != nil || task.ID != taskID || task.Status.State != "TASK_STATE_COMPLETED" || res.Contents[0].MIMEType != "application/json" {
		t.Errorf("the owner's resources/read: %v %s", err, res.Contents[0].Text)
	}
	_, hidden := stranger.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	missing := "a2ad://tasks/" + strings.Repeat("0", len(taskID))
	_, unknown := stranger.ReadResource(ctx, &sdk.ReadResourceParams{URI: missing})
	if hidden == nil || !strings.Contains(hidden.Error(), "Resource not found") || unknown == nil ||
		strings.ReplaceAll(unknown.Error(), missing, uri) != hidden.Error() {
		t.Errorf("another caller's task: %v; no task: %v; want the same error", hidden, unknown)
	}
}

// TestMCPServedWhileOptedIn: /mcp is served while the catalogue in force
// opts a function into MCP (the example catalogue does), from the reload
// that opts one in on, and never with --mcp=false.
func TestMCPServedWhileOptedIn(t *testing.T) {
	list := func(m *Main) (int, string) {
		h := http.Header{"Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {"2025-11-25"}}
		resp, body := postURL(t, nil, "http://"+m.Addr()+"/mcp", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), h)
		return resp.StatusCode, string(body)
	}
	m := startMain(t, nil)
	if status, body := list(m); status != http.StatusOK || !strings.Contains(body, `"name":"demo.echo"`) || !strings.Contains(body, `"name":"text.wordcount"`) {
		t.Errorf("the example catalogue: HTTP %d %s", status, body)
	}
	if got, want := m.mcpURL(), "http://"+m.Addr()+"/mcp"; got != want {
		t.Errorf("mcpURL = %q, want %q", got, want)
	}
	off := startMain(t, func(c *Config) { c.MCP = false })
	if status, _ := list(off); status != http.StatusNotFound || off.mcpURL() != "" {
		t.Errorf("--mcp=false: HTTP %d, mcpURL %q; want 404, none", status, off.mcpURL())
	}

	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, "functions:\n  - id: demo::echo\n    metadata: {\"a2a.expose\": true}\n    builtin: echo\n")
	m = startMain(t, func(c *Config) { c.Catalog = catalog })
	if status, _ := list(m); status != http.StatusNotFound || m.mcpURL() != "" {
		t.Errorf("no MCP function: HTTP %d, mcpURL %q; want 404, none", status, m.mcpURL())
	}
	putFile(t, catalog, "functions:\n  - id: demo::echo\n    metadata: {\"mcp.expose\": true}\n    builtin: echo\n")
	if _, err := m.Reload(); err != nil {
		t.Fatal(err)
	}
	if status, body := list(m); status != http.StatusOK || !strings.Contains(body, `"name":"demo.echo"`) {
		t.Errorf("after the reload: HTTP %d %s", status, body)
	}
}

// TestMCPProgress: the official Go SDK client calls a tool that reports
// progress with a progress token, and hears each note as
// notifications/progress before the result, in order and increasing
// (the MCP conformance suite's tools-call-with-progress); the same call
// without a token answers alike, with no notifications.
func TestMCPProgress(t *testing.T) {
	p := startBinary(t, "../../examples/conformance/mcp.yaml", filepath.Join(t.TempDir(), "a2ad.db"))
	var (
		mu    sync.Mutex
		heard []*sdk.ProgressNotificationParams
	)
	c := sdk.NewClient(&sdk.Implementation{Name: "a2ad-interop", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			heard = append(heard, req.Params)
			mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: p.base + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer s.Close()
	// Without a token first: the client hands notifications to its
	// handler on a goroutine of its own, so the last may come just after
	// the result.
	for _, token := range []any{nil, "p-1"} {
		params := &sdk.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
		if token != nil {
			params.SetProgressToken(token)
		}
		res, err := s.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if text := res.Content[0].(*sdk.TextContent).Text; res.IsError || text != "Tool with progress executed successfully" {
			t.Fatalf("result %v %q", res.IsError, text)
		}
		var got []*sdk.ProgressNotificationParams
		waitFor(5*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			got = slices.Clone(heard)
			return token == nil || len(got) >= 3
		})
		if token == nil {
			if len(got) != 0 {
				t.Errorf("without a token, %d notifications", len(got))
			}
			continue
		}
		var notes []string
		for i, n := range got {
			notes = append(notes, n.Message)
			if n.ProgressToken != "p-1" || n.Progress != float64(i+1) {
				t.Errorf("notification %d: token %v, progress %v", i, n.ProgressToken, n.Progress)
			}
		}
		if want := "0 of 100|50 of 100|100 of 100"; strings.Join(notes, "|") != want {
			t.Errorf("notes %q, want %s", notes, want)
		}
	}
}

// TestMCPResourceMetadata: with an OpenID Connect issuer, /mcp's 401 names
// the endpoint's protected-resource metadata (RFC 9728), which names the
// issuer, as an MCP client's authorization discovery reads it; the
// official Go SDK client then calls with the issuer's token. Without an
// issuer (API keys alone) the 401 names none and no metadata is served.
func TestMCPResourceMetadata(t *testing.T) {
	const aud = "a2ad-mcp"
	is := oidctest.NewIssuer(t)
	p := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"), "--oidc-issuer", is.URL, "--oidc-audience", aud)
	meta := p.base + "/.well-known/oauth-protected-resource/mcp"

	mcpHeader := http.Header{"Accept": {"application/json, text/event-stream"}, "Content-Type": {"application/json"}}
	list := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	resp, _ := postURL(t, nil, p.base+"/mcp", list, mcpHeader)
	if got, want := resp.Header.Get("WWW-Authenticate"), `Bearer realm="a2ad", resource_metadata="`+meta+`"`; resp.StatusCode != http.StatusUnauthorized || got != want {
		t.Errorf("401 %d, WWW-Authenticate %q, want %q", resp.StatusCode, got, want)
	}
	mresp, body := httpGet(t, meta)
	if want := `{"resource":"` + p.base + `/mcp","authorization_servers":["` + is.URL + `"],"bearer_methods_supported":["header"],"resource_name":"a2ad MCP endpoint"}`; mresp.StatusCode != http.StatusOK || string(body) != want {
		t.Errorf("metadata %d %s, want %s", mresp.StatusCode, body, want)
	}

	s := mcpSession(t, p.base, is.Token(t, is.Claims(aud, "globex", "partner")))
	res, err := s.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) == 0 {
		t.Fatalf("tools/list with the issuer's token: %v %v", res, err)
	}

	keys := filepath.Join(t.TempDir(), "keys.yaml")
	mustAppendKey(t, keys, "acme", "partner")
	keyed := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"), "--keys", keys)
	resp, _ = postURL(t, nil, keyed.base+"/mcp", list, mcpHeader)
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || got != `Bearer realm="a2ad"` {
		t.Errorf("keys alone: 401 %d, WWW-Authenticate %q", resp.StatusCode, got)
	}
	if mresp, _ := httpGet(t, keyed.base+"/.well-known/oauth-protected-resource/mcp"); mresp.StatusCode != http.StatusNotFound {
		t.Errorf("keys alone: metadata answered %d, want 404", mresp.StatusCode)
	}
}

// TestMCPCancel: the official Go SDK client gives up on a long tools/call
// (its context ends), and sends notifications/cancelled for it; a2ad
// cancels the call's task as an A2A cancel does, whether the cancel comes
// while the call runs or after it answered its aborted request.
func TestMCPCancel(t *testing.T) {
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, `functions:
  - id: demo::sleep
    description: Sleeps.
    metadata: {"mcp.expose": true}
    timeout: 60s
    builtin: sleep
`)
	p := startBinary(t, catalog, filepath.Join(t.TempDir(), "a2ad.db"))
	s := mcpSession(t, p.base, "")
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if _, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "demo.sleep", Arguments: map[string]any{"seconds": 30}}); err == nil {
		t.Fatal("a 30 s sleep answered within 700 ms")
	}
	var state string
	if !waitFor(10*time.Second, func() bool {
		res, err := s.ListResources(context.Background(), nil)
		if err != nil || len(res.Resources) != 1 {
			return false
		}
		read, err := s.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: res.Resources[0].URI})
		if err != nil || len(read.Contents) != 1 {
			return false
		}
		var task struct {
			Status struct{ State string } `json:"status"`
		}
		_ = json.Unmarshal([]byte(read.Contents[0].Text), &task)
		state = task.Status.State
		return state == "TASK_STATE_CANCELED"
	}) {
		t.Fatalf("the task of the cancelled call is %q, want TASK_STATE_CANCELED", state)
	}
}
