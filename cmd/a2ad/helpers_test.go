package main

// The helpers the end-to-end tests share: a server in process (startMain,
// or startKeyed with a keys file) or the real binary (startBinary), and
// requests and their answers.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/config"
	"github.com/a2ad/a2ad/internal/testkit"
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
	cfg := config.Default()
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

// httpGet GETs url and returns the response and its body.
func httpGet(tb testing.TB, url string) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return testkit.RoundTrip(tb, nil, req)
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
	return testkit.RoundTrip(tb, hc, req)
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

func putFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// skipShort skips the test under -short; why says what makes it long
// (most run the real binary).
func skipShort(tb testing.TB, why string) {
	tb.Helper()
	if testing.Short() {
		tb.Skip(why)
	}
}

// pipe is an os.Pipe, both ends closed when the test ends.
func pipe(tb testing.TB) (r, w *os.File) {
	tb.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// listenLoopback listens on a random loopback port until the test ends:
// an address that is taken.
func listenLoopback(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	return ln
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
	skipShort(t, "builds and kills the real binary")
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
		// -buildvcs=auto: stamp the revision where git can, whatever GOFLAGS say.
		out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", binPath, ".").CombinedOutput()
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
	return startProgram(tb, binary(tb), catalog, store, extra...)
}

// startProgram is startBinary of the a2ad binary at bin.
func startProgram(tb testing.TB, bin, catalog, store string, extra ...string) *process {
	tb.Helper()
	args := append([]string{"serve", "--catalog", catalog, "--store", store, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--log-level", "debug"}, extra...)
	p, ready := launchProgram(tb, bin, args...)
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
	return launchProgram(tb, binary(tb), args...)
}

// launchProgram is launch of the a2ad binary at bin.
func launchProgram(tb testing.TB, bin string, args ...string) (p *process, ready <-chan string) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
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
	return p.exit(tb, within, "after SIGTERM")
}

// exit waits for the binary to exit and returns the error of its exit; it
// fails the test if the binary still runs after within. since says what
// should have ended it, for the message.
func (p *process) exit(tb testing.TB, within time.Duration, since string) error {
	tb.Helper()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(within):
		tb.Fatalf("a2ad still running %v %s", within, since)
		return nil
	}
}

// awaitNil waits for the one error done sends: the test fails if it is not
// nil, and stops if none comes within. what names the call, for the
// messages.
func awaitNil(tb testing.TB, done <-chan error, within time.Duration, what string) {
	tb.Helper()
	select {
	case err := <-done:
		if err != nil {
			tb.Errorf("%s: %v", what, err)
		}
	case <-time.After(within):
		tb.Fatalf("%s did not return within %v", what, within)
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

// keyed is a server with a keys file: acme is a partner, ops is internal.
type keyed struct {
	m       *Main
	base    string
	keys    string // the keys file
	audit   string // the audit log file
	oplog   *testkit.SyncBuffer
	clock   *testkit.Clock
	acme    string // secrets
	ops     string
	bob     string // a second partner
	secrets []string
}

// startKeyed runs the real server with a keys file of two callers and the
// audit trail in its own file.
func startKeyed(tb testing.TB, mod func(*Config)) *keyed {
	tb.Helper()
	dir := tb.TempDir()
	k := &keyed{
		keys:  filepath.Join(dir, "keys.yaml"),
		audit: filepath.Join(dir, "audit.log"),
		oplog: &testkit.SyncBuffer{},
		clock: testkit.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)),
	}
	k.acme = mustAppendKey(tb, k.keys, "acme", "partner")
	k.ops = mustAppendKey(tb, k.keys, "ops", "internal")
	k.bob = mustAppendKey(tb, k.keys, "bob", "partner")
	k.secrets = []string{k.acme, k.ops, k.bob}
	cfg := testConfig(filepath.Join(dir, "a2ad.db"))
	cfg.Keys = k.keys
	cfg.AuditLog = k.audit
	cfg.PushAllow = "127.0.0.1/32"
	if mod != nil {
		mod(&cfg)
	}
	k.m = openMain(tb, &Main{Config: cfg, Logger: zerolog.New(k.oplog), now: k.clock.Now})
	closeAtEnd(tb, k.m)
	k.base = "http://" + k.m.Addr()
	return k
}

// anonymousPartners lets callers without a key in, as partners.
func anonymousPartners(c *Config) {
	c.AllowAnonymous = true
	c.AnonymousTiers = "partner"
}

// mustAppendKey adds a key for callerID with tiers to the keys file at
// path and returns its secret.
func mustAppendKey(tb testing.TB, path, callerID string, tiers ...string) string {
	tb.Helper()
	nk, err := callers.AppendKey(path, callerID, tiers, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	return nk.Secret
}

// call posts one JSON-RPC request with the given key ("" for none) and
// returns the status, the headers and the body.
func (k *keyed) call(tb testing.TB, key, method string, params any) (int, http.Header, []byte) {
	tb.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	resp, out := postRaw(tb, k.base, rpcBody(method, params), h)
	return resp.StatusCode, resp.Header, out
}

// ok calls and decodes a 200 answer.
func (k *keyed) ok(tb testing.TB, key, method string, params any) map[string]any {
	tb.Helper()
	status, _, body := k.call(tb, key, method, params)
	if status != http.StatusOK {
		tb.Fatalf("%s: HTTP %d: %s", method, status, body)
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		tb.Fatalf("%s: %v: %s", method, err, body)
	}
	return out
}

func cardSkills(tb testing.TB, card map[string]any) []string {
	tb.Helper()
	ids := []string{}
	for _, s := range card["skills"].([]any) {
		ids = append(ids, s.(map[string]any)["id"].(string))
	}
	return ids
}

func getCard(tb testing.TB, base string) map[string]any {
	tb.Helper()
	resp, err := http.Get(base + "/.well-known/agent-card.json")
	return jsonAnswer(tb, resp, err)
}

// auditRecords reads the audit log file.
func (k *keyed) auditRecords(tb testing.TB) []map[string]any {
	tb.Helper()
	return auditFile(tb, k.audit)
}

// auditFile reads the audit records of the audit log at path.
func auditFile(tb testing.TB, path string) []map[string]any {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	return jsonLines(tb, f, "audit")
}

// jsonLines reads r's lines as JSON objects; a line that is not one fails
// the test, named by what ("audit", "log").
func jsonLines(tb testing.TB, r io.Reader, what string) []map[string]any {
	tb.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			tb.Fatalf("%s line is not JSON: %v: %s", what, err, sc.Text())
		}
		out = append(out, e)
	}
	return out
}
