package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// chaosBackend answers a call after 50 to 400 ms, counting the calls of
// each key, or gives up when its caller dies.
type chaosBackend struct {
	mu    sync.Mutex
	calls map[string]int
}

func (b *chaosBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct{ Key string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Key == "" {
		http.Error(w, "no key", http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.calls[in.Key]++
	b.mu.Unlock()
	select {
	case <-time.After(time.Duration(50+rand.IntN(350)) * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"key":%q}`, in.Key)
}

func (b *chaosBackend) count(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[key]
}

// chaosFleet is three replicas, one of which the test kills and restarts.
type chaosFleet struct {
	mu       sync.Mutex
	replicas []*process
}

func (f *chaosFleet) pick() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.replicas[rand.IntN(len(f.replicas))].base
}

// chaosTask is a task a replica acknowledged.
type chaosTask struct {
	id, key string
	again   bool // of the retry-safe function
}

// TestReplicasChaos (A2AD_CHAOS=1) runs 8 clients over three replicas for
// 30 s while one replica is SIGKILLed and restarted, twice. By the end
// every acknowledged task exists and is terminal, the function that is not
// retry-safe ran at most once per task, and the retry-safe one ran again
// only for calls its replica's death interrupted (counted and logged).
func TestReplicasChaos(t *testing.T) {
	if os.Getenv("A2AD_CHAOS") != "1" {
		t.Skip("set A2AD_CHAOS=1 to run the 30 s chaos run")
	}
	dsn := pgtest.Schema(t)
	backend := &chaosBackend{calls: map[string]int{}}
	server := httptest.NewServer(backend)
	t.Cleanup(server.Close)
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, fmt.Sprintf(`functions:
  - id: work::again
    metadata: {"a2a.expose": true}
    retry_safe: true
    http: {url: %[1]s}
  - id: work::once
    metadata: {"a2a.expose": true}
    http: {url: %[1]s}
`, server.URL))
	// The clients all come from 127.0.0.1: one anonymous caller, whom the
	// default rate limit would hold back.
	flags := []string{"--lease-ttl", "1s", "--rate", "0"}
	fleet := &chaosFleet{replicas: startReplicas(t, catalog, dsn, 3, flags...)}

	stop := make(chan struct{})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		acked    []chaosTask
		refusals []string
		lost     int // sends whose replica died before it answered
	)
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("c%d-%d", c, i)
				again := rand.IntN(2) == 0
				fn := map[bool]string{true: "work::again", false: "work::once"}[again]
				task, refusal, err := chaosSend(fleet.pick(), key, fn, rand.IntN(2) == 0)
				mu.Lock()
				switch {
				case err != nil:
					lost++
				case refusal != "":
					refusals = append(refusals, refusal)
				default:
					acked = append(acked, chaosTask{id: task, key: key, again: again})
				}
				mu.Unlock()
			}
		}()
	}
	for round := range 2 {
		time.Sleep(9 * time.Second)
		victim := round + rand.IntN(2) // one of the first two, the other's turn may come
		fleet.mu.Lock()
		dead := fleet.replicas[victim]
		fleet.replicas = append(fleet.replicas[:victim:victim], fleet.replicas[victim+1:]...)
		fleet.mu.Unlock()
		dead.kill(t)
		t.Logf("round %d: SIGKILLed a replica", round+1)
		time.Sleep(2 * time.Second)
		fresh := startBinary(t, catalog, dsn, flags...)
		fleet.mu.Lock()
		fleet.replicas = append(fleet.replicas, fresh)
		fleet.mu.Unlock()
	}
	time.Sleep(8 * time.Second)
	close(stop)
	wg.Wait()
	if len(refusals) > 0 {
		t.Errorf("%d sends refused, first: %s", len(refusals), refusals[0])
	}
	checkChaos(t, fleet, backend, acked)
	t.Logf("%d tasks acknowledged, %d sends lost with their replica", len(acked), lost)
}

// chaosSend sends one message to base; it returns the task's id, or the
// JSON-RPC error, or the transport error of a replica that died.
func chaosSend(base, key, fn string, blocking bool) (id, refusal string, err error) {
	hc := &http.Client{Timeout: 20 * time.Second}
	resp, err := hc.Post(base+"/a2a", "application/json",
		bytes.NewReader(rpcBody("message/send", sendParams(key, fn, map[string]any{"key": key}, blocking))))
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", "", err
	}
	var answer struct {
		Result *struct{ ID string } `json:"result"`
		Error  json.RawMessage      `json:"error"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.Result == nil || answer.Result.ID == "" {
		return "", fmt.Sprintf("HTTP %d %s", resp.StatusCode, body), nil
	}
	return answer.Result.ID, "", nil
}

// checkChaos waits for every acknowledged task to end, then checks how it
// ended and how often its function ran.
func checkChaos(t *testing.T, fleet *chaosFleet, backend *chaosBackend, acked []chaosTask) {
	t.Helper()
	base := fleet.pick()
	deadline := time.Now().Add(30 * time.Second)
	reruns := 0
	ended := map[string]int{}
	for _, task := range acked {
		var got map[string]any
		for {
			got = resultTask(t, rpc(t, base, "tasks/get", map[string]any{"id": task.id}))
			if st := state(got); st == "completed" || st == "failed" || st == "canceled" || st == "rejected" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s (%s) is still %s", task.id, task.key, state(got))
			}
			time.Sleep(50 * time.Millisecond)
		}
		st, calls := state(got), backend.count(task.key)
		ended[st]++
		switch {
		case task.again && (st != "completed" || calls < 1 || calls > 3):
			t.Errorf("retry-safe task %s: %s after %d calls, want completed after 1 to 3", task.key, st, calls)
		case task.again && calls > 1:
			reruns += calls - 1
		case !task.again && calls > 1:
			t.Errorf("task %s that is not retry-safe: its function ran %d times", task.key, calls)
		case !task.again && st == "completed" && calls != 1:
			t.Errorf("task %s completed after %d calls", task.key, calls)
		case !task.again && st == "failed" && statusMessage(got) != "interrupted: replica lost":
			t.Errorf("task %s failed with %q", task.key, statusMessage(got))
		case !task.again && st != "completed" && st != "failed":
			t.Errorf("task %s ended %s", task.key, st)
		}
	}
	t.Logf("chaos: tasks ended %v; %d retry-safe re-runs after a lease expiry", ended, reruns)
}
