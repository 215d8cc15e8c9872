package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// TestLongIDsRefused is issue 25's attack on the real binary, on both
// stores: a 33 KB messageId (and a 40 KB push config id, a 33 KB
// contextId, a long REST path id) is refused on every binding with
// -32602 naming the field (HTTP 400 INVALID_ARGUMENT over REST, gRPC
// INVALID_ARGUMENT), and nothing is stored. Before the caps the bbolt
// store took the messageId into its log, failed every checkpoint from
// then on, and refused to start again; PostgreSQL answered -32603. After
// the attack the server stops cleanly and a restart serves the task sent
// before it.
func TestLongIDsRefused(t *testing.T) {
	skipShort(t, "runs the real binary")
	t.Run("bbolt", func(t *testing.T) { longIDsAttack(t, filepath.Join(t.TempDir(), "a2ad.db")) })
	t.Run("postgres", func(t *testing.T) { longIDsAttack(t, pgtest.Schema(t)) })
}

func longIDsAttack(t *testing.T, store string) {
	p := startBinary(t, exampleCatalog, store, "--grpc-listen", "127.0.0.1:0")
	before := resultTask(t, rpc(t, p.base, "message/send", sendParams("ids-before", "demo::echo", map[string]any{"message": "hi"}, true)))
	long := strings.Repeat("m", 33<<10)
	const wantMsg = "Invalid parameters: /message/messageId: must be at most 256 bytes"

	// JSON-RPC, both versions.
	checkRPCError := func(what string, answer map[string]any, want string) {
		t.Helper()
		e, _ := answer["error"].(map[string]any)
		if e == nil || e["code"] != float64(-32602) || e["message"] != want {
			t.Errorf("%s: answer %.300v, want -32602 %q", what, answer, want)
		}
	}
	checkRPCError("0.3 message/send", rpc(t, p.base, "message/send", sendParams(long, "demo::echo", map[string]any{"message": "hi"}, true)), wantMsg)
	// 500 KB that do not compress: PostgreSQL's index refused them (-32603).
	noise := make([]byte, 250<<10)
	_, _ = rand.Read(noise)
	checkRPCError("0.3 message/send, 500 KB", rpc(t, p.base, "message/send", sendParams(hex.EncodeToString(noise), "demo::echo", map[string]any{"message": "hi"}, true)), wantMsg)
	withCtx := sendParams("ids-ctx", "demo::echo", map[string]any{"message": "hi"}, true)
	withCtx["message"].(map[string]any)["contextId"] = long
	checkRPCError("0.3 contextId", rpc(t, p.base, "message/send", withCtx), "Invalid parameters: /message/contextId: must be at most 256 bytes")
	withPush := sendParams("ids-push", "demo::echo", map[string]any{"message": "hi"}, true)
	withPush["configuration"] = map[string]any{"pushNotificationConfig": map[string]any{"id": strings.Repeat("c", 40<<10), "url": "https://127.0.0.1:9/hook"}}
	checkRPCError("0.3 push config id", rpc(t, p.base, "message/send", withPush), "Invalid parameters: /configuration/pushNotificationConfig/id: must be at most 256 bytes")
	v1Send := `{"message":{"messageId":"` + long + `","role":"ROLE_USER","parts":[{"data":{"skill":"demo::echo","input":{"message":"hi"}}}]}}`
	_, body := postURL(t, nil, p.base+"/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`+v1Send+`}`), http.Header{"A2A-Version": {"1.0"}})
	var answer map[string]any
	if err := json.Unmarshal(body, &answer); err != nil {
		t.Fatal(err)
	}
	checkRPCError("1.0 SendMessage", answer, wantMsg)

	// HTTP+JSON: 400 INVALID_ARGUMENT, for a body's id and a path's.
	checkREST := func(what string, resp *http.Response, body []byte, want string) {
		t.Helper()
		var st struct {
			Error struct {
				Code    int
				Status  string
				Message string
			}
		}
		_ = json.Unmarshal(body, &st)
		if resp.StatusCode != http.StatusBadRequest || st.Error.Code != 400 || st.Error.Status != "INVALID_ARGUMENT" || st.Error.Message != want {
			t.Errorf("%s: HTTP %d %.300s, want 400 INVALID_ARGUMENT %q", what, resp.StatusCode, body, want)
		}
	}
	resp, body := postURL(t, nil, p.base+"/a2a/rest/message:send", []byte(v1Send), nil)
	checkREST("REST message:send", resp, body, wantMsg)
	resp, body = postURL(t, nil, p.base+"/a2a/rest/tasks/"+url.PathEscape(long)+":cancel", []byte(`{}`), nil)
	checkREST("REST cancel", resp, body, "Invalid parameters: /id: must be at most 256 bytes")
	resp, body = postURL(t, nil, p.base+"/a2a/rest/tasks/"+before["id"].(string)+"/pushNotificationConfigs",
		[]byte(`{"id":"`+strings.Repeat("c", 40<<10)+`","url":"https://127.0.0.1:9/hook"}`), nil)
	checkREST("REST push config create", resp, body, "Invalid parameters: /id: must be at most 256 bytes")

	// gRPC: INVALID_ARGUMENT with the same message.
	cl := dialGRPC(t, grpcListenOf(t, p))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cl.SendMessage(ctx, grpcEcho(t, long))
	if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || st.Message() != wantMsg {
		t.Errorf("gRPC SendMessage: %v, want INVALID_ARGUMENT %q", err, wantMsg)
	}

	// Nothing was stored: the one task is the one sent before.
	list := rpc(t, p.base, "tasks/list", map[string]any{})
	if res, _ := list["result"].(map[string]any); res == nil || res["total_size"] != float64(1) {
		t.Errorf("tasks/list after the attack: %.300v, want the one task sent before", list)
	}
	// The store still checkpoints and closes (bbolt failed both on a key
	// over 32 KiB), and a restart serves the task sent before.
	if err := p.terminate(t, 20*time.Second); err != nil {
		t.Fatalf("stopping after the attack: %v\n%s", err, p.logText())
	}
	q := startBinary(t, exampleCatalog, store)
	if got := resultTask(t, rpc(t, q.base, "tasks/get", map[string]any{"id": before["id"]})); state(got) != "completed" {
		t.Errorf("after a restart, the task sent before the attack: %v", got)
	}
}

// chattyNotes prints 200 progress notes of 8 KB each (1.6 MB).
const chattyNotes = `note=$(head -c 8000 /dev/zero | tr '\0' p)
i=1
while [ $i -le 200 ]; do
	printf '{"a2a.progress": "%d %s"}\n' $i "$note"
	i=$((i+1))
done
`

// chattyScript reports chattyNotes, then waits: a running call whose
// writes only a quota can stop.
const chattyScript = "#!/bin/sh\ncat >/dev/null\n" + chattyNotes + "sleep 60\necho '{}'\n"

// TestQuotaStopsARunningCallOverHTTP: on the real server, a key whose
// quota is 256 KiB calls a function that reports 1.6 MB of progress: the
// task fails with the -32055 words (a2ad.failure quota_exceeded), the
// call is stopped, the key's usage stays within its quota and one small
// write, and the audit record says quota_exceeded. Before, each report
// was stored: the key passed its quota six times over.
func TestQuotaStopsARunningCallOverHTTP(t *testing.T) {
	skipShort(t, "runs the real server and a child process")
	const quota = 256 << 10
	dir := t.TempDir()
	script := filepath.Join(dir, "chatty.sh")
	putScript(t, script, chattyScript)
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, `functions:
  - id: exec::chatty
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    timeout: 90s
    exec: {argv: ["`+script+`"]}
`)
	k := startKeyed(t, func(c *Config) {
		c.Catalog = catalog
		c.QuotaBytes = quota
	})
	start := time.Now()
	task := resultTask(t, k.ok(t, k.acme, "message/send", sendParams("chatty-1", "exec::chatty", map[string]any{}, true)))
	if took := time.Since(start); took > 5*time.Second { // postRaw gives up at 10 s; stopped, it takes well under 1
		t.Errorf("the call took %v: it was not stopped", took)
	}
	quotaRE := regexp.MustCompile(`^Storage quota exceeded: (\d+) of 262144 bytes stored; wait for old tasks to expire or ask the operator for more$`)
	if state(task) != "failed" || !quotaRE.MatchString(statusMessage(task)) {
		t.Fatalf("task: %s %q, want failed with the quota's words", state(task), statusMessage(task))
	}
	meta, _ := task["status"].(map[string]any)["message"].(map[string]any)["metadata"].(map[string]any)
	if meta["a2ad.failure"] != "quota_exceeded" {
		t.Errorf("failure class %v, want quota_exceeded", meta["a2ad.failure"])
	}
	u, err := boltOf(t, k.m).Usage(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if u.Bytes > quota+2048 {
		t.Errorf("acme stores %d bytes under a quota of %d", u.Bytes, quota)
	}
	var reasons []string
	for _, r := range k.auditRecords(t) {
		if r["rpc_method"] == "message/send" {
			reasons = append(reasons, fmt.Sprint(r["outcome"], "/", r["reason"]))
		}
	}
	if len(reasons) != 1 || reasons[0] != "client_error/quota_exceeded" {
		t.Errorf("audit of the send: %v, want client_error/quota_exceeded", reasons)
	}
}
