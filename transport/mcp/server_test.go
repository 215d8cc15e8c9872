package mcp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/schemas"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/httpx"
	"github.com/a2ad/a2ad/transport/mcp"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// tierKeys authenticates by API key, each key a caller with its tiers.
type tierKeys map[string]tasks.Caller

func (k tierKeys) Authenticate(r *http.Request, _ string) (transport.Principal, transport.AuthResult) {
	key := r.Header.Get("X-API-Key")
	if a := r.Header.Get("Authorization"); a != "" {
		key = strings.TrimPrefix(a, "Bearer ")
	}
	if key == "" {
		return transport.Principal{}, transport.NoCredentials
	}
	c, ok := k[key]
	if !ok {
		return transport.Principal{}, transport.BadCredentials
	}
	return transport.Principal{Caller: c, LimitKey: c.ID}, transport.Authenticated
}

var keys = tierKeys{
	"partner-key":  {ID: "p", Tiers: []string{"partner"}},
	"internal-key": {ID: "i", Tiers: []string{"internal"}},
}

func mustSchema(tb testing.TB, s string) *schemas.Schema {
	tb.Helper()
	sc, err := schemas.Compile("test", []byte(s))
	if err != nil {
		tb.Fatal(err)
	}
	return sc
}

// testCatalog: MCP tools for partner, internal and both, an A2A-only
// function, one under the hard floor and one not opted in at all.
func testCatalog(tb testing.TB) *functions.Catalog {
	obj := mustSchema(tb, `{"type":"object"}`)
	return functions.NewCatalog(
		&functions.Function{ID: "demo::echo", Name: "Echo", Description: "Returns its input.", Input: mustSchema(tb, `{"type":"object","properties":{"message":{"type":"string"}}}`),
			RetrySafe: true, Metadata: map[string]any{"mcp.expose": true, "mcp.tier": "partner", "mcp.read_only": true}},
		&functions.Function{ID: "pricing::quote", Name: "Quote", Input: obj,
			Metadata: map[string]any{"mcp.expose": true, "mcp.tier": "internal", "mcp.destructive": false, "mcp.open_world": true}},
		&functions.Function{ID: "text::wordcount", Name: "Word count", Input: mustSchema(tb, `{"oneOf":[{"type":"object"}]}`),
			Output:   mustSchema(tb, `{"type":"object","properties":{"words":{"type":"integer"}}}`),
			Metadata: map[string]any{"mcp.expose": true, "mcp.tier": []any{"partner", "internal"}}},
		&functions.Function{ID: "a2a::only", Name: "A2A only", Input: obj, Metadata: map[string]any{"a2a.expose": true}},
		&functions.Function{ID: "demo::a2aonly", Name: "A2A only", Input: obj, Metadata: map[string]any{"a2a.expose": true, "a2a.tier": "partner"}},
		&functions.Function{ID: "engine::status", Name: "Status", Input: obj, Metadata: map[string]any{"mcp.expose": true}},
		&functions.Function{ID: "demo::private", Name: "Private", Input: obj},
	)
}

type fixture struct {
	url   string
	h     http.Handler
	fake  *transporttest.Service
	cat   atomic.Pointer[functions.Catalog]
	audit *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newFixture(tb testing.TB, limits transport.Admitter) *fixture {
	tb.Helper()
	return newFixtureWith(tb, limits, nil)
}

// newFixtureWith is newFixture with the server's config changed by set.
func newFixtureWith(tb testing.TB, limits transport.Admitter, set func(*mcp.Config)) *fixture {
	tb.Helper()
	f := &fixture{fake: &transporttest.Service{TB: tb}, audit: &syncBuffer{}}
	f.cat.Store(testCatalog(tb))
	cors, err := httpx.NewCORS([]string{"https://host.example"})
	if err != nil {
		tb.Fatal(err)
	}
	al := zerolog.New(f.audit)
	core := transport.New(transport.Config{Tasks: f.fake, Lister: f.fake, Auth: keys, Admit: limits, Audit: &al, Logger: zerolog.Nop()})
	cfg := mcp.Config{Core: core, Catalog: f.cat.Load, CORS: cors, Origin: "http://a2ad.example:8080", Version: "test"}
	if set != nil {
		set(&cfg)
	}
	s := mcp.New(cfg)
	srv := httptest.NewServer(s)
	tb.Cleanup(srv.Close)
	f.url, f.h = srv.URL, s
	return f
}

// post sends one JSON-RPC message as an MCP 2025-11-25 client does after
// initialisation (a stateless server needs no initialize first).
func (f *fixture) post(tb testing.TB, key, body string, hdr ...string) (int, http.Header, []byte) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, f.url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return res.StatusCode, res.Header, b
}

// rpc posts a request and decodes its JSON-RPC answer.
func (f *fixture) rpc(tb testing.TB, key, method, params string) (result json.RawMessage, rpcErr *rpcError, raw []byte) {
	tb.Helper()
	status, _, b := f.post(tb, key, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
	if status != http.StatusOK {
		tb.Fatalf("%s: HTTP %d: %s", method, status, b)
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		tb.Fatalf("%s: %v: %s", method, err, b)
	}
	return env.Result, env.Error, b
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

type tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  map[string]any  `json:"annotations"`
}

func (f *fixture) tools(tb testing.TB, key string) []tool {
	tb.Helper()
	res, e, raw := f.rpc(tb, key, "tools/list", `{}`)
	if e != nil {
		tb.Fatalf("tools/list: %s", raw)
	}
	var out struct {
		Tools []tool `json:"tools"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		tb.Fatal(err)
	}
	return out.Tools
}

func names(ts []tool) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// TestListPerTier: each caller sees exactly the tools its tiers may see
// over MCP; A2A-only, floor and unopted functions are never tools.
func TestListPerTier(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		key  string
		want []string
	}{
		{"partner-key", []string{"demo.echo", "text.wordcount"}},
		{"internal-key", []string{"pricing.quote", "text.wordcount"}},
	} {
		if diff := cmp.Diff(tc.want, names(f.tools(t, tc.key))); diff != "" {
			t.Errorf("tools/list as %s (-want +got):\n%s", tc.key, diff)
		}
	}
}

// TestListPages: tools/list pages through the caller's tools in catalogue
// order, each page's nextCursor leading to the next and the last having
// none; a cursor the server did not give is -32602.
func TestListPages(t *testing.T) {
	f := newFixtureWith(t, nil, func(c *mcp.Config) { c.PageSize = 1 })
	var (
		got    []string
		cursor string
	)
	for range 5 {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		res, e, raw := f.rpc(t, "partner-key", "tools/list", params)
		if e != nil {
			t.Fatalf("tools/list %s: %s", params, raw)
		}
		var page struct {
			Tools      []tool `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Tools) != 1 {
			t.Fatalf("a page of %d tools, want 1: %s", len(page.Tools), raw)
		}
		got = append(got, page.Tools[0].Name)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if diff := cmp.Diff([]string{"demo.echo", "text.wordcount"}, got); diff != "" {
		t.Errorf("the pages (-want +got):\n%s", diff)
	}
	_, e, raw := f.rpc(t, "partner-key", "tools/list", `{"cursor":"bm90LWEtdG9vbA"}`)
	if e == nil || e.Code != -32602 || e.Message != "Invalid params: cursor: is not one this server gave, or names a tool no longer listed" {
		t.Errorf("a cursor of no tool: %s", raw)
	}
}

// TestToolShape: the schema, title, description and annotations of the
// tools, a non-object schema published as the permissive one.
func TestToolShape(t *testing.T) {
	f := newFixture(t, nil)
	got := map[string]tool{}
	for _, tl := range f.tools(t, "partner-key") {
		got[tl.Name] = tl
	}
	echo, wc := got["demo.echo"], got["text.wordcount"]
	if echo.Title != "Echo" || echo.Description != "Returns its input." {
		t.Errorf("demo.echo title, description = %q, %q", echo.Title, echo.Description)
	}
	if want := `{"type":"object","properties":{"message":{"type":"string"}}}`; string(echo.InputSchema) != want {
		t.Errorf("demo.echo inputSchema = %s, want %s", echo.InputSchema, want)
	}
	if diff := cmp.Diff(map[string]any{"readOnlyHint": true, "idempotentHint": true}, echo.Annotations); diff != "" {
		t.Errorf("demo.echo annotations (-want +got):\n%s", diff)
	}
	if string(wc.InputSchema) != `{"type":"object"}` || wc.Annotations != nil {
		t.Errorf("text.wordcount inputSchema, annotations = %s, %v; want the permissive schema, none", wc.InputSchema, wc.Annotations)
	}
	if want := `{"type":"object","properties":{"words":{"type":"integer"}}}`; string(wc.OutputSchema) != want {
		t.Errorf("text.wordcount outputSchema = %s, want %s", wc.OutputSchema, want)
	}
	q := f.tools(t, "internal-key")[0]
	if diff := cmp.Diff(map[string]any{"readOnlyHint": false, "idempotentHint": false, "destructiveHint": false, "openWorldHint": true}, q.Annotations); diff != "" {
		t.Errorf("pricing.quote annotations (-want +got):\n%s", diff)
	}
}

// TestUnknownIsHidden: a hidden tool's error is the unknown tool's, byte
// for byte: the same name called where it is hidden and where no
// function has it. Nothing is sent, and the audit says why.
func TestUnknownIsHidden(t *testing.T) {
	f := newFixture(t, nil)
	call := func(name string) []byte {
		_, e, raw := f.rpc(t, "partner-key", "tools/call", `{"name":"`+name+`","arguments":{}}`)
		if e == nil || e.Code != -32602 || e.Message != `Unknown tool "`+name+`"` {
			t.Errorf("tools/call %s: %s, want -32602 Unknown tool", name, raw)
		}
		return raw
	}
	for _, name := range []string{"pricing.quote", "demo.a2aonly", "engine.status", "demo.private"} {
		hidden := call(name)
		full := f.cat.Load()
		f.cat.Store(functions.NewCatalog())
		unknown := call(name)
		f.cat.Store(full)
		if !bytes.Equal(hidden, unknown) {
			t.Errorf("hidden %s:\n%s\nunknown:\n%s", name, hidden, unknown)
		}
	}
	if log := f.audit.String(); !strings.Contains(log, `"function_id":"pricing::quote","decision":"tier_mismatch","outcome":"policy_denied","reason":"denied_tier"`) ||
		!strings.Contains(log, `"transport":"mcp"`) || !strings.Contains(log, `"rpc_method":"tools/call"`) {
		t.Errorf("audit records:\n%s", log)
	}
}

// TestCallOutcomes: a completed call is the function's output, a failed
// one a result with isError, and a refusal a JSON-RPC error.
func TestCallOutcomes(t *testing.T) {
	f := newFixture(t, nil)
	var sent []a2a.SendParams
	answer := func(task *a2a.Task, err error) {
		f.fake.SendFn = func(p a2a.SendParams) (*a2a.Task, error) {
			sent = append(sent, p)
			return task, err
		}
	}
	answer(&a2a.Task{ID: "t1", Status: a2a.TaskStatus{State: a2a.StateCompleted},
		Artifacts: []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"words":3}`))}}}}, nil)
	res, e, raw := f.rpc(t, "partner-key", "tools/call", `{"name":"text.wordcount","arguments":{"text":"a b c"}}`)
	if e != nil {
		t.Fatalf("completed call: %s", raw)
	}
	if want := `{"content":[{"type":"text","text":"{\"words\":3}"}],"structuredContent":{"words":3},"_meta":{"io.a2ad/task-id":"t1","io.a2ad/task-state":"completed"}}`; !sameJSON(t, res, want) {
		t.Errorf("completed call = %s\nwant %s", res, want)
	}
	if got, want := string(sent[0].Message.Parts[0].Data), `{"skill":"text::wordcount","input":{"text":"a b c"}}`; got != want {
		t.Errorf("sent data part = %s, want %s", got, want)
	}

	failed := &a2a.Message{Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("quote server said no")},
		Metadata: map[string]any{tasks.FailureKey: tasks.FailureInvoke}}
	answer(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.StateFailed, Message: failed}}, nil)
	res, e, raw = f.rpc(t, "partner-key", "tools/call", `{"name":"demo.echo"}`)
	if e != nil {
		t.Fatalf("failed call: %s", raw)
	}
	if want := `{"content":[{"type":"text","text":"quote server said no"}],"isError":true,"_meta":{"io.a2ad/task-id":"t2","io.a2ad/task-state":"failed"}}`; !sameJSON(t, res, want) {
		t.Errorf("failed call = %s\nwant %s", res, want)
	}
	if got := string(sent[1].Message.Parts[0].Data); got != `{"skill":"demo::echo","input":{}}` {
		t.Errorf("call without arguments sent %s", got)
	}

	for _, tc := range []struct {
		name, params string
		err          error
		code         int
		msg          string
	}{
		{"schema", `{"name":"demo.echo","arguments":{"message":1}}`,
			&tasks.InputError{Skill: "demo::echo", Problems: []a2a.Problem{{Path: "/message", Message: "got number, want string"}}},
			-32602, "Invalid parameters: input does not match the schema of skill demo::echo: /message: got number, want string"},
		{"caller busy", `{"name":"demo.echo"}`, tasks.ErrCallerBusy, a2a.ErrCallerBusy.Code, a2a.ErrCallerBusy.Message},
		{"not an object", `{"name":"demo.echo","arguments":[1]}`, nil, -32602, "Invalid params: arguments: must be an object"},
		{"bad key", `{"name":"demo.echo","_meta":{"io.a2ad/idempotency-key":7}}`, nil, -32602,
			"Invalid params: _meta.io.a2ad/idempotency-key: must be a string of 1 to 252 bytes"},
		{"key reused", `{"name":"demo.echo","_meta":{"io.a2ad/idempotency-key":"k"}}`, tasks.ErrMessageIDReused, -32602,
			"Invalid params: _meta.io.a2ad/idempotency-key: reused with different arguments"},
	} {
		answer(nil, tc.err)
		if tc.err == nil {
			f.fake.SendFn = nil // the fake fails the test if called
		}
		_, e, raw := f.rpc(t, "partner-key", "tools/call", tc.params)
		if e == nil || e.Code != tc.code || e.Message != tc.msg {
			t.Errorf("%s: %s, want %d %q", tc.name, raw, tc.code, tc.msg)
		}
	}
}

func sameJSON(tb testing.TB, got json.RawMessage, want string) bool {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatal(err)
	}
	return cmp.Equal(g, w)
}

// TestIdempotencyKey: a call with a key is sent with a messageId of that
// key, every time; one without, with a new messageId each time.
func TestIdempotencyKey(t *testing.T) {
	f := newFixture(t, nil)
	var ids []string
	f.fake.SendFn = func(p a2a.SendParams) (*a2a.Task, error) {
		ids = append(ids, p.Message.MessageID)
		return &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.StateCompleted}}, nil
	}
	for _, params := range []string{
		`{"name":"demo.echo","_meta":{"io.a2ad/idempotency-key":"order-17"}}`,
		`{"name":"demo.echo","_meta":{"io.a2ad/idempotency-key":"order-17"}}`,
		`{"name":"demo.echo"}`,
		`{"name":"demo.echo"}`,
	} {
		if _, e, raw := f.rpc(t, "partner-key", "tools/call", params); e != nil {
			t.Fatalf("%s: %s", params, raw)
		}
	}
	if ids[0] != "mcp:order-17" || ids[1] != ids[0] {
		t.Errorf("messageIds with a key = %q, %q; want mcp:order-17 twice", ids[0], ids[1])
	}
	if ids[2] == ids[3] || strings.HasPrefix(ids[2], "mcp:") {
		t.Errorf("messageIds without a key = %q, %q; want two new ids", ids[2], ids[3])
	}
}

// TestTransportRefusals: the HTTP answers the transport gives before a
// message is served.
func TestTransportRefusals(t *testing.T) {
	lim := &transporttest.Limits{}
	f := newFixture(t, lim)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, tc := range []struct {
		name     string
		key      string
		hdr      []string
		status   int
		contains string
	}{
		{"origin refused", "partner-key", []string{"Origin", "https://evil.example"}, 403, "Forbidden: Origin not allowed"},
		{"origin listed", "partner-key", []string{"Origin", "https://host.example"}, 200, `"demo.echo"`},
		{"the server's own origin", "partner-key", []string{"Origin", "http://a2ad.example:8080"}, 200, `"demo.echo"`},
		{"another port of its host", "partner-key", []string{"Origin", "http://a2ad.example:8081"}, 403, "Forbidden: Origin not allowed"},
		{"bad version", "partner-key", []string{"Mcp-Protocol-Version", "1999-01-01"}, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Unsupported Mcp-Protocol-Version \"1999-01-01\": supported are 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05"}}`},
		{"no key", "", nil, 401, `"code":-32054`},
		{"bad key", "nope", nil, 401, `"error":{"code":-32054`},
	} {
		status, _, b := f.post(t, tc.key, list, tc.hdr...)
		if status != tc.status || !strings.Contains(string(b), tc.contains) {
			t.Errorf("%s: HTTP %d %s; want %d with %s", tc.name, status, b, tc.status, tc.contains)
		}
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"pad":"` + strings.Repeat("x", transport.DefaultMaxBodyBytes) + `"}}}`
	if status, _, b := f.post(t, "partner-key", big); status != 413 ||
		string(b) != `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request body exceeds 1048576 bytes"}}` {
		t.Errorf("body over the cap: HTTP %d %s", status, b)
	}
	lim.Deny(&transport.Denial{Scope: "caller", RateLimited: true})
	status, h, b := f.post(t, "partner-key", list)
	if status != 429 || h.Get("Retry-After") == "" || !strings.Contains(string(b), `"code":-32052`) {
		t.Errorf("rate limited: HTTP %d %v %s", status, h, b)
	}
	res, err := http.Get(f.url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 405 || res.Header.Get("Allow") != "POST" {
		t.Errorf("GET: HTTP %d, Allow %q; want 405, POST", res.StatusCode, res.Header.Get("Allow"))
	}
}
