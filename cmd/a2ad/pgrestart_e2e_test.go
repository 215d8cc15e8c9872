//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// unavailableAnswer is the answer to a request that needs the store while
// the database is away.
const unavailableAnswer = `{"jsonrpc":"2.0","id":1,"error":{"code":-32057,"message":"Task store unavailable; retry later"}}`

// restartLoad is what the clients of TestPostgresRestartedUnderLoad saw.
type restartLoad struct {
	mu          sync.Mutex
	acked       []string // the tasks sends were answered with
	unavailable int      // 503 -32057 answers
	others      []string // any other answer, or a transport error
	lastOK      time.Time
}

// send sends one message to base and files the answer.
func (l *restartLoad) send(hc *http.Client, base, msgID, skill string, input any, blocking bool) {
	resp, err := hc.Post(base+"/a2a", "application/json", bytes.NewReader(rpcBody("message/send", sendParams(msgID, skill, input, blocking))))
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	var answer struct {
		Result *struct{ ID string } `json:"result"`
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.others = append(l.others, fmt.Sprintf("%s: %v", msgID, err))
	case resp.StatusCode == http.StatusServiceUnavailable && string(bytes.TrimSpace(body)) == unavailableAnswer:
		l.unavailable++
	case resp.StatusCode == http.StatusOK && json.Unmarshal(body, &answer) == nil && answer.Result != nil && answer.Result.ID != "":
		l.acked = append(l.acked, answer.Result.ID)
		l.lastOK = time.Now()
	default:
		l.others = append(l.others, fmt.Sprintf("%s: HTTP %d %s", msgID, resp.StatusCode, body))
	}
}

// TestPostgresRestartedUnderLoad runs two real a2ad replicas on a
// PostgreSQL server of the test's own, with 8 clients sending blocking
// echoes and slower calls running, and stops the server (pg_ctl stop -m
// fast) for 3 s: meanwhile /readyz answers 503 and sends 503 with
// -32057. Once the server is started again, the replicas serve again by
// themselves (/readyz 200, sends answered), and by the end every task a
// send was answered with exists on both replicas and completed; no
// answer was anything else.
func TestPostgresRestartedUnderLoad(t *testing.T) {
	skipShort(t, "runs a PostgreSQL server and two real binaries")
	pg := pgtest.StartPrivate(t)
	// The clients all come from 127.0.0.1: one anonymous caller, whom the
	// default rate limit and cap on calls would hold back.
	rs := startReplicas(t, exampleCatalog, pg.DSN(), 2, "--rate", "0", "--max-calls-per-caller", "0")
	load := &restartLoad{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			hc := &http.Client{Timeout: 30 * time.Second}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				base := rs[(c+i)%2].base
				if i%4 == 3 { // a slower call, left running
					load.send(hc, base, fmt.Sprintf("c%d-%d", c, i), "demo::sleep", map[string]any{"seconds": 0.5}, false)
				} else {
					load.send(hc, base, fmt.Sprintf("c%d-%d", c, i), "demo::echo", map[string]any{"n": i}, true)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	time.Sleep(3 * time.Second)
	// Calls that run through the outage.
	for i := range 4 {
		load.send(http.DefaultClient, rs[i%2].base, fmt.Sprintf("across-%d", i), "demo::sleep", map[string]any{"seconds": 1.5}, false)
	}
	before := len(load.snapshot().acked)
	pg.Stop()
	stopped := time.Now()
	for i, r := range rs {
		eventually(t, 5*time.Second, fmt.Sprintf("replica %d's /readyz to turn 503", i), func() bool {
			code, body := getStatus(t, r.admin+"/readyz")
			return code == http.StatusServiceUnavailable && body == `{"reason":"store unreachable","status":"not_ready"}`+"\n"
		})
	}
	time.Sleep(time.Until(stopped.Add(3 * time.Second)))
	during := load.snapshot()
	pg.Start()
	started := time.Now()
	for i, r := range rs {
		eventually(t, 15*time.Second, fmt.Sprintf("replica %d's /readyz to turn 200", i), func() bool {
			code, _ := getStatus(t, r.admin+"/readyz")
			return code == http.StatusOK
		})
	}
	ready := time.Since(started)
	eventually(t, 15*time.Second, "a send answered after the restart", func() bool { return load.snapshot().lastOK.After(started) })
	answered := load.snapshot().lastOK.Sub(started)
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()

	end := load.snapshot()
	t.Logf("%d tasks acknowledged (%d before the stop), %d sends answered 503 -32057 (%d by the restart); after the start, /readyz 200 in %v, a send answered in %v",
		len(end.acked), before, end.unavailable, during.unavailable, ready, answered)
	if during.unavailable == 0 {
		t.Error("no send was answered 503 -32057 while the server was stopped")
	}
	for i, o := range end.others {
		if i == 5 {
			t.Errorf("... and %d more", len(end.others)-5)
			break
		}
		t.Errorf("a send answered neither a task nor 503 -32057: %s", o)
	}
	checkAllCompleted(t, rs, end.acked)
}

// snapshot copies what the clients saw so far.
func (l *restartLoad) snapshot() restartLoad {
	l.mu.Lock()
	defer l.mu.Unlock()
	return restartLoad{acked: append([]string(nil), l.acked...), unavailable: l.unavailable,
		others: append([]string(nil), l.others...), lastOK: l.lastOK}
}

// checkAllCompleted waits until each task of ids is listed completed on
// every replica of rs.
func checkAllCompleted(t *testing.T, rs []*process, ids []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i, r := range rs {
		for {
			states := listStates(t, r.base)
			pending := ""
			for _, id := range ids {
				switch st := states[id]; st {
				case "completed":
				case "failed", "canceled", "rejected":
					task := resultTask(t, rpc(t, r.base, "tasks/get", map[string]any{"id": id}))
					t.Fatalf("task %s on replica %d ended %s: %q", id, i, st, statusMessage(task))
				default:
					pending = id
				}
			}
			if pending == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s on replica %d: %q, want completed", pending, i, states[pending])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// listStates lists every task on the replica at base, by id.
func listStates(t *testing.T, base string) map[string]string {
	t.Helper()
	states := map[string]string{}
	token := ""
	for {
		params := map[string]any{"page_size": 100}
		if token != "" {
			params["page_token"] = token
		}
		res := resultTask(t, rpc(t, base, "tasks/list", params))
		for _, task := range res["tasks"].([]any) {
			task := task.(map[string]any)
			states[task["id"].(string)] = state(task)
		}
		if token, _ = res["next_page_token"].(string); token == "" {
			return states
		}
	}
}
