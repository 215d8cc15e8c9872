//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// hookMode is how a flakyHook answers.
type hookMode int

const (
	hookFail hookMode = iota // HTTP 500
	hookHold                 // hold the request until its sender dies
	hookOK                   // HTTP 200
)

// hookAttempt is one request a flakyHook got: the state of the task it
// reported, the status it was answered (0: its sender died first) and
// its A2AD-Delivery-Id.
type hookAttempt struct {
	state  string
	status int
	id     string
}

func (a hookAttempt) String() string { return fmt.Sprintf("%s:%d", a.state, a.status) }

// flakyHook is a webhook on 127.0.0.1 whose answer the test switches;
// it tells of a held request's source port on held.
type flakyHook struct {
	URL  string
	held chan int

	mu       sync.Mutex
	mode     hookMode
	attempts []hookAttempt
	okAt     []time.Time // when each 200 was answered
}

func newFlakyHook(t *testing.T) *flakyHook {
	h := &flakyHook{held: make(chan int, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read to the end, so that the server ends r's context when the
		// sender dies.
		body, _ := io.ReadAll(r.Body)
		var task struct {
			Status struct{ State string } `json:"status"`
		}
		_ = json.Unmarshal(body, &task)
		h.mu.Lock()
		mode := h.mode
		h.mu.Unlock()
		status := http.StatusOK
		switch mode {
		case hookFail:
			status = http.StatusInternalServerError
		case hookHold:
			_, port, _ := net.SplitHostPort(r.RemoteAddr)
			n, _ := strconv.Atoi(port)
			select {
			case h.held <- n:
			default:
			}
			select {
			case <-r.Context().Done():
				status = 0
			case <-time.After(20 * time.Second): // the test failed: let it end
				status = http.StatusServiceUnavailable
			}
		}
		h.mu.Lock()
		h.attempts = append(h.attempts, hookAttempt{task.Status.State, status, r.Header.Get("A2AD-Delivery-Id")})
		if status == http.StatusOK {
			h.okAt = append(h.okAt, time.Now())
		}
		h.mu.Unlock()
		if status != 0 {
			w.WriteHeader(status)
		}
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL + "/hook"
	return h
}

func (h *flakyHook) set(m hookMode) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mode = m
}

// seen returns the attempts so far, and the times of the 200s.
func (h *flakyHook) seen() ([]hookAttempt, []time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.attempts), slices.Clone(h.okAt)
}

// TestReplicasWebhookDelivererKilled sets, on replica B, a webhook of a
// task that runs on A, whose receiver fails (HTTP 500) until the
// delivery is being retried, then holds an attempt: the test SIGKILLs
// the replica that sends it (found by the connection's source port) and
// the receiver recovers. Within the lease's ttl and a few seconds,
// another replica sends the notification; then the task completes. Each
// notification the receiver acknowledged arrived exactly once, in
// order, and nothing was dead-lettered.
func TestReplicasWebhookDelivererKilled(t *testing.T) {
	dsn := pgtest.Schema(t)
	dir, catalog := execCatalog(t, "ask", askScript)
	hook := newFlakyHook(t)
	t.Setenv("A2AD_PUSH_ALLOW", pushAllowLoopback) // startBinary inherits it: --push-allow
	const ttl = time.Second
	rs := startReplicas(t, catalog, dsn, 3, "--lease-ttl", ttl.String())
	a, b := rs[0], rs[1]

	task := resultTask(t, rpc(t, a.base, "message/send", sendParams("m-ask", "exec::ask", map[string]any{}, false)))
	id := task["id"].(string)
	waitTaskState(t, b.base, id, "working")
	resultTask(t, rpc(t, b.base, "tasks/pushNotificationConfig/set", map[string]any{
		"taskId": id, "pushNotificationConfig": map[string]any{"url": hook.URL}}))
	putFile(t, filepath.Join(dir, "release"), "")
	waitTaskState(t, b.base, id, "input-required")
	eventually(t, 10*time.Second, "two failed attempts", func() bool {
		seen, _ := hook.seen()
		return len(seen) >= 2
	})
	hook.set(hookHold)
	var port int
	select {
	case port = <-hook.held:
	case <-time.After(15 * time.Second):
		t.Fatal("no attempt after the failed ones")
	}
	victim := socketOwner(t, port, hook.URL, rs)
	before, _ := hook.seen()
	hook.set(hookOK)
	rs[victim].kill(t)
	killed := time.Now()
	survivors := slices.Delete(slices.Clone(rs), victim, victim+1)
	t.Logf("killed replica %d, which was sending attempt %d", victim, len(before)+1)

	eventually(t, 20*time.Second, "the notification taken over", func() bool {
		_, ok := hook.seen()
		return len(ok) == 1
	})
	_, ok := hook.seen()
	took := ok[0].Sub(killed)
	t.Logf("another replica delivered the notification %v after the kill", took)
	if took > ttl+4*time.Second {
		t.Errorf("the notification was taken over %v after the kill, want within the lease's ttl (%v) and a few seconds", took, ttl)
	}

	answer := map[string]any{"message": map[string]any{
		"kind": "message", "messageId": "m-answer", "role": "user", "taskId": id,
		"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"answer": "yes"}}},
	}}
	if done := resultTask(t, rpc(t, survivors[0].base, "message/send", answer)); state(done) != "completed" {
		t.Fatalf("the answer: %v", done)
	}
	for _, r := range survivors {
		waitOutboxEmpty(t, r.admin, 15*time.Second)
	}
	time.Sleep(500 * time.Millisecond) // a duplicate would have arrived
	checkHookAttempts(t, hook)
	checkDeliveryIDs(t, hook, id)
	for i, r := range survivors {
		if code, raw, list := getDeadLetters(t, r.admin, ""); code != http.StatusOK || len(list.DeadLetters) != 0 {
			t.Fatalf("survivor %d: dead letters: HTTP %d %s", i, code, raw)
		}
	}
}

// checkHookAttempts checks what the receiver saw: the input-required
// notification failed, was cut by the kill once, then acknowledged; the
// completed one acknowledged; each acknowledged once, in order.
func checkHookAttempts(t *testing.T, hook *flakyHook) {
	t.Helper()
	seen, _ := hook.seen()
	var acked []string
	cut := 0
	for i, at := range seen {
		if i > 0 && at.state == "input-required" && seen[i-1].state == "completed" {
			t.Fatalf("the receiver saw %v: input-required after completed", seen)
		}
		switch at.status {
		case http.StatusOK:
			acked = append(acked, at.state)
		case 0:
			cut++
		case http.StatusInternalServerError:
		default:
			t.Fatalf("the receiver saw %v", seen)
		}
	}
	t.Logf("the receiver saw %v", seen)
	if want := []string{"input-required", "completed"}; !slices.Equal(acked, want) || cut != 1 {
		t.Fatalf("the receiver acknowledged %v and saw %d attempts cut by the kill (all: %v), want %v and 1", acked, cut, seen, want)
	}
}

// checkDeliveryIDs checks that the receiver can tell each copy: every
// attempt at one state, from whichever replica, carried the same
// A2AD-Delivery-Id, "<task>:<config>:<seq>", and each state its own.
func checkDeliveryIDs(t *testing.T, hook *flakyHook, task string) {
	t.Helper()
	seen, _ := hook.seen()
	byState := map[string]string{}
	for _, at := range seen {
		parts := strings.Split(at.id, ":")
		if len(parts) != 3 || parts[0] != task || parts[1] == "" {
			t.Fatalf("attempt %v: A2AD-Delivery-Id %q, want %q:<config>:<seq>", at, at.id, task)
		}
		if _, err := strconv.ParseUint(parts[2], 10, 64); err != nil {
			t.Fatalf("attempt %v: A2AD-Delivery-Id %q: the sequence is not a number", at, at.id)
		}
		if prev, ok := byState[at.state]; ok && prev != at.id {
			t.Fatalf("two attempts at %s carried %q and %q: a receiver could not drop the copy", at.state, prev, at.id)
		}
		byState[at.state] = at.id
	}
	if len(byState) != 2 || byState["input-required"] == byState["completed"] {
		t.Fatalf("delivery ids by state %v: want one for each of input-required and completed, different", byState)
	}
	t.Logf("delivery ids: %v", byState)
}

// socketOwner returns the index in rs of the replica whose TCP socket
// from the local port port is connected to the server of url, from /proc.
func socketOwner(t *testing.T, port int, url string, rs []*process) int {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	to, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	inode := socketInode(t, port, to)
	want := "socket:[" + inode + "]"
	for i, p := range rs {
		fds := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
		entries, err := os.ReadDir(fds)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if link, _ := os.Readlink(filepath.Join(fds, e.Name())); link == want {
				return i
			}
		}
	}
	t.Fatalf("no replica holds the socket of port %d (inode %s)", port, inode)
	return -1
}

// socketInode is the inode of the TCP socket from the local port port to
// the port to, from /proc/net/tcp and tcp6.
func socketInode(t *testing.T, port, to int) string {
	t.Helper()
	local, remote := fmt.Sprintf(":%04X", port), fmt.Sprintf(":%04X", to)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && strings.HasSuffix(fields[1], local) && strings.HasSuffix(fields[2], remote) && fields[9] != "0" {
				f.Close()
				return fields[9]
			}
		}
		f.Close()
	}
	t.Fatalf("no TCP socket has the local port %d", port)
	return ""
}
