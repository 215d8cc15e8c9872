package tasks_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
)

// counted is an HTTP function backend that counts its calls by path. The
// first call of a path blocks until its request ends (its caller died)
// or release is closed; later calls answer at once.
type counted struct {
	mu      sync.Mutex
	calls   map[string]int
	seen    map[string][]http.Header // each call's headers, by path
	started chan string              // each call's path, as it arrives
	release chan struct{}
}

func newCounted(tb testing.TB) (*counted, *httptest.Server) {
	c := &counted{calls: map[string]int{}, seen: map[string][]http.Header{}, started: make(chan string, 16), release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server ends r's context when its client dies
		c.mu.Lock()
		c.calls[r.URL.Path]++
		c.seen[r.URL.Path] = append(c.seen[r.URL.Path], r.Header.Clone())
		first := c.calls[r.URL.Path] == 1
		c.mu.Unlock()
		select {
		case c.started <- r.URL.Path:
		default: // more calls than the test waits for: it counts them
		}
		if first {
			select {
			case <-r.Context().Done():
				return
			case <-c.release:
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"path":"` + r.URL.Path + `"}`))
	}))
	tb.Cleanup(func() {
		c.releaseAll()
		srv.Close()
	})
	return c, srv
}

// releaseAll answers the calls that block, once.
func (c *counted) releaseAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.release:
	default:
		close(c.release)
	}
}

func (c *counted) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[path]
}

const testLeaseTTL = 300 * time.Millisecond

// TestReplicaLostCallsAreTakenOver: three replicas share one schema;
// replica A dies (no more heartbeats, nothing settled) while it runs a
// retry-safe call and one that is not. Once A's lease lapses, another
// replica runs the retry-safe call again, exactly once between B and C,
// and fails the other with "interrupted: replica lost"; B's own running
// call is never touched, by B's peers or by a replica that starts. The
// same holds with the replicas' clocks an hour apart: leases are timed by
// the database's clock, and each replica measures only durations.
func TestReplicaLostCallsAreTakenOver(t *testing.T) {
	for _, skew := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("skew=%v", skew), func(t *testing.T) { replicaLostCallsAreTakenOver(t, skew) })
	}
}

func replicaLostCallsAreTakenOver(t *testing.T, skew time.Duration) {
	dsn := pgtest.Schema(t)
	backend, srv := newCounted(t)
	httpFn := func(id, path string, retrySafe bool) *functions.Function {
		return fn(t, id, &functions.HTTPBackend{URL: srv.URL + path}, func(f *functions.Function) { f.RetrySafe = retrySafe })
	}
	fns := []*functions.Function{httpFn("demo::retry", "/retry", true), httpFn("demo::once", "/once", false),
		httpFn("demo::live", "/live", false)}
	clock := func(d time.Duration) tasks.Config {
		return tasks.Config{LeaseTTL: testLeaseTTL, Now: func() time.Time { return time.Now().Add(d) }}
	}
	a, b := openReplica(t, dsn, true, clock(skew), fns...), openReplica(t, dsn, true, clock(-skew), fns...)

	send := func(r *replica, msgID, skill string) string {
		t.Helper()
		task, _, err := r.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg(msgID, skill, `{}`)))
		if err != nil {
			t.Fatal(err)
		}
		return task.ID
	}
	retry, once := send(a, "m-retry", "demo::retry"), send(a, "m-once", "demo::once")
	live := send(b, "m-live", "demo::live")
	for range 3 {
		<-backend.started // each first call is running
	}
	awaitState(t, a, retry, a2a.StateWorking)
	awaitState(t, a, once, a2a.StateWorking)

	a.svc.Crash()
	// C starts while A's lease still holds: at its start it touches
	// nothing (a failed task would never be working again).
	c := openReplica(t, dsn, true, clock(2*skew), fns...)
	awaitState(t, c, once, a2a.StateWorking)

	done := awaitState(t, b, retry, a2a.StateCompleted)
	if len(done.Artifacts) != 1 || string(done.Artifacts[0].Parts[0].Data) != `{"path":"/retry"}` {
		t.Fatalf("the retry-safe call's task: %+v", done)
	}
	failed := awaitState(t, c, once, a2a.StateFailed)
	if got := statusText(failed); got != "interrupted: replica lost" {
		t.Fatalf("the call that is not retry-safe failed with %q, want %q", got, "interrupted: replica lost")
	}
	// Another lease period: nothing more runs.
	time.Sleep(3 * testLeaseTTL)
	if n := backend.count("/retry"); n != 2 {
		t.Errorf("the retry-safe function ran %d times, want 2 (on A, then once after A was lost)", n)
	}
	if n := backend.count("/once"); n != 1 {
		t.Errorf("the function that is not retry-safe ran %d times, want 1", n)
	}
	// The re-run on the replica that took over is the same call: same
	// key, next attempt.
	backend.mu.Lock()
	seen := backend.seen["/retry"]
	backend.mu.Unlock()
	if len(seen) != 2 || seen[0].Get("Idempotency-Key") == "" || seen[1].Get("Idempotency-Key") != seen[0].Get("Idempotency-Key") ||
		seen[0].Get("A2A-Attempt") != "1" || seen[1].Get("A2A-Attempt") != "2" || seen[1].Get("A2A-Task-Id") != retry {
		t.Errorf("the retry-safe call's runs were told %v", seen)
	}
	if task := awaitState(t, c, live, a2a.StateWorking); statusText(task) != "" {
		t.Fatalf("B's running task was touched: %q", statusText(task))
	}
	backend.releaseAll()
	awaitState(t, c, live, a2a.StateCompleted)
	if n := backend.count("/live"); n != 1 {
		t.Errorf("B's function ran %d times, want 1", n)
	}
}
