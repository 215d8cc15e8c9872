package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2aproject/a2a-go/a2a"
)

// TestReplicaKilledCallsAreTakenOver runs two real a2ad replicas on one
// PostgreSQL schema with a short --lease-ttl, and SIGKILLs the one that
// runs a retry-safe call and one that is not: within the lease's ttl and
// a few seconds, the other runs the first again, once (calls counted at
// the function's backend), and fails the second with "interrupted:
// replica lost".
func TestReplicaKilledCallsAreTakenOver(t *testing.T) {
	skipShort(t, "builds and kills the real binary")
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
	catalog := leaseCatalog(t, backend.URL+"/again", backend.URL+"/once")
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

// startReplicas runs n real a2ad replicas of catalog on the PostgreSQL
// database dsn.
func startReplicas(t *testing.T, catalog, dsn string, n int, extra ...string) []*process {
	t.Helper()
	skipShort(t, "runs several real binaries")
	ps := make([]*process, n)
	for i := range ps {
		ps[i] = startBinary(t, catalog, dsn, extra...)
	}
	return ps
}

// execCatalog writes script to a new directory and a catalogue beside it
// of one function, exec::<name>, that runs the script with the directory
// and args as its arguments.
func execCatalog(t *testing.T, name, script string, args ...string) (dir, catalog string) {
	t.Helper()
	dir = t.TempDir()
	path := filepath.Join(dir, name+".sh")
	putScript(t, path, script)
	argv, err := json.Marshal(append([]string{path, dir}, args...))
	if err != nil {
		t.Fatal(err)
	}
	catalog = filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, fmt.Sprintf(`functions:
  - id: exec::%s
    metadata: {"a2a.expose": true}
    exec: {argv: %s}
`, name, argv))
	return dir, catalog
}

// TestReplicasShareTasks sends a message on one replica with the official
// a2a-go client and reads the task back on the two others, by id and in
// their listings.
func TestReplicasShareTasks(t *testing.T) {
	dsn := pgtest.Schema(t)
	rs := startReplicas(t, exampleCatalog, dsn, 3)
	ctx := context.Background()
	res, err := officialClient(t, rs[0].base).SendMessage(ctx, &a2a.MessageSendParams{
		Message: skillMessage("demo::echo", map[string]any{"message": "across"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	sent, ok := res.(*a2a.Task)
	if !ok || sent.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("send on A: %#v", res)
	}
	for i, r := range rs[1:] {
		client := officialClient(t, r.base)
		got, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: sent.ID})
		if err != nil {
			t.Fatalf("replica %d: GetTask: %v", i+1, err)
		}
		if got.ID != sent.ID || got.Status.State != a2a.TaskStateCompleted || len(got.Artifacts) != 1 {
			t.Fatalf("replica %d: GetTask = %+v", i+1, got)
		}
		if d, ok := got.Artifacts[0].Parts[0].(a2a.DataPart); !ok || d.Data["message"] != "across" {
			t.Fatalf("replica %d: artifact %#v", i+1, got.Artifacts[0].Parts)
		}
		listed := listAllOfficial(t, client, a2a.ListTasksRequest{}, 1)
		if listed[0].ID != sent.ID || listed[0].Status.State != a2a.TaskStateCompleted {
			t.Fatalf("replica %d: ListTasks = %v", i+1, taskIDs(listed))
		}
	}
}

// TestReplicasOneTaskPerMessage sends one message 20 times at once, spread
// over three replicas: every answer is the same completed task, and the
// function ran once (counted at its backend).
func TestReplicasOneTaskPerMessage(t *testing.T) {
	dsn := pgtest.Schema(t)
	var calls atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
		time.Sleep(300 * time.Millisecond) // the others arrive meanwhile
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	}))
	t.Cleanup(backend.Close)
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, fmt.Sprintf(`functions:
  - id: work::slow
    metadata: {"a2a.expose": true}
    http: {url: %s}
`, backend.URL))
	rs := startReplicas(t, catalog, dsn, 3)

	sendAtOnce(t, rs, "same-message", "work::slow")
	time.Sleep(300 * time.Millisecond) // a second call would have arrived
	if got := calls.Load(); got != 1 {
		t.Fatalf("the function ran %d times, want 1", got)
	}
	for i, r := range rs {
		res := resultTask(t, rpc(t, r.base, "tasks/list", map[string]any{"page_size": 50}))
		if res["total_size"] != float64(1) {
			t.Fatalf("replica %d lists %v tasks, want 1", i, res["total_size"])
		}
	}
}

// sendAtOnce sends message msgID, calling fn, 20 times at once spread
// over rs, blocking, and fails the test unless every answer is the same
// completed task, whose id it returns.
func sendAtOnce(t *testing.T, rs []*process, msgID, fn string) string {
	t.Helper()
	const n = 20
	ids := make([]string, n)
	states := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := http.Post(rs[i%len(rs)].base+"/a2a", "application/json",
				bytes.NewReader(rpcBody("message/send", sendParams(msgID, fn, map[string]any{}, true))))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var answer struct {
				Result struct {
					ID     string                 `json:"id"`
					Status struct{ State string } `json:"status"`
				} `json:"result"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
				t.Error(err)
				return
			}
			ids[i], states[i] = answer.Result.ID, answer.Result.Status.State
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if ids[i] == "" || ids[i] != ids[0] || states[i] != "completed" {
			t.Fatalf("send %d (on replica %d): task %q %q, want every send the one completed task %q", i, i%len(rs), ids[i], states[i], ids[0])
		}
	}
	return ids[0]
}

// TestReplicasOneCallPerMessageQuick: as TestReplicasOneTaskPerMessage,
// for a retry-safe function that answers at once (within the window in
// which a call may run before its task is stored): the backend is called
// once, under the task's Idempotency-Key and id, for each of 5 messages.
func TestReplicasOneCallPerMessageQuick(t *testing.T) {
	dsn := pgtest.Schema(t)
	var (
		mu    sync.Mutex
		calls = map[string][]string{} // Idempotency-Key → the task ids called under it
	)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		calls[key] = append(calls[key], r.Header.Get("A2A-Task-Id"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	}))
	t.Cleanup(backend.Close)
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, fmt.Sprintf(`functions:
  - id: work::quick
    metadata: {"a2a.expose": true}
    retry_safe: true
    http: {url: %s}
`, backend.URL))
	rs := startReplicas(t, catalog, dsn, 3, "--rate", "0")
	want := map[string]string{} // the task's Idempotency-Key → its id
	for m := range 5 {
		msgID := fmt.Sprintf("message-%d", m)
		id := sendAtOnce(t, rs, msgID, "work::quick")
		h := sha256.Sum256([]byte(id + "\x00" + msgID)) // the README's derivation
		want[hex.EncodeToString(h[:16])] = id
	}
	time.Sleep(300 * time.Millisecond) // a late call would have arrived
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for key, ids := range calls {
		n += len(ids)
		if len(ids) > 1 {
			t.Errorf("Idempotency-Key %s: %d calls (tasks %v), want 1", key, len(ids), ids)
		}
		if id, ok := want[key]; !ok || ids[0] != id {
			t.Errorf("a call under Idempotency-Key %s for task %s, which is no task's key (want the task's own)", key, ids[0])
		}
	}
	if len(calls) != 5 || n != 5 {
		t.Errorf("5 messages made %d calls under %d keys, want 5 under 5", n, len(calls))
	}
	res := resultTask(t, rpc(t, rs[0].base, "tasks/list", map[string]any{"page_size": 50}))
	if res["total_size"] != float64(5) {
		t.Fatalf("%v tasks listed, want 5", res["total_size"])
	}
}
