package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// The lease rule against real replicas and a real PostgreSQL: a call a
// replica runs is never run twice at once, and never failed "replica lost"
// while it runs to its end, whatever the outage (one replica cut off,
// the whole database down, longer or shorter than the ttl).

// attempt is one call a timedBackend received.
type attempt struct {
	start, end time.Time
	completed  bool // it ran to its end and answered
}

// timedBackend records the start and end of each attempt, by key; an
// attempt sleeps the input's ms, or ends when its caller gives up.
type timedBackend struct {
	mu       sync.Mutex
	attempts map[string][]*attempt
}

func newTimedBackend(t *testing.T) (*timedBackend, string) {
	b := &timedBackend{attempts: map[string][]*attempt{}}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	return b, srv.URL
}

func (b *timedBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Key string
		MS  int
	}
	// The whole body read, the server ends r's context when its client
	// goes (a replica stopped its call, or died).
	body, err := io.ReadAll(r.Body)
	if err != nil || json.Unmarshal(body, &in) != nil || in.Key == "" {
		http.Error(w, "no key", http.StatusBadRequest)
		return
	}
	a := &attempt{start: time.Now()}
	b.mu.Lock()
	b.attempts[in.Key] = append(b.attempts[in.Key], a)
	b.mu.Unlock()
	select {
	case <-time.After(time.Duration(in.MS) * time.Millisecond):
	case <-r.Context().Done():
		b.mu.Lock()
		a.end = time.Now()
		b.mu.Unlock()
		return
	}
	b.mu.Lock()
	a.end, a.completed = time.Now(), true
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"key":%q}`, in.Key)
}

// check returns what went wrong with key's attempts: two at once, or a
// task failed "replica lost" whose call ran to its end.
func (b *timedBackend) check(key, st, msg string) []string {
	return b.checkBut(key, st, msg, nil)
}

// span is a time from and to.
type span struct{ from, to time.Time }

// checkBut is check, except that a call that completed within one of
// excused may have been failed "replica lost": while its replica was cut
// off from the store for longer than twice the ttl (no other replica can
// tell a replica cut off from a dead one, and one that cannot reach the
// store cannot store the result it has), or just before it was killed.
func (b *timedBackend) checkBut(key, st, msg string, excused []span) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	as := slices.Clone(b.attempts[key])
	slices.SortFunc(as, func(x, y *attempt) int { return x.start.Compare(y.start) })
	var bad []string
	for i := 1; i < len(as); i++ {
		if prev := as[i-1]; prev.end.IsZero() || prev.end.After(as[i].start) {
			bad = append(bad, fmt.Sprintf("%s: attempts %d and %d ran at once (%s)", key, i, i+1, spans(as)))
		}
	}
	completed := slices.ContainsFunc(as, func(a *attempt) bool {
		return a.completed && !slices.ContainsFunc(excused, func(e span) bool {
			return !a.end.Before(e.from) && !a.end.After(e.to)
		})
	})
	if st == "failed" && msg == "interrupted: replica lost" && completed {
		bad = append(bad, fmt.Sprintf("%s: failed %q while its call ran to its end (%s)", key, msg, spans(as)))
	}
	return bad
}

// spans says when each of as ran.
func spans(as []*attempt) string {
	out := ""
	for _, a := range as {
		out += fmt.Sprintf("[%s-%s %v]", a.start.Format("15:04:05.000"), a.end.Format("15:04:05.000"), a.completed)
	}
	return out
}

func (b *timedBackend) count(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.attempts[key])
}

// leaseCatalog is a catalogue of two HTTP functions: work::again,
// retry-safe, at the URL again, and work::once, not, at the URL once.
func leaseCatalog(t *testing.T, again, once string) string {
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, fmt.Sprintf(`functions:
  - id: work::again
    metadata: {"a2a.expose": true}
    retry_safe: true
    timeout: 60s
    http: {url: %s}
  - id: work::once
    metadata: {"a2a.expose": true}
    timeout: 60s
    http: {url: %s}
`, again, once))
	return catalog
}

// leaseCall is a call a test sent, and the replica it sent it to.
type leaseCall struct {
	key, fn, id string
	base        string
}

// sendLease sends key's call of fn (ms long) to base, not blocking, and
// returns it.
func sendLease(t *testing.T, base, key, fn string, ms int) leaseCall {
	t.Helper()
	got := resultTask(t, rpc(t, base, "message/send", sendParams(key, fn, map[string]any{"key": key, "ms": ms}, false)))
	return leaseCall{key: key, fn: fn, id: got["id"].(string), base: base}
}

// waitReady waits until p's /readyz answers 200.
func waitReady(t *testing.T, p *process, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(p.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not ready after %v", p.base, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkLeaseCalls waits for each call's task to end, read on base, and
// fails the test for overlapping attempts, for a task failed "replica
// lost" whose call completed, and, if strict, for any call that did not
// complete at its first attempt.
func checkLeaseCalls(t *testing.T, base string, backend *timedBackend, calls []leaseCall, strict bool) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	ended := map[string]int{}
	for _, c := range calls {
		var got map[string]any
		for {
			got = resultTask(t, rpc(t, base, "tasks/get", map[string]any{"id": c.id}))
			if st := state(got); st == "completed" || st == "failed" || st == "canceled" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s (%s) is still %s", c.id, c.key, state(got))
			}
			time.Sleep(50 * time.Millisecond)
		}
		st, msg := state(got), statusMessage(got)
		ended[st]++
		for _, bad := range backend.check(c.key, st, msg) {
			t.Error(bad)
		}
		if n := backend.count(c.key); c.fn == "work::once" && n > 1 {
			t.Errorf("%s, not retry-safe, ran %d times", c.key, n)
		}
		if strict && (st != "completed" || backend.count(c.key) != 1) {
			t.Errorf("%s: %s (%q) after %d attempts, want completed after 1", c.key, st, msg, backend.count(c.key))
		}
	}
	t.Logf("tasks ended %v", ended)
}

const leaseTTL = "3s"

// TestLeaseReplicaCutOffAndBack: replica A, behind a proxy, loses its
// connections to PostgreSQL for longer than the ttl (4 s at 3 s) while a
// call runs on it; as soon as it is ready again it gets new calls. No call
// runs twice at once and none is failed "replica lost" while it
// completes; the calls A takes once back are A's to finish.
func TestLeaseReplicaCutOffAndBack(t *testing.T) {
	dsn := pgtest.Schema(t)
	backend, url := newTimedBackend(t)
	catalog := leaseCatalog(t, url, url)
	proxy := pgtest.NewProxy(t, dsn)
	flags := []string{"--lease-ttl", leaseTTL, "--rate", "0"}
	b := startReplicas(t, catalog, dsn, 1, flags...)[0]
	a := startBinary(t, catalog, proxy.DSN(dsn), flags...)

	calls := []leaseCall{sendLease(t, a.base, "during-again", "work::again", 6000)}
	time.Sleep(500 * time.Millisecond)
	proxy.Cut()
	time.Sleep(4 * time.Second)
	proxy.Restore()
	waitReady(t, a, 20*time.Second)
	calls = append(calls,
		sendLease(t, a.base, "after-again", "work::again", 3000),
		sendLease(t, a.base, "after-once", "work::once", 3000))
	checkLeaseCalls(t, b.base, backend, calls, false)
	for _, c := range calls[1:] {
		if n := backend.count(c.key); n != 1 {
			t.Errorf("%s, sent once A was ready again, ran %d times, want 1", c.key, n)
		}
	}
}

// TestLeaseReplicaCutOffAndBackBlocking is issue 26's reproduction as
// written: replica A, behind a proxy, loses its connections to
// PostgreSQL for 4 s at a 3 s ttl; as soon as it is ready again it gets
// a blocking call of a 3 s function, one retry-safe and one not, at once.
// Each blocking caller gets its call's completed result, the backend saw
// one attempt of each, and no task was failed "replica lost" (B, which
// saw A's lease lapse, adopted neither).
func TestLeaseReplicaCutOffAndBackBlocking(t *testing.T) {
	dsn := pgtest.Schema(t)
	backend, url := newTimedBackend(t)
	catalog := leaseCatalog(t, url, url)
	proxy := pgtest.NewProxy(t, dsn)
	flags := []string{"--lease-ttl", leaseTTL, "--rate", "0"}
	b := startReplicas(t, catalog, dsn, 1, flags...)[0]
	a := startBinary(t, catalog, proxy.DSN(dsn), flags...)

	proxy.Cut()
	time.Sleep(4 * time.Second)
	proxy.Restore()
	waitReady(t, a, 20*time.Second)
	fns := map[string]string{"blocking-again": "work::again", "blocking-once": "work::once"}
	answers := map[string]blockingAnswer{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for key, fn := range fns {
		wg.Go(func() {
			task, err := sendBlockingLease(a.base, key, fn, 3000)
			mu.Lock()
			defer mu.Unlock()
			answers[key] = blockingAnswer{task, err}
		})
	}
	wg.Wait()
	var calls []leaseCall
	for _, key := range slices.Sorted(maps.Keys(fns)) {
		ans := answers[key]
		if ans.err != nil {
			t.Fatalf("%s: blocking send: %v", key, ans.err)
		}
		if st, out := state(ans.task), artifactData(ans.task); st != "completed" || out["key"] != key {
			t.Errorf("%s: the blocking caller got %s (%q) with %v, want completed with {\"key\": %q}", key, st, statusMessage(ans.task), out, key)
		}
		id, _ := ans.task["id"].(string)
		calls = append(calls, leaseCall{key: key, fn: fns[key], id: id, base: a.base})
	}
	// Read on B: the stored outcome, each after exactly one attempt.
	checkLeaseCalls(t, b.base, backend, calls, true)
}

// blockingAnswer is what a blocking send answered: its task, or why not.
type blockingAnswer struct {
	task map[string]any
	err  error
}

// sendBlockingLease sends key's call of fn (ms long) to base, blocking,
// and returns the task it answers with; it may run off the test's
// goroutine, so it returns its errors.
func sendBlockingLease(base, key, fn string, ms int) (map[string]any, error) {
	body := rpcBody("message/send", sendParams(key, fn, map[string]any{"key": key, "ms": ms}, true))
	resp, err := http.Post(base+"/a2a", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Result map[string]any
		Error  map[string]any
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
	}
	if out.Result == nil {
		return nil, fmt.Errorf("HTTP %d: no result: %v", resp.StatusCode, out.Error)
	}
	return out.Result, nil
}

// artifactData is the data of the first part of task's first artifact
// (0.3 shapes), nil if it has none.
func artifactData(task map[string]any) map[string]any {
	arts, _ := task["artifacts"].([]any)
	if len(arts) == 0 {
		return nil
	}
	parts, _ := arts[0].(map[string]any)["parts"].([]any)
	if len(parts) == 0 {
		return nil
	}
	data, _ := parts[0].(map[string]any)["data"].(map[string]any)
	return data
}

// TestLeaseDatabaseOutage: PostgreSQL (a private server) stops for longer
// than the ttl under two replicas running calls; as soon as both are
// ready again each gets new calls. No call runs twice at once, none is
// failed "replica lost" while it completes, and the calls sent after the
// outage each complete at their first attempt: an outage every replica
// shared proves none of them dead.
func TestLeaseDatabaseOutage(t *testing.T) {
	skipShort(t, "runs a private PostgreSQL server and two binaries")
	pg := pgtest.StartPrivate(t)
	backend, url := newTimedBackend(t)
	catalog := leaseCatalog(t, url, url)
	flags := []string{"--lease-ttl", leaseTTL, "--rate", "0"}
	rs := startReplicas(t, catalog, pg.DSN(), 2, flags...)

	var during []leaseCall
	for i, r := range rs {
		during = append(during, sendLease(t, r.base, fmt.Sprintf("during-%d", i), "work::again", 6000))
	}
	time.Sleep(500 * time.Millisecond)
	pg.Stop()
	time.Sleep(4 * time.Second)
	pg.Start()
	var after []leaseCall
	for i, r := range rs {
		waitReady(t, r, 20*time.Second)
		after = append(after,
			sendLease(t, r.base, fmt.Sprintf("after-again-%d", i), "work::again", 3000),
			sendLease(t, r.base, fmt.Sprintf("after-once-%d", i), "work::once", 3000))
	}
	checkLeaseCalls(t, rs[0].base, backend, during, false)
	checkLeaseCalls(t, rs[0].base, backend, after, true)
}

// TestLeaseShortSharedOutage: every replica loses PostgreSQL for two
// thirds of the ttl (2 s at 3 s) while 12 calls run: each of them
// completes at its first attempt, as do calls sent right after.
func TestLeaseShortSharedOutage(t *testing.T) {
	dsn := pgtest.Schema(t)
	backend, url := newTimedBackend(t)
	catalog := leaseCatalog(t, url, url)
	proxy := pgtest.NewProxy(t, dsn)
	flags := []string{"--lease-ttl", leaseTTL, "--rate", "0"}
	rs := startReplicas(t, catalog, proxy.DSN(dsn), 3, flags...)

	var calls []leaseCall
	for i := range 12 {
		fn := []string{"work::again", "work::once"}[i%2]
		calls = append(calls, sendLease(t, rs[i%3].base, fmt.Sprintf("during-%d", i), fn, 4000))
	}
	time.Sleep(300 * time.Millisecond)
	proxy.Cut()
	time.Sleep(2 * time.Second)
	proxy.Restore()
	for i, r := range rs {
		waitReady(t, r, 20*time.Second)
		calls = append(calls, sendLease(t, r.base, fmt.Sprintf("after-%d", i), "work::again", 2000))
	}
	checkLeaseCalls(t, rs[0].base, backend, calls, true)
}
