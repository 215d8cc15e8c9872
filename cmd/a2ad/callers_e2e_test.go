package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	goagentcard "github.com/a2aproject/a2a-go/a2aclient/agentcard"
)

// TestTwoAudiences serves a partner and an internal caller from one
// process: each sees its own card and may call only its own skills.
func TestTwoAudiences(t *testing.T) {
	// pricing::quote's backend is the README's quoteserver on the fixed
	// 127.0.0.1:8099, where a developer's own service may listen: the test
	// points it at a backend of its own, which refuses the call.
	var quotes atomic.Int32
	quote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		quotes.Add(1)
		http.Error(w, "refused", http.StatusUnauthorized)
	}))
	defer quote.Close()
	catalog := exampleCatalogWithQuote(t, quote.URL+"/quote")
	k := startKeyed(t, func(c *Config) { c.Catalog = catalog })

	pub := getCard(t, k.base)
	if got := cardSkills(t, pub); len(got) != 0 {
		t.Errorf("public card of a server without anonymous access lists %v", got)
	}
	wantSchemes := map[string]any{
		"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "An a2ad API key as a bearer token: Authorization: Bearer <key>",
			"httpAuthSecurityScheme": map[string]any{"scheme": "bearer", "description": "An a2ad API key as a bearer token: Authorization: Bearer <key>"}},
		"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "An a2ad API key in the X-API-Key header",
			"apiKeySecurityScheme": map[string]any{"location": "header", "name": "X-API-Key", "description": "An a2ad API key in the X-API-Key header"}},
	}
	if !reflect.DeepEqual(pub["securitySchemes"], wantSchemes) {
		t.Errorf("securitySchemes = %v", pub["securitySchemes"])
	}
	if want := []any{map[string]any{"bearer": []any{}}, map[string]any{"apiKey": []any{}}}; !reflect.DeepEqual(pub["security"], want) {
		t.Errorf("security = %v, want %v", pub["security"], want)
	}
	if pub["supportsAuthenticatedExtendedCard"] != true || pub["capabilities"].(map[string]any)["extendedAgentCard"] != true {
		t.Errorf("extended card flags: %v, %v", pub["supportsAuthenticatedExtendedCard"], pub["capabilities"])
	}

	for _, tt := range []struct {
		key  string
		want []string
	}{
		{k.acme, []string{"demo::echo", "demo::sleep", "text::wordcount"}},
		{k.ops, []string{"pricing::quote"}},
	} {
		card := resultTask(t, k.ok(t, tt.key, "agent/getAuthenticatedExtendedCard", nil))
		if got := cardSkills(t, card); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("extended card skills = %v, want %v", got, tt.want)
		}
	}

	// acme may call echo; ops may not (the task is rejected, as for an
	// unknown skill).
	task := resultTask(t, k.ok(t, k.acme, "message/send", sendParams("m-1", "demo::echo", map[string]any{"n": 1}, true)))
	if state(task) != "completed" {
		t.Errorf("acme's echo: %s", state(task))
	}
	task = resultTask(t, k.ok(t, k.ops, "message/send", sendParams("m-1", "demo::echo", map[string]any{"n": 1}, true)))
	if state(task) != "rejected" || statusMessage(task) != "Function 'demo::echo' is not an available skill" {
		t.Errorf("ops's echo: %s %q", state(task), statusMessage(task))
	}
	// ops may call pricing::quote: it runs (its backend refuses it, so it
	// fails), it is not rejected; acme may not.
	task = resultTask(t, k.ok(t, k.ops, "message/send", sendParams("m-2", "pricing::quote", map[string]any{"sku": "A-1", "quantity": 1}, true)))
	if state(task) != "failed" || quotes.Load() != 1 {
		t.Errorf("ops's quote: %s %q, %d backend calls", state(task), statusMessage(task), quotes.Load())
	}
	task = resultTask(t, k.ok(t, k.acme, "message/send", sendParams("m-2", "pricing::quote", map[string]any{"sku": "A-1", "quantity": 1}, true)))
	if state(task) != "rejected" || quotes.Load() != 1 {
		t.Errorf("acme's quote: %s, %d backend calls", state(task), quotes.Load())
	}
}

// exampleCatalogWithQuote is a copy of the example catalogue whose
// pricing::quote calls url instead of the quoteserver's fixed port: no
// test may reach a fixed port (issue 30).
func exampleCatalogWithQuote(tb testing.TB, url string) string {
	tb.Helper()
	src, err := os.ReadFile(exampleCatalog)
	if err != nil {
		tb.Fatal(err)
	}
	const fixed = "url: http://127.0.0.1:8099/quote"
	if !bytes.Contains(src, []byte(fixed)) {
		tb.Fatalf("%s no longer has %q", exampleCatalog, fixed)
	}
	dir := tb.TempDir()
	// Its schemas and scripts are relative to the catalogue.
	for _, sub := range []string{"schemas", "bin"} {
		abs, err := filepath.Abs(filepath.Join(filepath.Dir(exampleCatalog), sub))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, sub)); err != nil {
			tb.Fatal(err)
		}
	}
	path := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(path, bytes.Replace(src, []byte(fixed), []byte("url: "+url), 1), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func TestAuthentication(t *testing.T) {
	k := startKeyed(t, func(c *Config) {
		c.AllowAnonymous = false
	})
	get := sendParams("m", "demo::echo", map[string]any{}, true)
	for _, tt := range []struct {
		name      string
		header    http.Header
		challenge string
		body      string
	}{
		{"no key", http.Header{}, `Bearer realm="a2ad"`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32054,"message":"Authentication required: send an API key in the Authorization header (Bearer) or in X-API-Key"}}`},
		{"unknown key", http.Header{"Authorization": {"Bearer a2ad_nope"}}, `Bearer realm="a2ad", error="invalid_token"`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32054,"message":"Invalid API key"}}`},
		{"basic auth is not a key", http.Header{"Authorization": {"Basic YTpi"}}, `Bearer realm="a2ad", error="invalid_token"`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32054,"message":"Invalid API key"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": get})
			resp, out := postRaw(t, k.base, body, tt.header)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("HTTP %d, want 401", resp.StatusCode)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.challenge)
			}
			if string(out) != tt.body {
				t.Errorf("body = %s\nwant   %s", out, tt.body)
			}
		})
	}
	// X-API-Key works as well as a bearer token.
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": get})
	resp, out := postRaw(t, k.base, body, http.Header{"X-Api-Key": {k.acme}})
	if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"state":"completed"`)) {
		t.Errorf("X-API-Key: HTTP %d %s", resp.StatusCode, out)
	}
	// The card stays public.
	if c := getCard(t, k.base); c["name"] != "a2ad" {
		t.Errorf("card without a key: %v", c)
	}
	// No invalid key is ever logged.
	if strings.Contains(k.oplog.String(), "a2ad_nope") {
		t.Error("the operational log holds a presented key")
	}
}

func TestAnonymousAccessAndTheExtendedCard(t *testing.T) {
	k := startKeyed(t, anonymousPartners)
	pub := getCard(t, k.base)
	if got, want := cardSkills(t, pub), []string{"demo::echo", "demo::sleep", "text::wordcount"}; !reflect.DeepEqual(got, want) {
		t.Errorf("public card skills = %v, want the anonymous (partner) view %v", got, want)
	}
	if want := []any{map[string]any{"bearer": []any{}}, map[string]any{"apiKey": []any{}}, map[string]any{}}; !reflect.DeepEqual(pub["security"], want) {
		t.Errorf("security = %v, want %v (with the empty requirement)", pub["security"], want)
	}
	// An anonymous caller may call what its tier sees...
	task := resultTask(t, k.ok(t, "", "message/send", sendParams("a-1", "demo::echo", map[string]any{}, true)))
	if state(task) != "completed" {
		t.Errorf("anonymous echo: %s", state(task))
	}
	// ...but gets 401 for the extended card, with the request's id.
	status, h, body := k.call(t, "", "agent/getAuthenticatedExtendedCard", nil)
	if status != http.StatusUnauthorized || h.Get("WWW-Authenticate") != `Bearer realm="a2ad"` ||
		string(body) != `{"jsonrpc":"2.0","id":1,"error":{"code":-32054,"message":"Authentication required: the extended card is served to callers with an API key"}}` {
		t.Errorf("anonymous extended card: HTTP %d %q %s", status, h.Get("WWW-Authenticate"), body)
	}
	// A bad key, or credentials a2ad does not take, are refused, never
	// downgraded to anonymous.
	if status, _, _ := k.call(t, "a2ad_wrong", "message/send", sendParams("a-2", "demo::echo", map[string]any{}, true)); status != http.StatusUnauthorized {
		t.Errorf("bad key with anonymous access on: HTTP %d, want 401", status)
	}
	for _, h := range []http.Header{
		{"Authorization": {"Basic YTpi"}}, {"Authorization": {"Token " + k.acme}}, {"Authorization": {"Bearer"}}, {"X-Api-Key": {""}},
	} {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": map[string]any{"id": "x"}})
		if resp, _ := postRaw(t, k.base, body, h); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%v with anonymous access on: HTTP %d, want 401", h, resp.StatusCode)
		}
	}
	// Anonymous callers share one pool of tasks: they may not list it.
	for _, method := range []string{"tasks/list", "ListTasks"} {
		_, _, body := k.call(t, "", method, map[string]any{})
		if !bytes.Contains(body, []byte(`"code":-32004,"message":"Listing tasks needs an API key: anonymous callers share one pool of tasks"`)) {
			t.Errorf("anonymous %s: %s", method, body)
		}
	}
	if _, _, body := k.call(t, k.acme, "tasks/list", map[string]any{}); !bytes.Contains(body, []byte(`"result"`)) {
		t.Errorf("acme's tasks/list: %s", body)
	}
}

// TestCrossCallerIsolation checks every method that names a task: for
// another caller, a task that exists answers byte for byte as one that
// does not.
func TestCrossCallerIsolation(t *testing.T) {
	hook := newHookReceiver(t, nil)
	k := startKeyed(t, nil)
	// acme's task, running, with a webhook; acme's finished task.
	running := resultTask(t, k.ok(t, k.acme, "message/send", sendParams("iso-1", "demo::sleep", map[string]any{"seconds": 30}, false)))
	id := running["id"].(string)
	k.ok(t, k.acme, "tasks/pushNotificationConfig/set", map[string]any{
		"taskId": id, "pushNotificationConfig": map[string]any{"id": "w1", "url": hook.URL}})
	const missing = "00000000-0000-4000-8000-000000000000"

	msgTo := func(taskID string) map[string]any {
		p := sendParams("iso-msg", "demo::sleep", map[string]any{"seconds": 1}, true)
		p["message"].(map[string]any)["taskId"] = taskID
		return p
	}
	methods := []struct {
		method string
		params func(id string) any
	}{
		{"tasks/get", func(id string) any { return map[string]any{"id": id} }},
		{"tasks/get", func(id string) any { return map[string]any{"id": id, "historyLength": 1} }},
		{"tasks/cancel", func(id string) any { return map[string]any{"id": id} }},
		{"tasks/resubscribe", func(id string) any { return map[string]any{"id": id} }},
		{"tasks/pushNotificationConfig/set", func(id string) any {
			return map[string]any{"taskId": id, "pushNotificationConfig": map[string]any{"url": hook.URL + "/evil"}}
		}},
		{"tasks/pushNotificationConfig/get", func(id string) any { return map[string]any{"id": id, "pushNotificationConfigId": "w1"} }},
		{"tasks/pushNotificationConfig/get", func(id string) any { return map[string]any{"id": id} }},
		{"tasks/pushNotificationConfig/list", func(id string) any { return map[string]any{"id": id} }},
		{"tasks/pushNotificationConfig/delete", func(id string) any { return map[string]any{"id": id, "pushNotificationConfigId": "w1"} }},
		{"message/send", func(id string) any { return msgTo(id) }},
		{"message/stream", func(id string) any { return msgTo(id) }},
	}
	for _, mt := range methods {
		for _, accept := range []string{"", "text/event-stream"} {
			h := http.Header{"Authorization": {"Bearer " + k.ops}}
			if accept != "" {
				h.Set("Accept", accept)
			}
			ask := func(taskID string) (*http.Response, []byte) {
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": mt.method, "params": mt.params(taskID)})
				return postRaw(t, k.base, body, h)
			}
			fr, foreign := ask(id)
			mr, miss := ask(missing)
			if !bytes.Equal(foreign, miss) || fr.StatusCode != mr.StatusCode || fr.Header.Get("Content-Type") != mr.Header.Get("Content-Type") {
				t.Errorf("%s (Accept %q): foreign task answers\n  %d %s %s\nmissing task answers\n  %d %s %s",
					mt.method, accept, fr.StatusCode, fr.Header.Get("Content-Type"), foreign, mr.StatusCode, mr.Header.Get("Content-Type"), miss)
			}
			if !bytes.Contains(foreign, []byte(`"code":-32001`)) {
				t.Errorf("%s: %s, want -32001", mt.method, foreign)
			}
		}
	}
	// Nothing ops did touched acme's task.
	got := resultTask(t, k.ok(t, k.acme, "tasks/get", map[string]any{"id": id}))
	if state(got) != "working" {
		t.Errorf("acme's task is %s after ops's attempts", state(got))
	}
	cfgs := k.ok(t, k.acme, "tasks/pushNotificationConfig/list", map[string]any{"id": id})["result"].([]any)
	if len(cfgs) != 1 || cfgs[0].(map[string]any)["pushNotificationConfig"].(map[string]any)["url"] != hook.URL {
		t.Errorf("acme's webhooks after ops's attempts: %v", cfgs)
	}
	// Idempotency keys are per caller: ops's message with acme's
	// messageId is a task of its own.
	own := resultTask(t, k.ok(t, k.ops, "message/send", sendParams("iso-1", "demo::sleep", map[string]any{"seconds": 30}, false)))
	if own["id"] == id {
		t.Error("ops's message with acme's messageId returned acme's task")
	}
	k.ok(t, k.acme, "tasks/cancel", map[string]any{"id": id})
	k.ok(t, k.ops, "tasks/cancel", map[string]any{"id": own["id"]})

	// The audit trail tells the operator what the wire does not.
	var owner, notFound int
	for _, r := range k.auditRecords(t) {
		if r["caller"] != "ops" {
			continue
		}
		switch r["reason"] {
		case "denied_owner":
			owner++
			if r["task_id"] != id || r["outcome"] != "policy_denied" {
				t.Errorf("denied_owner record: %v", r)
			}
		case "not_found":
			notFound++
		}
	}
	if n := 2 * len(methods); owner != n || notFound != n {
		t.Errorf("audit: %d denied_owner and %d not_found records, want %d of each", owner, notFound, n)
	}
}

func TestKeysReload(t *testing.T) {
	k := startKeyed(t, nil)
	echo := func(key, msgID string) int {
		status, _, _ := k.call(t, key, "message/send", sendParams(msgID, "demo::echo", map[string]any{}, true))
		return status
	}
	if s := echo(k.acme, "r-1"); s != http.StatusOK {
		t.Fatalf("acme before the reload: HTTP %d", s)
	}
	// Revoke acme, add carol.
	b, _ := os.ReadFile(k.keys)
	revoked := strings.Replace(string(b), "tiers: [partner]", "tiers: [partner]\n    enabled: false", 1)
	if revoked == string(b) {
		t.Fatalf("keys file not as expected:\n%s", b)
	}
	if err := os.WriteFile(k.keys, []byte(revoked), 0o600); err != nil {
		t.Fatal(err)
	}
	carol := mustAppendKey(t, k.keys, "carol", "partner")
	if s := echo(carol, "r-2"); s != http.StatusUnauthorized {
		t.Errorf("carol before the reload: HTTP %d, want 401", s)
	}
	if _, err := k.m.Reload(); err != nil {
		t.Fatal(err)
	}
	if s := echo(k.acme, "r-3"); s != http.StatusUnauthorized {
		t.Errorf("revoked acme: HTTP %d, want 401", s)
	}
	if s := echo(carol, "r-4"); s != http.StatusOK {
		t.Errorf("carol after the reload: HTTP %d", s)
	}
	// A broken file keeps the keys in force, and says why.
	if err := os.WriteFile(k.keys, []byte("keys:\n  - id: carol\n    tiers: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := k.m.Reload(); err == nil {
		t.Fatal("Reload of a broken file succeeded")
	}
	if s := echo(carol, "r-5"); s != http.StatusOK {
		t.Errorf("carol after a failed reload: HTTP %d", s)
	}
	log := k.oplog.String()
	if !strings.Contains(log, "keys file not reloaded: the previous keys stay in force") || !strings.Contains(log, `hash is required`) {
		t.Errorf("the failed reload is not explained in the log:\n%s", log)
	}
}

// TestKeysReloadOnSIGHUP runs the real binary and reloads its keys with
// SIGHUP.
func TestKeysReloadOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	acme := mustAppendKey(t, keys, "acme", "partner")
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", keys)
	send := func(key, msgID string) int {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send",
			"params": sendParams(msgID, "demo::echo", map[string]any{}, true)})
		resp, _ := postRaw(t, p.base, body, http.Header{"Authorization": {"Bearer " + key}})
		return resp.StatusCode
	}
	if s := send(acme, "h-1"); s != http.StatusOK {
		t.Fatalf("acme: HTTP %d", s)
	}
	bob := mustAppendKey(t, keys, "bob", "partner")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for send(bob, "h-2") != http.StatusOK {
		if time.Now().After(deadline) {
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("bob still refused 10 s after SIGHUP:\n%s", p.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.mu.Lock()
	logs := p.logs.String()
	p.mu.Unlock()
	if !strings.Contains(logs, `"message":"keys reloaded"`) {
		t.Errorf("no reload in the log:\n%s", logs)
	}
	for _, s := range []string{acme, bob} {
		if strings.Contains(logs, s) {
			t.Error("the log holds a secret")
		}
	}
}

func TestRateLimitOverHTTP(t *testing.T) {
	k := startKeyed(t, func(c *Config) {
		c.RatePerSecond = 2
		c.RateBurst = 3
	})
	get := map[string]any{"id": "00000000-0000-4000-8000-000000000000"}
	for i := range 3 {
		if status, _, _ := k.call(t, k.acme, "tasks/get", get); status != http.StatusOK {
			t.Fatalf("request %d within the burst: HTTP %d", i+1, status)
		}
	}
	// A refused request's body is never read: its answer has id null.
	status, h, body := k.call(t, k.acme, "tasks/get", get)
	if status != http.StatusTooManyRequests || h.Get("Retry-After") != "1" ||
		string(body) != `{"jsonrpc":"2.0","id":null,"error":{"code":-32052,"message":"Rate limit exceeded; retry after data.retryAfterMs milliseconds","data":{"retryAfterMs":500,"scope":"caller"}}}` {
		t.Fatalf("over the rate: HTTP %d Retry-After %q %s", status, h.Get("Retry-After"), body)
	}
	// ops has a bucket of its own.
	if status, _, _ := k.call(t, k.ops, "tasks/get", get); status != http.StatusOK {
		t.Errorf("ops limited by acme's rate: HTTP %d", status)
	}
	// Refill: after retryAfterMs, one more request passes.
	k.clock.Advance(500 * time.Millisecond)
	if status, _, _ := k.call(t, k.acme, "tasks/get", get); status != http.StatusOK {
		t.Errorf("acme after waiting retryAfterMs: HTTP %d", status)
	}
	if status, _, _ := k.call(t, k.acme, "tasks/get", get); status != http.StatusTooManyRequests {
		t.Errorf("acme got two requests from 500 ms at 2/s: HTTP %d", status)
	}
}

func TestInFlightCapsOverHTTP(t *testing.T) {
	k := startKeyed(t, func(c *Config) {
		c.MaxInFlightPerCaller = 2
		c.MaxInFlight = 3
	})
	task := resultTask(t, k.ok(t, k.acme, "message/send", sendParams("f-1", "demo::sleep", map[string]any{"seconds": 30}, false)))
	// Streams hold their slots while the task sleeps.
	stream := func(key string, id int) {
		s := openStream(t, nil, k.base, id, "tasks/resubscribe", map[string]any{"id": task["id"]}, http.Header{"Authorization": {"Bearer " + key}})
		t.Cleanup(s.close)
		if _, ok := s.next(t, 5*time.Second); !ok {
			t.Fatal("no first event")
		}
	}
	stream(k.acme, 1)
	stream(k.acme, 2)
	status, hdr, body := k.call(t, k.acme, "tasks/get", map[string]any{"id": task["id"]})
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") != "1" ||
		string(body) != `{"jsonrpc":"2.0","id":null,"error":{"code":-32053,"message":"Too many requests in flight for this caller; retry after data.retryAfterMs milliseconds","data":{"retryAfterMs":1000,"scope":"caller"}}}` {
		t.Errorf("acme's third request: HTTP %d %q %s", status, hdr.Get("Retry-After"), body)
	}
	// bob's stream takes the server's last slot.
	own := resultTask(t, k.ok(t, k.bob, "message/send", sendParams("f-2", "demo::sleep", map[string]any{"seconds": 30}, false)))
	s := openStream(t, nil, k.base, 3, "tasks/resubscribe", map[string]any{"id": own["id"]}, http.Header{"Authorization": {"Bearer " + k.bob}})
	t.Cleanup(s.close)
	if _, ok := s.next(t, 5*time.Second); !ok {
		t.Fatal("no first event")
	}
	status, hdr, body = k.call(t, k.bob, "tasks/get", map[string]any{"id": own["id"]})
	if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") != "1" ||
		string(body) != `{"jsonrpc":"2.0","id":null,"error":{"code":-32053,"message":"Too many requests in flight; retry after data.retryAfterMs milliseconds","data":{"retryAfterMs":1000,"scope":"server"}}}` {
		t.Errorf("a request over the server's cap: HTTP %d %q %s", status, hdr.Get("Retry-After"), body)
	}
}

// TestAuditTrail checks the records' fields and that no payload or
// secret is in them.
func TestAuditTrail(t *testing.T) {
	k := startKeyed(t, func(c *Config) {
		c.RatePerSecond = 1000
		c.RateBurst = 8
	})
	const marker = "PAYLOAD-MARKER-7f3a"
	echo := resultTask(t, k.ok(t, k.acme, "message/send", sendParams("a-1", "demo::echo", map[string]any{"secret": marker}, true)))
	k.ok(t, k.acme, "message/send", sendParams("a-2", "pricing::quote", map[string]any{"sku": marker}, true)) // denied: tier
	k.ok(t, k.acme, "message/send", sendParams("a-3", "engine::status", map[string]any{}, true))              // denied: hidden
	k.ok(t, k.acme, "tasks/get", map[string]any{"id": "no-such-task"})
	// A text naming an unknown "skill": its first word is the caller's
	// and may hold anything, so it stays out of the record.
	k.ok(t, k.acme, "message/send", map[string]any{"message": map[string]any{"kind": "message", "messageId": "a-5", "role": "user",
		"parts": []any{map[string]any{"kind": "text", "text": "token::" + marker + " and more"}}}})
	k.call(t, "a2ad_bogus_"+marker, "tasks/get", map[string]any{"id": "x"})
	fail := resultTask(t, k.ok(t, k.acme, "message/send", sendParams("a-4", "demo::sleep", map[string]any{"seconds": 30}, false)))
	k.ok(t, k.acme, "tasks/cancel", map[string]any{"id": fail["id"]})
	for range 10 { // the burst is 8: the rest are rate limited
		k.call(t, k.ops, "tasks/get", map[string]any{"id": "x"})
	}

	recs := k.auditRecords(t)
	find := func(reason string) map[string]any {
		for _, r := range recs {
			if r["reason"] == reason {
				return r
			}
		}
		t.Fatalf("no %q record in:\n%v", reason, recs)
		return nil
	}
	r := find("completed")
	want := map[string]any{"audit": true, "caller": "acme", "anonymous": false, "tiers": []any{"partner"},
		"rpc_method": "message/send", "task_id": echo["id"], "function_id": "demo::echo", "decision": "exposed",
		"outcome": "ok", "reason": "completed", "state": "completed", "service": "a2ad", "message": "call"}
	for key, v := range want {
		if !reflect.DeepEqual(r[key], v) {
			t.Errorf("completed record: %s = %v, want %v", key, r[key], v)
		}
	}
	for _, key := range []string{"duration_ms", "req_id", "time"} {
		if _, ok := r[key]; !ok {
			t.Errorf("completed record has no %s: %v", key, r)
		}
	}
	for reason, fields := range map[string]map[string]any{
		"denied_tier":     {"function_id": "pricing::quote", "decision": "tier_mismatch", "outcome": "policy_denied", "state": "rejected"},
		"denied_hidden":   {"function_id": "engine::status", "decision": "hidden_prefix", "outcome": "policy_denied"},
		"denied_unknown":  {"function_id": "", "decision": "unknown_function", "outcome": "policy_denied"},
		"not_found":       {"task_id": "no-such-task", "outcome": "client_error", "code": float64(-32001)},
		"unauthenticated": {"caller": "", "outcome": "transport_denied", "rpc_method": "", "code": float64(-32054)},
		"canceled":        {"rpc_method": "tasks/cancel", "task_id": fail["id"], "outcome": "ok"},
		"accepted":        {"rpc_method": "message/send", "function_id": "demo::sleep", "state": "working"},
		// Refused before its body is read: the method is not known.
		// Summarised: the first refusal of the window is written at once,
		// the second waits for the next record of the caller.
		"rate_limited": {"caller": "ops", "rpc_method": "", "outcome": "transport_denied", "code": float64(-32052), "refused": float64(1)},
	} {
		r := find(reason)
		for key, v := range fields {
			if !reflect.DeepEqual(r[key], v) {
				t.Errorf("%s record: %s = %v, want %v", reason, key, r[key], v)
			}
		}
	}
	n := 0
	for _, r := range recs {
		if r["reason"] == "rate_limited" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d rate_limited records, want 1 (the window's summary)", n)
	}
	// No payload, no secret, in either log.
	raw, _ := os.ReadFile(k.audit)
	for _, s := range append([]string{marker}, k.secrets...) {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the audit log holds %q", s)
		}
		if strings.Contains(k.oplog.String(), s) {
			t.Errorf("the operational log holds %q", s)
		}
	}
	// The audit trail is apart from the operational log.
	if strings.Contains(k.oplog.String(), `"audit":true`) {
		t.Error("audit records in the operational log although --audit-log names a file")
	}
}

// TestOfficialClientWithAPIKey: the a2a-go v0.3.15 client reads the card's
// security schemes, sends the key through its auth interceptor, and gets
// the caller's extended card.
func TestOfficialClientWithAPIKey(t *testing.T) {
	k := startKeyed(t, nil)
	ctx := context.Background()
	card, err := goagentcard.DefaultResolver.Resolve(ctx, k.base)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := card.SecuritySchemes["bearer"].(goa2a.HTTPAuthSecurityScheme); !ok || !card.SupportsAuthenticatedExtendedCard {
		t.Fatalf("a2a-go reads the card's schemes as %#v (extended card %v)", card.SecuritySchemes, card.SupportsAuthenticatedExtendedCard)
	}
	creds := a2aclient.NewInMemoryCredentialsStore()
	creds.Set("s-1", "bearer", a2aclient.AuthCredential(k.acme))
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithInterceptors(&a2aclient.AuthInterceptor{Service: creds}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Destroy() })
	sctx := a2aclient.WithSessionID(ctx, "s-1")

	res, err := client.SendMessage(sctx, &goa2a.MessageSendParams{Message: skillMessage("demo::echo", map[string]any{"k": "v"})})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*goa2a.Task)
	if !ok || task.Status.State != goa2a.TaskStateCompleted {
		t.Fatalf("SendMessage: %#v", res)
	}
	ext, err := client.GetAgentCard(sctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range ext.Skills {
		ids = append(ids, s.ID)
	}
	if want := []string{"demo::echo", "demo::sleep", "text::wordcount"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("extended card skills %v, want %v", ids, want)
	}
	// Without the session's key the server refuses the call.
	if _, err := client.GetTask(ctx, &goa2a.TaskQueryParams{ID: task.ID}); err == nil {
		t.Error("GetTask without a key succeeded")
	}
}
