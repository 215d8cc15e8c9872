package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// TestReplicaKilledCallsAreTakenOver runs two real a2ad replicas on one
// PostgreSQL schema with a short --lease-ttl, and SIGKILLs the one that
// runs a retry-safe call and one that is not: within the lease's ttl and
// a few seconds, the other runs the first again, once (calls counted at
// the function's backend), and fails the second with "interrupted:
// replica lost".
func TestReplicaKilledCallsAreTakenOver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	dsn := pgtest.Schema(t)
	var (
		mu    sync.Mutex
		calls = map[string]int{}
	)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read to the end, so that the server watches the connection and
		// ends the request's context when its client dies.
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		calls[r.URL.Path]++
		first := calls[r.URL.Path] == 1
		mu.Unlock()
		if first { // runs until the replica calling it dies
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	// Closed after the replicas are gone (cleanups run last in, first
	// out): a live replica would hold its first call open.
	t.Cleanup(backend.Close)
	count := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[path]
	}
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, fmt.Sprintf(`functions:
  - id: work::again
    metadata: {"a2a.expose": true}
    retry_safe: true
    timeout: 60s
    http: {url: %[1]s/again}
  - id: work::once
    metadata: {"a2a.expose": true}
    timeout: 60s
    http: {url: %[1]s/once}
`, backend.URL))
	const ttl = time.Second
	a := startBinary(t, catalog, dsn, "--lease-ttl", ttl.String())
	b := startBinary(t, catalog, dsn, "--lease-ttl", ttl.String())

	again := resultTask(t, rpc(t, a.base, "message/send", sendParams("m-again", "work::again", map[string]any{}, false)))
	once := resultTask(t, rpc(t, a.base, "message/send", sendParams("m-once", "work::once", map[string]any{}, false)))
	waitTaskState(t, b.base, again["id"].(string), "working")
	waitTaskState(t, b.base, once["id"].(string), "working")
	for count("/again") < 1 || count("/once") < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	a.kill(t)
	killed := time.Now()

	done := waitTaskState(t, b.base, again["id"].(string), "completed")
	failed := waitTaskState(t, b.base, once["id"].(string), "failed")
	if took := time.Since(killed); took > ttl+5*time.Second {
		t.Errorf("the calls were taken over %v after the kill, want within the lease's ttl (%v) and a few seconds", took, ttl)
	}
	if got := statusMessage(failed); got != "interrupted: replica lost" {
		t.Fatalf("the call that is not retry-safe failed with %q, want %q", got, "interrupted: replica lost")
	}
	if arts, _ := done["artifacts"].([]any); len(arts) != 1 {
		t.Fatalf("the retry-safe call's task: %v", done)
	}
	time.Sleep(2 * ttl) // nothing more runs
	if n := count("/again"); n != 2 {
		t.Errorf("the retry-safe function ran %d times, want 2 (on the killed replica, then once)", n)
	}
	if n := count("/once"); n != 1 {
		t.Errorf("the function that is not retry-safe ran %d times, want 1", n)
	}
}
