package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// TestPostgresLostWhileRunning runs the real binary on PostgreSQL through
// a proxy, and cuts the proxy: /readyz turns 503, a send gets HTTP 503
// and -32057, and a call running across the outage stores its result
// once the proxy is back. Then a2ad serves again, without a restart, and
// every task it acknowledged is there; a retried message finds its task.
func TestPostgresLostWhileRunning(t *testing.T) {
	dsn := pgtest.Schema(t)
	proxy := pgtest.NewProxy(t, dsn)
	p := startBinary(t, exampleCatalog, withPassword(t, proxy.DSN(dsn)))

	echo := resultTask(t, rpc(t, p.base, "message/send", sendParams("out-m1", "demo::echo", map[string]any{"n": 1}, true)))
	sleep := resultTask(t, rpc(t, p.base, "message/send", sendParams("out-m2", "demo::sleep", map[string]any{"seconds": 1}, false)))
	sleepID := sleep["id"].(string)
	waitTaskState(t, p.base, sleepID, "working")

	proxy.Cut()
	eventually(t, 5*time.Second, "/readyz to turn 503", func() bool {
		code, body := getStatus(t, p.admin+"/readyz")
		return code == http.StatusServiceUnavailable && body == `{"reason":"store unreachable","status":"not_ready"}`+"\n"
	})
	const want = `{"jsonrpc":"2.0","id":1,"error":{"code":-32057,"message":"Task store unavailable; retry later"}}`
	for _, m := range []struct {
		method string
		params any
	}{
		{"message/send", sendParams("out-m3", "demo::echo", map[string]any{"n": 3}, true)},
		{"tasks/get", map[string]any{"id": echo["id"]}},
	} {
		resp, body := postURL(t, nil, p.base+"/a2a", rpcBody(m.method, m.params), nil)
		if resp.StatusCode != http.StatusServiceUnavailable || string(body) != want {
			t.Fatalf("%s while the store is away: %d %s\nwant 503 %s", m.method, resp.StatusCode, body, want)
		}
	}
	// The sleep ends while the store is away: its result waits.
	eventually(t, 10*time.Second, "the result to wait for the store", func() bool {
		return strings.Contains(p.logText(), "the call's result is kept and stored again until it takes")
	})

	proxy.Restore()
	eventually(t, 5*time.Second, "/readyz to turn 200", func() bool {
		code, _ := getStatus(t, p.admin+"/readyz")
		return code == http.StatusOK
	})
	done := waitTaskState(t, p.base, sleepID, "completed")
	if arts, _ := done["artifacts"].([]any); len(arts) != 1 {
		t.Fatalf("the sleep's task has %d artifacts, want its result", len(arts))
	}
	again := resultTask(t, rpc(t, p.base, "message/send", sendParams("out-m1", "demo::echo", map[string]any{"n": 1}, true)))
	if again["id"] != echo["id"] || state(again) != "completed" {
		t.Fatalf("a retry of out-m1 = %v, want task %v", again["id"], echo["id"])
	}
	third := resultTask(t, rpc(t, p.base, "message/send", sendParams("out-m3", "demo::echo", map[string]any{"n": 3}, true)))
	if state(third) != "completed" {
		t.Fatalf("out-m3 once the store is back: %v", third)
	}
	list := resultTask(t, rpc(t, p.base, "tasks/list", map[string]any{"page_size": 10}))
	if n := len(list["tasks"].([]any)); n != 3 {
		b, _ := json.Marshal(list)
		t.Fatalf("tasks/list holds %d tasks, want 3 (echo, sleep, out-m3): %s", n, b)
	}
	if strings.Contains(p.logText(), dbPassword) {
		t.Fatal("the log shows the database password")
	}
}
