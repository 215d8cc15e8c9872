package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func getStatus(tb testing.TB, url string) (int, string) {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReadiness: /readyz answers on both listeners while a2ad takes work,
// and fails as soon as shutdown begins, while running calls finish.
func TestReadiness(t *testing.T) {
	m := startMain(t, func(c *Config) { c.ShutdownGrace = 5 * time.Second })
	base, admin := "http://"+m.Addr(), "http://"+m.AdminAddr()
	for _, u := range []string{base + "/readyz", admin + "/readyz"} {
		if code, body := getStatus(t, u); code != http.StatusOK || body != `{"status":"ready"}` {
			t.Fatalf("%s: %d %s", u, code, body)
		}
	}
	if code, body := getStatus(t, admin+"/healthz"); code != http.StatusOK || body != `{"status":"ok"}` {
		t.Fatalf("admin /healthz: %d %s", code, body)
	}
	// A blocking call keeps the shutdown in its grace period.
	done := make(chan struct{})
	go func() {
		defer close(done)
		rpc(t, base, "message/send", sendParams("r-1", "demo::sleep", map[string]any{"seconds": 1}, true))
	}()
	time.Sleep(100 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	eventually(t, 2*time.Second, "readyz to fail", func() bool {
		code, body := getStatus(t, admin+"/readyz")
		return code == http.StatusServiceUnavailable && body == `{"reason":"draining","status":"not_ready"}`+"\n"
	})
	<-done
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// TestDrain: SIGTERM while a slow call runs. Through the grace period the
// listener stays open: /readyz answers 503 and a new call gets HTTP 503
// with Retry-After and -32051, so that a load balancer retries it
// elsewhere; the log says what the drain waits for. The slow call
// completes for its blocking sender, and a2ad exits 0.
func TestDrain(t *testing.T) {
	skipShort(t, "runs the real binary")
	p := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"), "--shutdown-grace", "30s")
	slow := make(chan map[string]any, 1)
	go func() {
		var out map[string]any
		body := rpcBody("message/send", sendParams("slow", "demo::sleep", map[string]any{"seconds": 3}, true))
		if resp, err := http.Post(p.base+"/a2a", "application/json", bytes.NewReader(body)); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
		}
		slow <- out
	}()
	eventually(t, 10*time.Second, "the slow call to run", func() bool {
		_, metrics := getStatus(t, p.admin+"/metrics")
		return strings.Contains(metrics, `a2ad_calls_running{function="demo::sleep"} 1`)
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "/readyz to answer draining", func() bool {
		code, body := getStatus(t, p.base+"/readyz")
		return code == http.StatusServiceUnavailable && body == `{"reason":"draining","status":"not_ready"}`+"\n"
	})
	resp, err := http.Post(p.base+"/a2a", "application/json",
		bytes.NewReader(rpcBody("message/send", sendParams("late", "demo::echo", map[string]any{"message": "hi"}, true))))
	if err != nil {
		t.Fatalf("a new call during the grace period: %v", err)
	}
	late, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	const refused = `{"jsonrpc":"2.0","id":1,"error":{"code":-32051,"message":"Server is shutting down; retry later"}}`
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || string(late) != refused {
		t.Errorf("a new call during the grace period: HTTP %d, Retry-After %q, %s; want 503, 1, %s",
			resp.StatusCode, resp.Header.Get("Retry-After"), late, refused)
	}
	select {
	case ans := <-slow:
		if ans == nil || state(resultTask(t, ans)) != "completed" {
			t.Errorf("the slow call's blocking sender got %v, want a completed task", ans)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the slow call's blocking sender got no answer")
	}
	if err := p.exit(t, 20*time.Second, "after its last call ended"); err != nil {
		t.Errorf("a2ad exited with %v after the drain, want exit code 0", err)
	}
	p.mu.Lock()
	logs := p.logs.String()
	p.mu.Unlock()
	if !strings.Contains(logs, `"calls":1,"functions":{"demo::sleep":1},"grace_left":`) ||
		!strings.Contains(logs, `"message":"draining: waiting for running calls"`) {
		t.Errorf("the log does not say what the drain waits for:\n%s", logs)
	}
}

// opsCatalog is a small catalogue of builtins; extra is added to its
// function list.
func opsCatalog(extra string) string {
	return `functions:
  - id: demo::echo
    description: Returns its input unchanged.
    metadata: {"a2a.expose": true}
    retry_safe: true
    builtin: echo
  - id: demo::sleep
    metadata: {"a2a.expose": true}
    retry_safe: true
    timeout: 60s
    builtin: sleep
  - id: demo::sleep-once
    metadata: {"a2a.expose": true}
    timeout: 60s
    builtin: sleep
` + extra
}

const newFunction = `  - id: demo::new
    metadata: {"a2a.expose": true}
    builtin: echo
`

func cardETag(tb testing.TB, base string) string {
	tb.Helper()
	resp, err := http.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get("ETag")
}

func postReload(tb testing.TB, admin string) (int, map[string]any) {
	tb.Helper()
	resp, err := http.Post(admin+"/admin/v1/reload", "application/json", nil)
	r := jsonAnswer(tb, resp, err)
	return resp.StatusCode, r
}

// TestReloadUnderLoad swaps catalogues while clients keep calling: no
// request fails, a running task finishes on its definition, a broken
// catalogue changes nothing, and the card's ETag moves only with the
// card.
func TestReloadUnderLoad(t *testing.T) {
	cat := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, cat, opsCatalog(""))
	m := startMain(t, func(c *Config) { c.Catalog = cat; c.RatePerSecond = 0 })
	base, admin := "http://"+m.Addr(), "http://"+m.AdminAddr()

	running := resultTask(t, rpc(t, base, "message/send", sendParams("long", "demo::sleep", map[string]any{"seconds": 1.5}, false)))
	etag := cardETag(t, base)

	var (
		stop   atomic.Bool
		wg     sync.WaitGroup
		sent   atomic.Int64
		failed atomic.Int64
	)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				resp := rpc(t, base, "message/send", sendParams(fmt.Sprintf("load-%d-%d", w, i), "demo::echo", map[string]any{"i": i}, true))
				sent.Add(1)
				if r, ok := resp["result"].(map[string]any); !ok || state(r) != "completed" {
					failed.Add(1)
					t.Errorf("request failed during reloads: %v", resp)
				}
			}
		})
	}
	// Reload the same file: nothing changes, not even the ETag.
	if code, r := postReload(t, admin); code != http.StatusOK || r["catalog"].(map[string]any)["changed"] != false {
		t.Errorf("reload of the same file: %d %v", code, r)
	}
	if got := cardETag(t, base); got != etag {
		t.Errorf("ETag moved from %s to %s without a change", etag, got)
	}
	// Add a function, back and forth.
	for i := range 6 {
		extra := ""
		if i%2 == 0 {
			extra = newFunction
		}
		putFile(t, cat, opsCatalog(extra))
		if code, r := postReload(t, admin); code != http.StatusOK || r["catalog"].(map[string]any)["changed"] != true {
			t.Fatalf("reload %d: %d %v", i, code, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	putFile(t, cat, opsCatalog(newFunction))
	if code, _ := postReload(t, admin); code != http.StatusOK {
		t.Fatal("reload")
	}
	if got := cardETag(t, base); got == etag {
		t.Error("ETag unchanged although the card gained a skill")
	}
	if task := resultTask(t, rpc(t, base, "message/send", sendParams("new-1", "demo::new", map[string]any{}, true))); state(task) != "completed" {
		t.Errorf("demo::new after the reload: %s", state(task))
	}
	// A broken catalogue keeps the one in force and says why.
	putFile(t, cat, opsCatalog(newFunction)+"  - id: demo::broken\n    builtin: nosuch\n    timeout: -1s\n")
	code, r := postReload(t, admin)
	problems := r["catalog"].(map[string]any)["problems"].([]any)
	if code != http.StatusUnprocessableEntity || r["catalog"].(map[string]any)["reloaded"] != false || len(problems) != 2 {
		t.Errorf("broken catalogue: %d %v", code, r)
	}
	if task := resultTask(t, rpc(t, base, "message/send", sendParams("new-2", "demo::new", map[string]any{}, true))); state(task) != "completed" {
		t.Errorf("demo::new after a failed reload: %s", state(task))
	}
	stop.Store(true)
	wg.Wait()
	// The task that ran through every reload finished on its definition.
	if got := waitTaskState(t, base, running["id"].(string), "completed"); got == nil {
		t.Fatal("the long task did not complete")
	}
	t.Logf("%d requests during %d reloads, %d failed", sent.Load(), 9, failed.Load())
	if sent.Load() < 20 {
		t.Errorf("only %d requests during the reloads", sent.Load())
	}
}

// TestSIGTERMDuringLoad stops the real binary while clients send: every
// task a client got an answer for is, after a restart on the same store,
// finished or recovered, never lost.
func TestSIGTERMDuringLoad(t *testing.T) {
	dir := t.TempDir()
	cat := filepath.Join(dir, "catalog.yaml")
	putFile(t, cat, opsCatalog(""))
	store := filepath.Join(dir, "a2ad.db")
	p := startBinary(t, cat, store, "--shutdown-grace", "300ms", "--rate", "0")

	var (
		mu    sync.Mutex
		acked = map[string]string{} // task id → skill
		wg    sync.WaitGroup
		stop  atomic.Bool
	)
	skills := []string{"demo::echo", "demo::sleep", "demo::sleep-once"}
	for w := range 6 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				skill := skills[(w+i)%3]
				input := map[string]any{"seconds": 0.8}
				if skill == "demo::echo" {
					input = map[string]any{"i": i}
				}
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send",
					"params": sendParams(fmt.Sprintf("t-%d-%d", w, i), skill, input, skill == "demo::echo")})
				resp, err := http.Post(p.base+"/a2a", "application/json", bytes.NewReader(body))
				if err != nil {
					return // the server is gone
				}
				var out map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if r, ok := out["result"].(map[string]any); ok {
					mu.Lock()
					acked[r["id"].(string)] = skill
					mu.Unlock()
				}
			}
		})
	}
	// SIGTERM once some tasks are acknowledged (600 ms on a quiet machine;
	// longer on a loaded one, where a fixed wait left too few to check).
	time.Sleep(600 * time.Millisecond)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 10 {
			break
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("a2ad exited with %v", err)
	}
	stop.Store(true)
	wg.Wait()
	if len(acked) < 10 {
		t.Fatalf("only %d tasks acknowledged before SIGTERM", len(acked))
	}

	p2 := startBinary(t, cat, store, "--rate", "0")
	var completed, failedInterrupted int
	for id, skill := range acked {
		var task map[string]any
		eventually(t, 10*time.Second, "task "+id+" to settle", func() bool {
			resp := rpc(t, p2.base, "tasks/get", map[string]any{"id": id})
			r, ok := resp["result"].(map[string]any)
			if !ok {
				t.Fatalf("acknowledged task %s (%s) lost: %v", id, skill, resp)
			}
			task = r
			return state(r) == "completed" || state(r) == "failed"
		})
		switch {
		case state(task) == "completed":
			completed++
		case skill == "demo::sleep-once" && statusMessage(task) == "interrupted: server restarted":
			failedInterrupted++
		default:
			t.Errorf("task %s (%s) ended %s %q", id, skill, state(task), statusMessage(task))
		}
	}
	t.Logf("%d acknowledged tasks: %d completed, %d failed as interrupted (not retry-safe)", len(acked), completed, failedInterrupted)
}

// TestAdminRefusesBrowserPages: a page in the operator's browser can
// neither rebind a name to the admin listener nor post to it.
func TestAdminRefusesBrowserPages(t *testing.T) {
	m := startMain(t, nil)
	admin := "http://" + m.AdminAddr()
	get := func(path string, h http.Header, host string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, admin+path, nil)
		for k, v := range h {
			req.Header[k] = v
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tt := range []struct {
		name, path, host string
		h                http.Header
		code             int
		body             string
	}{
		{"plain", "/admin/v1/overview", "", nil, http.StatusOK, ""},
		{"localhost", "/admin/v1/overview", "localhost:8081", nil, http.StatusOK, ""},
		{"rebound name", "/admin/v1/overview", "evil.example:8081", nil, http.StatusForbidden,
			`{"message":"admin endpoints answer requests addressed to a loopback host (127.0.0.1, ::1 or localhost) only"}`},
		{"cross-site", "/admin/store/backup", "", http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden,
			`{"message":"admin endpoints refuse requests from web pages (an Origin header)"}`},
		{"probes answer anyone", "/readyz", "evil.example", nil, http.StatusOK, `{"status":"ready"}`},
		{"metrics answer anyone", "/metrics", "evil.example", nil, http.StatusOK, ""},
	} {
		code, body := get(tt.path, tt.h, tt.host)
		if code != tt.code || (tt.body != "" && strings.TrimSpace(body) != tt.body) {
			t.Errorf("%s: %d %s", tt.name, code, body)
		}
	}
}
