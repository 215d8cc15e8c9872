package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/internal/testkit"
)

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
	skipShort(t, "runs the real binary")
	dir := t.TempDir()
	store := filepath.Join(dir, "a2ad.db")
	startBinary(t, exampleCatalog, store)
	start := time.Now()
	out, err := exec.Command(binary(t), "serve", "--catalog", exampleCatalog, "--store", store,
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store-lock-timeout", "300ms").CombinedOutput()
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
// period, senders get the task as it stands and new calls are refused,
// and the log says which calls the shutdown cut.
func TestGracefulShutdown(t *testing.T) {
	const cut = `"error":"shutdown cut 1 running call (demo::sleep: 1); their tasks are resumed at the next start or by another replica","message":"grace period over with calls running"`
	for _, tc := range []struct {
		name    string
		grace   time.Duration
		seconds float64
		want    string
		cut     bool
	}{
		{"finishes within grace", 5 * time.Second, 0.5, "completed", false},
		{"grace runs out", 300 * time.Millisecond, 30, "working", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(filepath.Join(t.TempDir(), "a2ad.db"))
			cfg.ShutdownGrace = tc.grace
			var log testkit.SyncBuffer
			m := openMain(t, &Main{Config: cfg, Logger: zerolog.New(&log)})
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
			eventually(t, 10*time.Second, "the call to run", func() bool {
				_, metrics := getStatus(t, "http://"+m.AdminAddr()+"/metrics")
				return strings.Contains(metrics, `a2ad_calls_running{function="demo::sleep"} 1`)
			})
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
			if got := strings.Contains(log.String(), cut); got != tc.cut {
				t.Errorf("the log has the line of the cut call: %v, want %v\n%s", got, tc.cut, log.String())
			}
		})
	}
}
