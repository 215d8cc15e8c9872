package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// Elicitation on the real binary: MCP 2026-07-28's multi round-trip
// requests, for a function that asks a question (the example's quote
// approval), without the tasks extension.

// quoteBackend is an httptest server that answers as the example's
// quoteserver does: an order over 1000 units without "approved": true
// asks for approval (an a2a.input_required signal); any other is quoted.
// approvals counts the approved orders it quoted.
func quoteBackend(tb testing.TB, approvals *atomic.Int32) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			SKU      string `json:"sku"`
			Quantity int    `json:"quantity"`
			Approved bool   `json:"approved"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		if req.Quantity > 1000 && !req.Approved {
			_, _ = w.Write([]byte(`{"a2a.input_required":{"question":"Orders over 1000 units need approval: resend with \"approved\": true"}}`))
			return
		}
		if req.Approved {
			approvals.Add(1)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"sku": req.SKU, "quantity": req.Quantity, "total": float64(req.Quantity) * 2})
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// quoteCatalog has pricing::quote, with the example's input schema, as
// an MCP tool of the partner tier, calling url.
func quoteCatalog(tb testing.TB, url string) string {
	tb.Helper()
	schema, err := filepath.Abs("../../examples/schemas/quote.json")
	if err != nil {
		tb.Fatal(err)
	}
	return `functions:
  - id: pricing::quote
    description: Prices an order.
    metadata: {"mcp.expose": true, "mcp.tier": partner}
    input_schema: ` + schema + `
    timeout: 15s
    http: {url: "` + url + `", method: POST}
`
}

// elicitMeta is the _meta of a call whose client declares form-mode
// elicitation in its per-request capabilities.
var elicitMeta = map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}}}

// askQuote calls pricing.quote for 5000 units, declaring elicitation, and
// returns the InputRequiredResult's one input request key and its state.
func askQuote(tb testing.TB, base, key string) (inputKey, state, taskID string) {
	tb.Helper()
	raw, res, e := mcpRaw(tb, base, key, "tools/call", map[string]any{"name": "pricing.quote",
		"arguments": map[string]any{"sku": "W-1", "quantity": 5000}, "_meta": elicitMeta})
	reqs, _ := res["inputRequests"].(map[string]any)
	state, _ = res["requestState"].(string)
	if e != nil || res["resultType"] != "input_required" || len(reqs) != 1 || state == "" {
		tb.Fatalf("the call that asks: %s", raw)
	}
	for k, r := range reqs {
		params := r.(map[string]any)["params"].(map[string]any)
		props := params["requestedSchema"].(map[string]any)["properties"].(map[string]any)
		if r.(map[string]any)["method"] != "elicitation/create" || params["mode"] != "form" ||
			!strings.HasPrefix(params["message"].(string), "Orders over 1000 units need approval") ||
			props["approved"].(map[string]any)["type"] != "boolean" || props["quantity"].(map[string]any)["default"] != float64(5000) {
			tb.Fatalf("the input request: %s", raw)
		}
		inputKey = k
	}
	return inputKey, state, res["_meta"].(map[string]any)["io.a2ad/task-id"].(string)
}

// retryQuote retries the call with state and response under inputKey.
func retryQuote(tb testing.TB, base, key, inputKey, state string, response map[string]any) ([]byte, map[string]any, map[string]any) {
	tb.Helper()
	return mcpRaw(tb, base, key, "tools/call", map[string]any{"name": "pricing.quote",
		"arguments": map[string]any{"sku": "W-1", "quantity": 5000}, "_meta": elicitMeta,
		"requestState": state, "inputResponses": map[string]any{inputKey: response}})
}

// TestMCPElicitation: the quote approval over MCP without the tasks
// extension: the call answers an elicitation; another caller's retry with
// its state is refused as a missing task, byte for byte; a2ad is
// SIGKILLed and restarted on the same bbolt file, and the retry with an
// accept still reaches the waiting task and answers the quote; a retry
// of the ended call is a clear error; a declined question cancels the
// task.
func TestMCPElicitation(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	acme, bob := mustAppendKey(t, keys, "acme", "partner"), mustAppendKey(t, keys, "bob", "partner")
	var approvals atomic.Int32
	catalog, store := filepath.Join(dir, "catalog.yaml"), filepath.Join(dir, "a2ad.db")
	putFile(t, catalog, quoteCatalog(t, quoteBackend(t, &approvals)))
	p := startBinary(t, catalog, store, "--keys", keys)

	k, state, id := askQuote(t, p.base, acme)
	accept := map[string]any{"action": "accept", "content": map[string]any{"approved": true}}
	rawOther, _, eOther := retryQuote(t, p.base, bob, k, state, accept)
	missing := "a2ad.1." + base64.RawURLEncoding.EncodeToString([]byte("01a225e3-8f00-7000-8000-000000000001"))
	rawMissing, _, _ := retryQuote(t, p.base, bob, k, missing, accept)
	if eOther["code"] != float64(-32602) || eOther["message"] != "Failed to retrieve task: Task not found" || !bytes.Equal(rawOther, rawMissing) {
		t.Fatalf("another caller's retry: %s\na missing task's: %s", rawOther, rawMissing)
	}

	p.kill(t)
	p = startBinary(t, catalog, store, "--keys", keys)
	raw, res, e := retryQuote(t, p.base, acme, k, state, accept)
	sc, _ := res["structuredContent"].(map[string]any)
	if e != nil || res["isError"] == true || sc["total"] != float64(10000) || approvals.Load() != 1 ||
		res["_meta"].(map[string]any)["io.a2ad/task-id"] != id {
		t.Fatalf("the accepted retry after a restart: %s (%d approved quotes)", raw, approvals.Load())
	}
	raw, _, e = retryQuote(t, p.base, acme, k, state, accept)
	if e["message"] != "Invalid params: requestState: the call it continues has ended (completed): its task "+id+" holds the outcome" {
		t.Fatalf("a retry of the ended call: %s", raw)
	}

	k, state, _ = askQuote(t, p.base, acme)
	raw, res, _ = retryQuote(t, p.base, acme, k, state, map[string]any{"action": "decline"})
	if res["isError"] != true || res["_meta"].(map[string]any)["io.a2ad/task-state"] != "canceled" || !strings.Contains(string(raw), "declined") {
		t.Fatalf("a declined question: %s", raw)
	}
	if raw, _, e = retryQuote(t, p.base, acme, k, state, accept); !strings.Contains(e["message"].(string), "has ended (canceled)") || approvals.Load() != 1 {
		t.Fatalf("a retry after the decline: %s", raw)
	}
}

// TestMCPElicitationGoClient: the official Go SDK client (v1.8.0), on
// revision 2026-07-28 with an elicitation handler, calls the quote: its
// multi round-trip support hands a2ad's question to the handler and
// retries with its answer, and the call returns the quote.
func TestMCPElicitationGoClient(t *testing.T) {
	dir := t.TempDir()
	var approvals atomic.Int32
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, quoteCatalog(t, quoteBackend(t, &approvals)))
	keys := filepath.Join(dir, "keys.yaml")
	acme := mustAppendKey(t, keys, "acme", "partner")
	p := startBinary(t, catalog, filepath.Join(dir, "a2ad.db"), "--keys", keys)

	var asked []string
	c := sdk.NewClient(&sdk.Implementation{Name: "a2ad-interop", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: p.base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{acme}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer s.Close()
	if v := s.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("MCP revision %s, want 2026-07-28 (per-request capabilities)", v)
	}
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "pricing.quote", Arguments: map[string]any{"sku": "W-1", "quantity": 5000}})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if res.IsError || !strings.Contains(string(sc), `"total":10000`) || len(asked) != 1 || approvals.Load() != 1 {
		t.Fatalf("the quote: %s (asked %q, %d approved)", sc, asked, approvals.Load())
	}
}

// TestMCPElicitationReplicas: on a shared PostgreSQL store, the question
// asked on one replica is answered by a retry that lands on another.
func TestMCPElicitationReplicas(t *testing.T) {
	dsn := pgtest.Schema(t)
	var approvals atomic.Int32
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, quoteCatalog(t, quoteBackend(t, &approvals)))
	a := startBinary(t, catalog, dsn)
	b := startBinary(t, catalog, dsn)

	k, state, id := askQuote(t, a.base, "")
	raw, res, e := retryQuote(t, b.base, "", k, state, map[string]any{"action": "accept", "content": map[string]any{"approved": true}})
	sc, _ := res["structuredContent"].(map[string]any)
	if e != nil || sc["total"] != float64(10000) || approvals.Load() != 1 || res["_meta"].(map[string]any)["io.a2ad/task-id"] != id {
		t.Fatalf("the retry on replica b: %s", raw)
	}
}
