package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// callHeaders records what a backend was told of each call it got.
type callHeaders struct {
	mu   sync.Mutex
	seen []http.Header
	got  chan struct{} // a send per request
}

// backend returns an http backend that records each request's headers;
// the first hangs of them hang until a2ad goes away, the others answer
// {"ok": true}.
func (ch *callHeaders) backend(t *testing.T, hangs int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch.mu.Lock()
		ch.seen = append(ch.seen, r.Header.Clone())
		n := len(ch.seen)
		ch.mu.Unlock()
		ch.got <- struct{}{}
		if n <= hangs {
			// Once the body is read, the server watches the connection:
			// the context ends when a2ad is killed.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (ch *callHeaders) wait(t *testing.T, n int) []http.Header {
	t.Helper()
	for {
		ch.mu.Lock()
		seen := append([]http.Header(nil), ch.seen...)
		ch.mu.Unlock()
		if len(seen) >= n {
			return seen
		}
		select {
		case <-ch.got:
		case <-time.After(20 * time.Second):
			t.Fatalf("the backend got %d calls, want %d", len(seen), n)
		}
	}
}

// TestBackendContextSurvivesCrashes: a retry-safe http call is told its
// task, context, caller and attempt, and an idempotency key; SIGKILL the
// real binary twice while the call runs, and the re-runs after each
// restart send the same key with A2A-Attempt 2, then 3.
func TestBackendContextSurvivesCrashes(t *testing.T) {
	ch := &callHeaders{got: make(chan struct{}, 16)}
	backend := ch.backend(t, 2)
	catalog, store := crashSetup(t, fmt.Sprintf(`functions:
  - id: book::room
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    retry_safe: true
    http: {url: %q}
`, backend.URL))
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	acme := mustAppendKey(t, keys, "acme", "partner")
	call := func(p *process, method string, params any) map[string]any {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		resp, out := postRaw(t, p.base, body, http.Header{"Authorization": {"Bearer " + acme}})
		var m map[string]any
		if err := json.Unmarshal(out, &m); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, out)
		}
		return m
	}

	p := startBinary(t, catalog, store, "--keys", keys)
	task := resultTask(t, call(p, "message/send", sendParams("m-book", "book::room", map[string]any{}, false)))
	id, ctxID := task["id"].(string), task["contextId"].(string)
	ch.wait(t, 1)
	p.kill(t)
	p = startBinary(t, catalog, store, "--keys", keys)
	ch.wait(t, 2)
	p.kill(t)
	p = startBinary(t, catalog, store, "--keys", keys)
	seen := ch.wait(t, 3)

	deadline := time.Now().Add(15 * time.Second)
	for state(resultTask(t, call(p, "tasks/get", map[string]any{"id": id}))) != "completed" {
		if time.Now().After(deadline) {
			t.Fatal("the task did not complete after the third attempt")
		}
		time.Sleep(20 * time.Millisecond)
	}
	key := seen[0].Get("Idempotency-Key")
	if len(key) != 32 {
		t.Fatalf("Idempotency-Key %q, want 32 hex digits", key)
	}
	for i, h := range seen {
		want := map[string]string{
			"Idempotency-Key": key,
			"A2A-Task-Id":     id,
			"A2A-Context-Id":  ctxID,
			"A2A-Caller":      "acme",
			"A2A-Attempt":     fmt.Sprint(i + 1),
			"Accept":          "application/json, application/x-ndjson",
		}
		for name, v := range want {
			if got := h.Get(name); got != v {
				t.Errorf("call %d: %s = %q, want %q", i+1, name, got, v)
			}
		}
	}

	// Another task's call has another key.
	other := resultTask(t, call(p, "message/send", sendParams("m-book-2", "book::room", map[string]any{}, true)))
	h := ch.wait(t, 4)[3]
	if got := h.Get("Idempotency-Key"); got == key || len(got) != 32 {
		t.Errorf("another task's Idempotency-Key %q (the first task's is %q)", got, key)
	}
	if got := h.Get("A2A-Task-Id"); got != other["id"] {
		t.Errorf("A2A-Task-Id %q, want %q", got, other["id"])
	}
}
