//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/tasks/boltstore"
)

// quotaScript is chattyScript that writes its pid to $1 first, and the
// pid of the sleep it waits on after its notes to $1.sleep: the call's
// processes, to see them stopped.
const quotaScript = "#!/bin/sh\ncat >/dev/null\n" + `echo $$ >"$1.tmp" && mv "$1.tmp" "$1"
` + chattyNotes + `sleep 60 &
echo $! >"$1.sleep"
wait
echo '{}'
`

// quotaWords are the -32055 words of a caller at its quota of 256 KiB;
// the number is what it stores.
var quotaWords = regexp.MustCompile(`^Storage quota exceeded: (\d+) of 262144 bytes stored; wait for old tasks to expire or ask the operator for more$`)

// TestQuotaStopsARunningCallOnTheBinary is issue 25 item 1 on the real
// binary (TestQuotaStopsARunningCallOverHTTP runs it in the test's
// process): a key with --quota-bytes 256 KiB calls an exec function that
// reports 1.6 MB of progress, then sleeps a minute. The blocking send is
// answered with the task failed in the -32055 words (a2ad.failure
// quota_exceeded) long before --blocking-timeout; the call's processes
// are gone; the key's next task is refused with -32055 naming what it
// stores, within its quota and one small write, as the store says after
// the stop; the audit and the metrics say quota_exceeded; and a restart
// on the same store serves the failed task as it was. Before, every
// report was stored (the key past its quota six times over) and the call
// slept on.
func TestQuotaStopsARunningCallOnTheBinary(t *testing.T) {
	skipShort(t, "runs the real binary and a child process")
	const quota = 256 << 10
	dir := t.TempDir()
	script, pids := filepath.Join(dir, "chatty.sh"), filepath.Join(dir, "pids")
	putScript(t, script, quotaScript)
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, fmt.Sprintf(`functions:
  - id: exec::chatty
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    timeout: 90s
    exec: {argv: [%q, %q]}
`, script, pids))
	keys, auditLog, store := filepath.Join(dir, "keys.yaml"), filepath.Join(dir, "audit.log"), filepath.Join(dir, "a2ad.db")
	key := mustAppendKey(t, keys, "acme", "partner")
	flags := []string{"--keys", keys, "--audit-log", auditLog, "--quota-bytes", strconv.Itoa(quota), "--blocking-timeout", "5s"}
	p := startBinary(t, catalog, store, flags...)
	h := http.Header{"Authorization": {"Bearer " + key}}

	start := time.Now()
	resp, body := postRaw(t, p.base, rpcBody("message/send", sendParams("chatty-1", "exec::chatty", map[string]any{}, true)), h)
	task := resultTask(t, decodeAnswer(t, resp, body))
	if took := time.Since(start); took >= 5*time.Second {
		t.Errorf("the send was answered after %v, at --blocking-timeout: the call was not stopped", took)
	} else {
		t.Logf("the send was answered after %v", took)
	}
	failedText := statusMessage(task)
	if state(task) != "failed" || !quotaWords.MatchString(failedText) || failureOf(task) != "quota_exceeded" {
		t.Errorf("task: %s %.100q (a2ad.failure %q), want failed with the quota's words, quota_exceeded", state(task), failedText, failureOf(task))
	}
	if running := waitGone(callPIDs(t, pids)...); len(running) > 0 {
		t.Errorf("processes %v of the call still run after its task failed", running)
		for _, pid := range running {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}

	// The key's next task is refused, naming what the key stores.
	pad := map[string]any{"pad": strings.Repeat("x", 32<<10)}
	resp, body = postRaw(t, p.base, rpcBody("message/send", sendParams("chatty-2", "exec::chatty", pad, true)), h)
	code, msg, data := answerError(t, resp.StatusCode, body)
	var used int64 = -1
	if m := quotaWords.FindStringSubmatch(msg); m != nil {
		used, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if code != -32055 || used < 0 || data["quota"] != "bytes" || data["limit"] != float64(quota) || data["used"] != float64(used) {
		t.Fatalf("the key's next send: %s\nwant -32055 in the quota's words", body)
	}
	t.Logf("acme stores %d bytes of its quota of %d", used, quota)
	if used > quota+2048 {
		t.Errorf("acme stores %d bytes under a quota of %d", used, quota)
	}

	checkQuotaStopReported(t, p, auditLog)
	if err := p.terminate(t, 15*time.Second); err != nil {
		t.Fatalf("a2ad exited with %v", err)
	}

	// What the store holds for acme is what the refusal said.
	s, err := boltstore.Open(store, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.Usage(t.Context(), "acme")
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil || u.Bytes != used || u.Tasks != 1 {
		t.Errorf("the store: acme's usage %+v (%v), want 1 task of %d bytes", u, err, used)
	}

	// Restarted on the same store, the binary serves the failed task.
	p2 := startBinary(t, catalog, store, flags...)
	resp, body = postRaw(t, p2.base, rpcBody("tasks/get", map[string]any{"id": task["id"]}), h)
	again := resultTask(t, decodeAnswer(t, resp, body))
	if state(again) != "failed" || statusMessage(again) != failedText || failureOf(again) != "quota_exceeded" {
		t.Errorf("after a restart: %s %.100q (a2ad.failure %q), want failed %.100q", state(again), statusMessage(again), failureOf(again), failedText)
	}
}

// checkQuotaStopReported checks what p reports of the quota's two
// refusals: a call stopped (its send audited failed, and logged), then a
// send refused with -32055, both quota_exceeded in the audit and the
// metrics.
func checkQuotaStopReported(t *testing.T, p *process, auditLog string) {
	t.Helper()
	sends := func() (recs []map[string]any, n int) {
		for _, r := range auditFile(t, auditLog) {
			if r["rpc_method"] == "message/send" {
				recs = append(recs, r)
			}
		}
		return recs, len(recs)
	}
	recs, _ := waitRecords(t, sends, 2) // written as the calls end, after their answers
	var audited []string
	for _, r := range recs {
		audited = append(audited, fmt.Sprint(r["outcome"], "/", r["reason"], " ", r["state"], " ", r["code"]))
	}
	if want := []string{"client_error/quota_exceeded failed <nil>", "client_error/quota_exceeded <nil> -32055"}; fmt.Sprint(audited) != fmt.Sprint(want) {
		t.Errorf("audit of the sends: %q, want %q", audited, want)
	}
	if got := scrapeAdmin(t, p.admin).value("a2ad_requests_total", "transport", "jsonrpc", "method", "message/send",
		"outcome", "client_error", "reason", "quota_exceeded"); got != 2 {
		t.Errorf("a2ad_requests_total of sends refused for the quota = %v, want 2", got)
	}
	if !strings.Contains(p.logText(), `"message":"call stopped: its output would pass the caller's storage quota"`) {
		t.Error("the log does not say why the call was stopped")
	}
}

// decodeAnswer decodes a JSON-RPC answer that came with HTTP 200.
func decodeAnswer(tb testing.TB, resp *http.Response, body []byte) map[string]any {
	tb.Helper()
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("HTTP %d: %v: %.300s", resp.StatusCode, err, body)
	}
	return out
}

// failureOf is the failure class (a2ad.failure) of a task's status
// message, "" for none.
func failureOf(task map[string]any) string {
	msg, _ := task["status"].(map[string]any)["message"].(map[string]any)
	meta, _ := msg["metadata"].(map[string]any)
	f, _ := meta["a2ad.failure"].(string)
	return f
}

// callPIDs reads the pids quotaScript wrote at path: its own, and its
// sleep's if it got that far.
func callPIDs(t *testing.T, path string) []int {
	t.Helper()
	var out []int
	for _, f := range []string{path, path + ".sleep"} {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) && f != path {
			continue
		}
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || perr != nil {
			t.Fatalf("pid file %s: %q %v %v", f, b, err, perr)
		}
		out = append(out, pid)
	}
	return out
}
