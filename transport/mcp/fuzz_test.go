package mcp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport/mcp"
)

// FuzzServe posts any body, as any revision (from 2026-07-28 with any
// Mcp-Method and Mcp-Name), to the binding: it never
// panics, and every answer is a status the transport defines (from
// 2026-07-28 on, a JSON-RPC error may come with 400 or 404); a 200 is one
// JSON value. The same request to a server without the fast path (the
// SDK alone) has the same answer, byte for byte.
func FuzzServe(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo.echo","_meta":{"io.a2ad/idempotency-key":"k"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":7}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo.echo",` + declared + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"t",` + declared + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/update","params":{"taskId":"t","inputResponses":{"k":{"action":"accept","content":[]}},` + declared + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/cancel","params":{"taskId":7}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"hi"},` + elicits + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"demo.echo","requestState":"a2ad.1.dA","inputResponses":{"input-t":{"action":"accept","content":{"message":"yes"}}},` + elicits + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"demo.echo","requestState":"a2ad.1.!","inputResponses":{"k":{"action":"decline"}}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"demo.echo","requestState":7,"inputResponses":[]}}`,
		`{"jsonrpc":"2.0","method":"tasks/get","params":[]}`,
		`{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["a2ad://tasks/t","a2ad://tasks/","a2ad://tasks/t/x"]}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["a2ad://tasks/t"],"taskIds":["t"]},` + declared + `}}`,
		`{"jsonrpc":"2.0","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":"yes","resourceSubscriptions":7}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"x"},"_meta":{"io.a2ad/idempotency-key":"k"}}}`,
		`{"jsonrpc":"2.0","id":5.5,"method":"tools/call","params":{"Name":"demo.echo","arguments":null,"x":[]}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"pricing.quote","arguments":{}}} `,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"demo.echo","arguments":"x","_meta":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"demo.echo"},"result":{}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"demo.echo"},"error":7}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"cursor":"ZGVtby5lY2hv"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":null}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":null,"cursor":""}}`,
		`{`, ``, `null`, `[[[[[[[[]]]]]]]]`,
	} {
		f.Add(seed, "2025-11-25")
	}
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "2026-07-28")
	// 2026-07-28 with its Mcp-Method and Mcp-Name headers (see fuzzServe).
	for _, seed := range []struct{ body, version string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"hi"},` + triple() + `}}`, "2026-07-28|tools/call|demo.echo"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"hi"},` +
			triple(`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}`, `"io.a2ad/idempotency-key":"k"`) + `}}`, "2026-07-28|tools/call|demo.echo"},
		{`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"pricing.quote",` + triple() + `}}`, "2026-07-28|tools/call|pricing.quote"},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo.echo","arguments":[],` + triple() + `}}`, "2026-07-28|tools/call|demo.echo"},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo.echo",` + triple() + `}}`, "2026-07-28|tools/call|no.such"},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo.echo",` + triple() + `}}`, "2026-07-28|tools/list|demo.echo"},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo.echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "2026-07-28|tools/call|demo.echo"},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo.echo",` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`,
			"2026-07-28|tools/call|demo.echo"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + triple() + `}}`, "2026-07-28|tools/list"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"ZGVtby5lY2hv",` + triple() + `}}`, "2026-07-28|tools/list"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"x",` + triple() + `}}`, "2026-07-28|tools/list"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`, "2026-07-28|tools/list"},
	} {
		f.Add(seed.body, seed.version)
	}
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "")
	fx := newFixtureWith(f, nil, func(c *mcp.Config) { c.TaskAfter = 50 * time.Millisecond })
	fx.fake.SendFn = func(p a2a.SendParams) (*a2a.Task, error) {
		return &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.StateCompleted}}, nil
	}
	// Task "t", a call of demo.echo, waits for an answer (since a fixed
	// time: the two servers answer alike); any other is unknown.
	fx.fake.GetFn = func(id string, _ *int) (*a2a.Task, error) {
		if id != "t" {
			return nil, tasks.ErrNotFound
		}
		first := a2a.Message{Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"skill":"demo::echo","input":{}}`))}}
		return &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.StateInputRequired, Timestamp: "2026-01-02T03:04:05.000Z"}, History: []a2a.Message{first}}, nil
	}
	fx.fake.CancelFn = func(string) (*a2a.Task, error) { return nil, tasks.ErrNotFound }
	sdkOnly := newFixtureWith(f, nil, func(c *mcp.Config) { c.TaskAfter, c.SDKOnly = 50*time.Millisecond, true })
	sdkOnly.fake.SendFn, sdkOnly.fake.GetFn, sdkOnly.fake.CancelFn = fx.fake.SendFn, fx.fake.GetFn, fx.fake.CancelFn
	f.Fuzz(func(t *testing.T, body, version string) {
		rec := fuzzServe(t, fx.h, body, version)
		if ref := fuzzServe(t, sdkOnly.h, body, version); rec.Code != ref.Code || rec.Body.String() != ref.Body.String() ||
			rec.Header().Get("Content-Type") != ref.Header().Get("Content-Type") || rec.Header().Get("Cache-Control") != ref.Header().Get("Cache-Control") {
			t.Errorf("%q (%q): HTTP %d %s; the SDK alone: HTTP %d %s", body, version, rec.Code, rec.Body, ref.Code, ref.Body)
		}
		switch rec.Code {
		case http.StatusOK:
			if !json.Valid(rec.Body.Bytes()) {
				t.Errorf("200 with a body that is not JSON: %q", rec.Body.Bytes())
			}
		case http.StatusAccepted, http.StatusBadRequest, http.StatusRequestEntityTooLarge,
			http.StatusNotFound: // 2026-07-28 answers an unknown method 404 (the SDK)
		default:
			t.Errorf("HTTP %d for %q (%q): %s", rec.Code, body, version, rec.Body.Bytes())
		}
	})
}

// fuzzServe posts body as a partner to h, as revision version ("" for
// none). A version "v|method|name" is revision v with the headers
// Mcp-Method method and Mcp-Name name (each optional).
func fuzzServe(t *testing.T, h http.Handler, body, version string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", "partner-key")
	version, method, _ := strings.Cut(version, "|")
	method, name, _ := strings.Cut(method, "|")
	for k, v := range map[string]string{"Mcp-Protocol-Version": version, "Mcp-Method": method, "Mcp-Name": name} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, req)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("no answer within 10 s to %q (%q)", body, version)
	}
	return rec
}
