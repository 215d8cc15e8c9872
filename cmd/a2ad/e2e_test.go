package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/rs/zerolog"
)

const exampleCatalog = "../../examples/catalog.yaml"

// startMain runs the real server on a random loopback port.
func startMain(tb testing.TB, mod func(*Config)) *Main {
	tb.Helper()
	cfg := testConfig(filepath.Join(tb.TempDir(), "a2ad.db"))
	if mod != nil {
		mod(&cfg)
	}
	m := openMain(tb, &Main{Config: cfg, Logger: zerolog.Nop()})
	closeAtEnd(tb, m)
	return m
}

// testConfig serves the example catalogue and the store file at store on
// random loopback ports (never the fixed default ones), with a short
// shutdown grace.
func testConfig(store string) Config {
	cfg := DefaultConfig()
	cfg.Catalog = exampleCatalog
	cfg.Listen = "127.0.0.1:0"
	cfg.AdminListen = "127.0.0.1:0"
	cfg.Store = store
	cfg.ShutdownGrace = 2 * time.Second
	return cfg
}

// openMain validates m's Config and opens m.
func openMain(tb testing.TB, m *Main) *Main {
	tb.Helper()
	if err := m.Config.Validate(); err != nil {
		tb.Fatal(err)
	}
	if err := m.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return m
}

// closeAtEnd closes m when the test ends.
func closeAtEnd(tb testing.TB, m *Main) {
	tb.Cleanup(func() {
		if err := m.Close(); err != nil {
			tb.Error(err)
		}
	})
}

func officialClient(tb testing.TB, baseURL string) *a2aclient.Client {
	tb.Helper()
	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, baseURL)
	if err != nil {
		tb.Fatalf("a2a-go resolver: %v", err)
	}
	client, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		tb.Fatalf("a2a-go NewFromCard: %v", err)
	}
	tb.Cleanup(func() { _ = client.Destroy() })
	return client
}

// startSleep asks client, without blocking, for demo::sleep of seconds
// and returns the task, which must not have ended yet.
func startSleep(tb testing.TB, client *a2aclient.Client, seconds float64) *a2a.Task {
	tb.Helper()
	no := false
	res, err := client.SendMessage(context.Background(), &a2a.MessageSendParams{
		Message: skillMessage("demo::sleep", map[string]any{"seconds": seconds}),
		Config:  &a2a.MessageSendConfig{Blocking: &no},
	})
	if err != nil {
		tb.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State.Terminal() {
		tb.Fatalf("non-blocking send returned a %s task", task.Status.State)
	}
	return task
}

func skillMessage(skill string, input map[string]any) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"skill": skill, "input": input}})
}

func TestOfficialClientSendGetCancel(t *testing.T) {
	m := startMain(t, nil)
	ctx := context.Background()
	client := officialClient(t, "http://"+m.Addr())

	card, err := client.GetAgentCard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if card.URL != m.BaseURL()+"/a2a" || !card.Capabilities.Streaming || !card.Capabilities.PushNotifications {
		t.Fatalf("card: url %s streaming %v push %v", card.URL, card.Capabilities.Streaming, card.Capabilities.PushNotifications)
	}

	// Blocking send of the builtin echo.
	res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: skillMessage("demo::echo", map[string]any{"message": "hi"})})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("send result %#v", res)
	}
	data, ok := task.Artifacts[0].Parts[0].(a2a.DataPart)
	if !ok || data.Data["message"] != "hi" {
		t.Fatalf("artifact part %#v", task.Artifacts[0].Parts[0])
	}

	// Get, with and without history.
	got, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted || len(got.History) != 1 {
		t.Fatalf("GetTask = %+v, %v", got, err)
	}
	zero := 0
	if got, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID, HistoryLength: &zero}); err != nil || len(got.History) != 0 {
		t.Fatalf("GetTask historyLength 0: %v, %d messages", err, len(got.History))
	}

	// The exec backend, named in text.
	res, err = client.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "text::wordcount one two three"})})
	if err != nil {
		t.Fatal(err)
	}
	wc := res.(*a2a.Task)
	if wc.Status.State != a2a.TaskStateCompleted || wc.Artifacts[0].Parts[0].(a2a.DataPart).Data["words"] != float64(3) {
		t.Fatalf("wordcount: %+v", wc)
	}

	// Non-blocking sleep, then cancel it.
	sleeping := startSleep(t, client, 30)
	canceled, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: sleeping.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask = %+v, %v", canceled, err)
	}
	// A second cancel, and an unknown id, are errors the client reports.
	if _, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: sleeping.ID}); err == nil || !strings.Contains(err.Error(), "cannot be canceled") {
		t.Fatalf("second cancel: %v", err)
	}
	if _, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: "no-such-task"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("unknown task: %v", err)
	}
}

// rpc posts one JSON-RPC request and returns the decoded response.
func rpc(tb testing.TB, baseURL, method string, params any) map[string]any {
	tb.Helper()
	resp, err := http.Post(baseURL+"/a2a", "application/json", bytes.NewReader(rpcBody(method, params)))
	return jsonAnswer(tb, resp, err)
}

// jsonAnswer decodes the JSON object in the body of resp, the answer to a
// request that returned err.
func jsonAnswer(tb testing.TB, resp *http.Response, err error) map[string]any {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		tb.Fatal(err)
	}
	return out
}

// rpcBody is a JSON-RPC request for method with params.
func rpcBody(method string, params any) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	return b
}

// roundTrip sends req with hc (nil: the default client) and returns the
// response and its body, read in full.
func roundTrip(tb testing.TB, hc *http.Client, req *http.Request) (*http.Response, []byte) {
	tb.Helper()
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp, b
}

// httpGet GETs url and returns the response and its body.
func httpGet(tb testing.TB, url string) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return roundTrip(tb, nil, req)
}

// postURL posts the JSON body to url with hc (nil: the default client),
// adding header, and returns the response and its body. It gives up after
// ten seconds.
func postURL(tb testing.TB, hc *http.Client, url string, body []byte, header http.Header) (*http.Response, []byte) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	return roundTrip(tb, hc, req)
}

func sendParams(msgID, skill string, input any, blocking bool) map[string]any {
	return map[string]any{
		"message": map[string]any{
			"kind": "message", "messageId": msgID, "role": "user",
			"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"skill": skill, "input": input}}},
		},
		"configuration": map[string]any{"blocking": blocking},
	}
}

func resultTask(tb testing.TB, resp map[string]any) map[string]any {
	tb.Helper()
	r, ok := resp["result"].(map[string]any)
	if !ok {
		tb.Fatalf("no result: %v", resp)
	}
	return r
}

func state(task map[string]any) string {
	return task["status"].(map[string]any)["state"].(string)
}

// TestDuplicateSendsOverHTTPCallTheBackendOnce sends one message many
// times at once, through the real server, to a real HTTP backend.
func TestDuplicateSendsOverHTTPCallTheBackendOnce(t *testing.T) {
	var calls atomic.Int64
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.Copy(w, r.Body)
	}))
	defer backend.Close()
	dir := t.TempDir()
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, fmt.Sprintf(`functions:
  - id: orders::place
    metadata: {"a2a.expose": true}
    http: {url: %q}
`, backend.URL))
	m := startMain(t, func(c *Config) { c.Catalog = catalog })
	base := "http://" + m.Addr()

	const n = 20
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Go(func() {
			resp := rpc(t, base, "message/send", sendParams("order-1", "orders::place", map[string]any{"sku": "a"}, true))
			task := resultTask(t, resp)
			if state(task) != "completed" {
				t.Errorf("duplicate %d: state %s", i, state(task))
			}
			ids[i] = task["id"].(string)
		})
	}
	time.Sleep(200 * time.Millisecond)
	close(release)
	wg.Wait()
	for i := range n {
		if ids[i] != ids[0] {
			t.Fatalf("duplicate %d got task %s, want %s", i, ids[i], ids[0])
		}
	}
	if c := calls.Load(); c != 1 {
		t.Fatalf("backend called %d times, want 1", c)
	}
	// The same messageId with another message is refused, and runs nothing.
	resp := rpc(t, base, "message/send", sendParams("order-1", "orders::place", map[string]any{"sku": "b"}, true))
	e := resp["error"].(map[string]any)
	if e["code"] != float64(-32602) || e["message"] != "messageId reused with a different message" {
		t.Fatalf("reused messageId: %v", e)
	}
	if c := calls.Load(); c != 1 {
		t.Fatalf("backend called %d times after a refused message", c)
	}
}

func putFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// putScript writes an executable script at path.
func putScript(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		tb.Fatal(err)
	}
}

// crashSetup skips the test under -short, as it builds and kills the real
// binary; it writes catalogText to a catalogue in a new directory and
// returns its path and that of a store beside it.
func crashSetup(t *testing.T, catalogText string) (catalog, store string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	dir := t.TempDir()
	catalog = filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, catalogText)
	return catalog, filepath.Join(dir, "a2ad.db")
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the real a2ad binary once per test run.
func binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "a2ad-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "a2ad")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binPath
}

// process is a running a2ad binary.
type process struct {
	cmd   *exec.Cmd
	base  string
	admin string // the admin listener's base URL
	logs  *bytes.Buffer
	mu    *sync.Mutex
}

// startBinary runs the binary on store and waits until it serves.
func startBinary(tb testing.TB, catalog, store string, extra ...string) *process {
	tb.Helper()
	args := append([]string{"serve", "--catalog", catalog, "--store", store, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--log-level", "debug"}, extra...)
	p, ready := launch(tb, args...)
	select {
	case p.base = <-ready:
	case <-time.After(20 * time.Second):
		p.mu.Lock()
		defer p.mu.Unlock()
		tb.Fatalf("a2ad did not start:\n%s", p.logs)
	}
	return p
}

// launch starts the binary with args without waiting for it; ready yields
// its base URL once it serves (p.admin is set by then). It keeps the
// binary's log in p.logs and kills it when the test ends.
func launch(tb testing.TB, args ...string) (p *process, ready <-chan string) {
	tb.Helper()
	cmd := exec.Command(binary(tb), args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p = &process{cmd: cmd, logs: new(bytes.Buffer), mu: new(sync.Mutex)}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	base := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			var entry struct {
				Message string `json:"message"`
				BaseURL string `json:"base_url"`
				Admin   string `json:"admin_listen"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Message == "a2ad serving" {
				p.admin = "http://" + entry.Admin
				base <- entry.BaseURL
			}
		}
	}()
	return p, base
}

// terminate sends the binary SIGTERM and returns the error of its exit;
// it fails the test if the binary still runs after within.
func (p *process) terminate(tb testing.TB, within time.Duration) error {
	tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(within):
		tb.Fatalf("a2ad still running %v after SIGTERM", within)
		return nil
	}
}

func (p *process) kill(tb testing.TB) {
	tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	_ = p.cmd.Wait()
}

func waitTaskState(tb testing.TB, base, id, want string) map[string]any {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		task := resultTask(tb, rpc(tb, base, "tasks/get", map[string]any{"id": id}))
		if state(task) == want {
			return task
		}
		if time.Now().After(deadline) {
			tb.Fatalf("task %s is %s, want %s", id, state(task), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func statusMessage(task map[string]any) string {
	msg, _ := task["status"].(map[string]any)["message"].(map[string]any)
	if msg == nil {
		return ""
	}
	return msg["parts"].([]any)[0].(map[string]any)["text"].(string)
}

// TestCrashRecovery runs the real binary, SIGKILLs it while tasks run, and
// restarts it on the same file: no task is lost or stuck; the one that is
// not retry-safe fails with its reason, the retry-safe one runs again, and
// message ids stay idempotent across the restart.
func TestCrashRecovery(t *testing.T) {
	catalog, store := crashSetup(t, `functions:
  - id: work::once
    metadata: {"a2a.expose": true}
    builtin: sleep
  - id: work::again
    metadata: {"a2a.expose": true}
    retry_safe: true
    builtin: sleep
  - id: demo::echo
    metadata: {"a2a.expose": true}
    builtin: echo
`)
	p := startBinary(t, catalog, store)

	done := resultTask(t, rpc(t, p.base, "message/send", sendParams("m-done", "demo::echo", map[string]any{"x": 1}, true)))
	once := resultTask(t, rpc(t, p.base, "message/send", sendParams("m-once", "work::once", map[string]any{"seconds": 60}, false)))
	again := resultTask(t, rpc(t, p.base, "message/send", sendParams("m-again", "work::again", map[string]any{"seconds": 1}, false)))
	waitTaskState(t, p.base, once["id"].(string), "working")
	waitTaskState(t, p.base, again["id"].(string), "working")
	p.kill(t)

	p2 := startBinary(t, catalog, store)
	failed := waitTaskState(t, p2.base, once["id"].(string), "failed")
	if got := statusMessage(failed); got != "interrupted: server restarted" {
		t.Fatalf("interrupted task's reason %q", got)
	}
	rerun := waitTaskState(t, p2.base, again["id"].(string), "completed")
	if arts, _ := rerun["artifacts"].([]any); len(arts) != 1 {
		t.Fatalf("rerun task artifacts: %v", rerun["artifacts"])
	}
	if got := resultTask(t, rpc(t, p2.base, "tasks/get", map[string]any{"id": done["id"]})); state(got) != "completed" {
		t.Fatalf("completed task after restart: %s", state(got))
	}
	// Idempotency survives the restart: the same message returns the same task.
	dup := resultTask(t, rpc(t, p2.base, "message/send", sendParams("m-once", "work::once", map[string]any{"seconds": 60}, true)))
	if dup["id"] != once["id"] || state(dup) != "failed" {
		t.Fatalf("resent message after restart: task %v state %s", dup["id"], state(dup))
	}
}

// TestStoreHeldByAnotherProcess starts a second server on a store the
// first holds: it fails with a clear error, not a hang.
func TestStoreHeldByAnotherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	dir := t.TempDir()
	store := filepath.Join(dir, "a2ad.db")
	startBinary(t, exampleCatalog, store)
	start := time.Now()
	out, err := exec.Command(binary(t), "serve", "--catalog", exampleCatalog, "--store", store,
		"--listen", "127.0.0.1:0", "--store-lock-timeout", "300ms").CombinedOutput()
	if err == nil {
		t.Fatal("second server started on a held store")
	}
	if !strings.Contains(string(out), "store file is in use by another process") {
		t.Fatalf("error output: %s", out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("second server took %s to give up", d)
	}
}

// TestGracefulShutdown: calls running at shutdown finish within the grace
// period and their blocking senders get the result; past the grace
// period, senders get the task as it stands and new calls are refused.
func TestGracefulShutdown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grace   time.Duration
		seconds float64
		want    string
	}{
		{"finishes within grace", 5 * time.Second, 0.5, "completed"},
		{"grace runs out", 300 * time.Millisecond, 30, "working"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(filepath.Join(t.TempDir(), "a2ad.db"))
			cfg.ShutdownGrace = tc.grace
			m := openMain(t, &Main{Config: cfg, Logger: zerolog.Nop()})
			base := "http://" + m.Addr()
			got := make(chan map[string]any, 1)
			go func() {
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send",
					"params": sendParams("m1", "demo::sleep", map[string]any{"seconds": tc.seconds}, true)})
				var out map[string]any
				if resp, err := http.Post(base+"/a2a", "application/json", bytes.NewReader(body)); err == nil {
					_ = json.NewDecoder(resp.Body).Decode(&out)
					resp.Body.Close()
				}
				got <- out
			}()
			time.Sleep(150 * time.Millisecond) // the call is running
			start := time.Now()
			if err := m.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if d := time.Since(start); d > tc.grace+2*time.Second {
				t.Fatalf("Close took %s with a grace of %s", d, tc.grace)
			}
			select {
			case resp := <-got:
				if resp == nil {
					t.Fatal("blocking sender got no answer")
				}
				if s := state(resultTask(t, resp)); s != tc.want {
					t.Fatalf("blocking sender got %s, want %s", s, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("blocking sender never got an answer")
			}
		})
	}
}
