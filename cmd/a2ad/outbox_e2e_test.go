package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// keyedRPC posts one JSON-RPC call with a key through client and returns
// the decoded response and how long it took.
func keyedRPC(tb testing.TB, client *http.Client, base, key, method string, params any) (map[string]any, time.Duration) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/a2a", bytes.NewReader(rpcBody(method, params)))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	start := time.Now()
	resp, raw := testkit.RoundTrip(tb, client, req)
	took := time.Since(start)
	var out map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil {
		tb.Fatalf("%s: HTTP %d %s", method, resp.StatusCode, raw)
	}
	return out, took
}

// TestPushOutboxHoldsUnderAnAnswerLoop reproduces issue 13 item 1 against
// the real binary, scaled down (150 answers of 512 bytes instead of 500
// of 10 KiB, so that it runs in seconds): one caller keeps a task looping
// through input-required with 10 webhooks aimed at a loopback port that
// refuses connections. Before the fix every answer queued 10 copies of
// the whole task (its history grows with each answer), so this loop left
// 1,501 deliveries and a 195 MB file, every poll decoded them all, and
// shutdown waited for the poll (measured with this test on the old code:
// echo p99 212 ms, SIGTERM 1.75 s; at 500 answers, 60 s and over 4 min).
// Now the outbox keeps one delivery per webhook, the file stays small,
// another caller's echo stays fast, and SIGTERM ends the server at once.
func TestPushOutboxHoldsUnderAnAnswerLoop(t *testing.T) {
	skipShort(t, "runs the binary through a few hundred answers")
	const (
		answers  = 150
		webhooks = 10
		echoes   = 200
	)
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	mallory := mustAppendKey(t, keys, "mallory", "partner")
	acme := mustAppendKey(t, keys, "acme", "partner")
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, `functions:
  - id: demo::ask
    metadata: {"a2a.expose": true, "a2a.tier": "partner"}
    builtin: ask
  - id: demo::echo
    metadata: {"a2a.expose": true, "a2a.tier": "partner"}
    builtin: echo
`)
	// A loopback port nothing listens on: every attempt is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/hook"
	ln.Close()

	t.Setenv("A2AD_PUSH_ALLOW", pushAllowLoopback)
	store := filepath.Join(dir, "a2ad.db")
	// --max-history 0: the loop is longer than the history cap, which
	// is not what this test is about.
	p := startBinary(t, catalog, store, "--keys", keys, "--rate", "0", "--log-level", "info", "--max-history", "0")
	client := &http.Client{Timeout: 30 * time.Second}
	call := func(key, method string, params any) map[string]any {
		t.Helper()
		out, _ := keyedRPC(t, client, p.base, key, method, params)
		return out
	}

	// acme's echo before mallory's task and its webhooks exist, to judge
	// it by with the backlog (see measureDegradation).
	echo := func(prefix string) []time.Duration {
		var lat []time.Duration
		for i := range echoes {
			out, took := keyedRPC(t, client, p.base, acme, "message/send", sendParams(fmt.Sprintf("%s-%d", prefix, i), "demo::echo", map[string]any{"n": i}, true))
			if s := state(resultTask(t, out)); s != "completed" {
				t.Fatalf("%s echo %d: state %s", prefix, i, s)
			}
			lat = append(lat, took)
		}
		return lat
	}
	base := echo("before")
	task := resultTask(t, call(mallory, "message/send", pushSendParams("loop-0", "demo::ask", map[string]any{}, true,
		map[string]any{"id": "w0", "url": refused})))
	id := task["id"].(string)
	for i := 1; i < webhooks; i++ {
		resultTask(t, call(mallory, "tasks/pushNotificationConfig/set", map[string]any{"taskId": id,
			"pushNotificationConfig": map[string]any{"id": fmt.Sprintf("w%d", i), "url": refused}}))
	}
	question := strings.Repeat("q", 512)
	loopStart := time.Now()
	for i := 1; i <= answers; i++ {
		// No answer: ask asks again, and the task is input-required anew.
		msg := map[string]any{"message": map[string]any{
			"kind": "message", "messageId": fmt.Sprintf("loop-%d", i), "role": "user", "taskId": id,
			"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"question": question}}},
		}}
		if got := resultTask(t, call(mallory, "message/send", msg)); state(got) != "input-required" {
			t.Fatalf("answer %d: state %s, want input-required", i, state(got))
		}
	}

	t.Logf("%d answers took %v", answers, time.Since(loopStart))
	// The outbox holds at most one delivery per webhook.
	code, raw, list := getDeadLetters(t, p.admin, "")
	if code != http.StatusOK {
		t.Fatalf("dead letters: HTTP %d %s", code, raw)
	}
	if list.OutboxDepth < 1 || list.OutboxDepth > webhooks {
		t.Fatalf("outbox holds %d deliveries after %d answers, want 1..%d (one per webhook)", list.OutboxDepth, answers, webhooks)
	}

	// Another caller's echo is not held up by the backlog.
	g := measureDegradation(base, echo("after"))
	t.Logf("after %d answers: outbox %d, store %d bytes; acme's echo: %v", answers, list.OutboxDepth, fileSize(t, store), g)
	if g.degraded() {
		t.Errorf("the push backlog slowed acme's echo down: %v", g)
	}

	// SIGTERM ends the server within a couple of seconds.
	start := time.Now()
	if err := p.terminate(t, 10*time.Second); err != nil {
		t.Fatalf("a2ad exited with %v after SIGTERM", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("SIGTERM took %v, want under 1s", d)
	}
	t.Logf("SIGTERM took %v", time.Since(start))

	// The file stays small: the task itself (its history of 150 questions
	// and as many answers), the echoes, and no copy of it per delivery;
	// a2ad allocates the file up to 16 MiB ahead.
	if size := fileSize(t, store); size > 32<<20 {
		t.Errorf("store is %d bytes after %d answers, want under 32 MiB", size, answers)
	}
	r, err := boltstore.Check(store, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		t.Fatalf("store check: %q", problems(r))
	}
	for _, b := range r.Buckets {
		if (b.Name == "outbox" || b.Name == "pending" || b.Name == "due") && b.Keys > webhooks {
			t.Errorf("bucket %s holds %d keys, want at most %d", b.Name, b.Keys, webhooks)
		}
	}
}

// problems lists a report's problems as strings.
func problems(r *boltstore.Report) []string {
	var out []string
	for _, p := range r.Problems {
		out = append(out, p.String())
	}
	return out
}
