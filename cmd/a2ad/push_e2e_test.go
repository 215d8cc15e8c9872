package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2aproject/a2a-go/a2a"
	"github.com/google/go-cmp/cmp"
)

func TestPushDeliveredWithTokenAndAuth(t *testing.T) {
	hook := newHookReceiver(t, nil)
	m := startMain(t, func(c *Config) { c.PushAllow = pushAllowLoopback })
	base := "http://" + m.Addr()

	task := resultTask(t, rpc(t, base, "message/send", pushSendParams("push-1", "demo::echo", map[string]any{"message": "hi"}, true,
		map[string]any{"url": hook.URL, "token": "tok-1", "authentication": map[string]any{"schemes": []any{"Bearer"}, "credentials": "cred-1"}})))
	if state(task) != "completed" {
		t.Fatalf("send: state %s", state(task))
	}
	id := task["id"].(string)

	eventually(t, 10*time.Second, "notification", func() bool { return len(hook.requests()) > 0 })
	waitOutboxEmpty(t, "http://"+m.AdminAddr(), 10*time.Second)
	reqs := hook.requests()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost {
		t.Errorf("method %s, want POST", r.Method)
	}
	for k, want := range map[string]string{
		"Content-Type":             "application/json",
		"X-A2A-Notification-Token": "tok-1",
		"Authorization":            "Bearer cred-1",
	} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	got := r.task(t)
	if got["kind"] != "task" || got["id"] != id || state(got) != "completed" {
		t.Fatalf("body: kind %v id %v (want %s) state %v", got["kind"], got["id"], id, got["status"])
	}
	arts, _ := got["artifacts"].([]any)
	if len(arts) != 1 {
		t.Fatalf("body has %d artifacts, want 1: %s", len(arts), r.Body)
	}
	part := arts[0].(map[string]any)["parts"].([]any)[0].(map[string]any)
	if diff := cmp.Diff(map[string]any{"message": "hi"}, part["data"]); diff != "" {
		t.Fatalf("artifact data (-want +got):\n%s", diff)
	}
	// The webhook is the task's own: a2ad gave it the task's id.
	cfg := resultTask(t, rpc(t, base, "tasks/pushNotificationConfig/get", map[string]any{"id": id}))
	if cfg["pushNotificationConfig"].(map[string]any)["id"] != id {
		t.Fatalf("config set in message/send: %v", cfg)
	}
}

func TestPushMethods(t *testing.T) {
	hook := newHookReceiver(t, nil)
	m := startMain(t, func(c *Config) { c.PushAllow = pushAllowLoopback })
	base := "http://" + m.Addr()

	task := resultTask(t, rpc(t, base, "message/send", sendParams("push-methods-1", "demo::sleep", map[string]any{"seconds": 30}, false)))
	id := task["id"].(string)
	set := func(cfg map[string]any) map[string]any {
		return rpc(t, base, "tasks/pushNotificationConfig/set", map[string]any{"taskId": id, "pushNotificationConfig": cfg})
	}
	cfgOf := func(what string, resp map[string]any) map[string]any {
		t.Helper()
		r := resultTask(t, resp)
		if r["taskId"] != id {
			t.Fatalf("%s: taskId %v, want %s", what, r["taskId"], id)
		}
		return r["pushNotificationConfig"].(map[string]any)
	}

	// Set: without an id the config gets the task's; with one it keeps it.
	if c := cfgOf("set without id", set(map[string]any{"url": hook.URL, "token": "t0"})); c["id"] != id || c["url"] != hook.URL || c["token"] != "t0" {
		t.Fatalf("set without id: %v", c)
	}
	auth := map[string]any{"schemes": []any{"Bearer"}, "credentials": "cred-a"}
	if c := cfgOf("set a", set(map[string]any{"id": "a", "url": hook.URL, "token": "ta", "authentication": auth})); c["id"] != "a" || c["token"] != "ta" || !cmp.Equal(c["authentication"], any(auth)) {
		t.Fatalf("set a: %v", c)
	}

	// Get: without a config id, the task's own; with one, that one.
	if c := cfgOf("get", rpc(t, base, "tasks/pushNotificationConfig/get", map[string]any{"id": id})); c["id"] != id || c["token"] != "t0" {
		t.Fatalf("get without config id: %v", c)
	}
	if c := cfgOf("get a", rpc(t, base, "tasks/pushNotificationConfig/get", map[string]any{"id": id, "pushNotificationConfigId": "a"})); c["id"] != "a" || c["token"] != "ta" {
		t.Fatalf("get a: %v", c)
	}

	list := func() []string {
		t.Helper()
		resp := rpc(t, base, "tasks/pushNotificationConfig/list", map[string]any{"id": id})
		arr, ok := resp["result"].([]any)
		if !ok {
			t.Fatalf("list: %v", resp)
		}
		var ids []string
		for _, e := range arr {
			e := e.(map[string]any)
			if e["taskId"] != id {
				t.Fatalf("list entry of task %v", e["taskId"])
			}
			ids = append(ids, e["pushNotificationConfig"].(map[string]any)["id"].(string))
		}
		slices.Sort(ids)
		return ids
	}
	if got, want := list(), []string{id, "a"}; !cmp.Equal(got, sortedCopy(want)) {
		t.Fatalf("list = %v, want %v", got, sortedCopy(want))
	}

	// Delete answers null, twice (deleting a missing one is no error).
	for i := range 2 {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tasks/pushNotificationConfig/delete",
			"params": map[string]any{"id": id, "pushNotificationConfigId": "a"}})
		_, raw := postRaw(t, base, body, nil)
		if !strings.Contains(string(raw), `"result":null`) || strings.Contains(string(raw), `"error"`) {
			t.Fatalf("delete %d: %s", i, raw)
		}
	}
	wantRPCError(t, "get deleted", rpc(t, base, "tasks/pushNotificationConfig/get", map[string]any{"id": id, "pushNotificationConfigId": "a"}),
		-32001, "Push notification config not found")
	if got := list(); !cmp.Equal(got, []string{id}) {
		t.Fatalf("list after delete = %v", got)
	}

	// An unknown task, whatever the method.
	for method, params := range map[string]map[string]any{
		"set":    {"taskId": "no-such-task", "pushNotificationConfig": map[string]any{"url": hook.URL}},
		"get":    {"id": "no-such-task"},
		"list":   {"id": "no-such-task"},
		"delete": {"id": "no-such-task", "pushNotificationConfigId": "a"},
	} {
		wantRPCError(t, method+" of an unknown task", rpc(t, base, "tasks/pushNotificationConfig/"+method, params), -32001, "Task not found")
	}

	// Refused URLs, even with 127.0.0.1/32 allowed.
	wantRPCError(t, "ftp", set(map[string]any{"url": "ftp://x"}), -32602, "/pushNotificationConfig/url", "http or https")
	wantRPCError(t, "metadata service", set(map[string]any{"url": "http://169.254.169.254/latest"}), -32602, `"169.254.169.254"`, "link-local")
	wantRPCError(t, "127.0.0.2", set(map[string]any{"url": "http://127.0.0.2:9/"}), -32602, `"127.0.0.2"`, "loopback")
	wantRPCError(t, "missing url", set(map[string]any{"token": "x"}), -32602, "/pushNotificationConfig/url: is required")

	// At most 10 webhooks; replacing one of the 10 is fine.
	for i := 1; i <= 9; i++ {
		cfgOf("fill", set(map[string]any{"id": fmt.Sprintf("c%d", i), "url": hook.URL, "token": fmt.Sprintf("tc%d", i)}))
	}
	wantRPCError(t, "11th", set(map[string]any{"id": "c10", "url": hook.URL}), -32602, "at most 10")
	if c := cfgOf("replace", set(map[string]any{"id": "c1", "url": hook.URL, "token": "tc1-new"})); c["token"] != "tc1-new" {
		t.Fatalf("replace c1: %v", c)
	}
	if got := list(); len(got) != 10 || slices.Contains(got, "c10") {
		t.Fatalf("list = %v, want the task's and c1..c9", got)
	}

	// Without --push-allow, loopback is refused, naming the host.
	m2 := startMain(t, nil)
	base2 := "http://" + m2.Addr()
	echo := resultTask(t, rpc(t, base2, "message/send", sendParams("push-methods-2", "demo::echo", map[string]any{}, true)))
	wantRPCError(t, "loopback without allowlist", rpc(t, base2, "tasks/pushNotificationConfig/set",
		map[string]any{"taskId": echo["id"], "pushNotificationConfig": map[string]any{"url": hook.URL}}), -32602, `"127.0.0.1"`, "loopback")
	wantRPCError(t, "loopback in message/send", rpc(t, base2, "message/send",
		pushSendParams("push-methods-3", "demo::echo", map[string]any{}, true, map[string]any{"url": hook.URL})), -32602, "loopback")

	// The cancel notifies each of the 10 webhooks once, with its token.
	if c := resultTask(t, rpc(t, base, "tasks/cancel", map[string]any{"id": id})); state(c) != "canceled" {
		t.Fatalf("cancel: state %s", state(c))
	}
	eventually(t, 10*time.Second, "10 cancel notifications", func() bool { return len(hook.requests()) >= 10 })
	waitOutboxEmpty(t, "http://"+m.AdminAddr(), 10*time.Second)
	var tokens []string
	for _, r := range hook.requests() {
		if got := r.task(t); got["id"] != id || state(got) != "canceled" {
			t.Fatalf("notification of %v in %v, want %s canceled", got["id"], got["status"], id)
		}
		tokens = append(tokens, r.Header.Get("X-A2A-Notification-Token"))
	}
	want := []string{"t0", "tc1-new"}
	for i := 2; i <= 9; i++ {
		want = append(want, fmt.Sprintf("tc%d", i))
	}
	if diff := cmp.Diff(sortedCopy(want), sortedCopy(tokens)); diff != "" {
		t.Fatalf("tokens of the cancel notifications (-want +got):\n%s", diff)
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestPushOfficialClient(t *testing.T) {
	hook := newHookReceiver(t, nil)
	m := startMain(t, func(c *Config) { c.PushAllow = pushAllowLoopback })
	ctx := context.Background()
	client := officialClient(t, "http://"+m.Addr())

	task := startSleep(t, client, 30)

	one := &a2a.TaskPushConfig{TaskID: task.ID, Config: a2a.PushConfig{
		ID: "sdk-1", URL: hook.URL, Token: "tok-sdk",
		Auth: &a2a.PushAuthInfo{Schemes: []string{"Bearer"}, Credentials: "cred-sdk"},
	}}
	got, err := client.SetTaskPushConfig(ctx, one)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(one, got); diff != "" {
		t.Fatalf("SetTaskPushConfig (-want +got):\n%s", diff)
	}
	got, err = client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigParams{TaskID: task.ID, ConfigID: "sdk-1"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(one, got); diff != "" {
		t.Fatalf("GetTaskPushConfig (-want +got):\n%s", diff)
	}

	// Without an ID, the config gets the task's.
	two, err := client.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{TaskID: task.ID, Config: a2a.PushConfig{URL: hook.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if two.Config.ID != string(task.ID) {
		t.Fatalf("config set without an ID got %q, want the task's %q", two.Config.ID, task.ID)
	}
	if got, err := client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigParams{TaskID: task.ID}); err != nil || got.Config.ID != string(task.ID) {
		t.Fatalf("GetTaskPushConfig without ConfigID = %+v, %v", got, err)
	}
	list, err := client.ListTaskPushConfig(ctx, &a2a.ListTaskPushConfigParams{TaskID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*a2a.TaskPushConfig{one, two}, list); diff != "" {
		t.Fatalf("ListTaskPushConfig (-want +got):\n%s", diff)
	}

	if err := client.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigParams{TaskID: task.ID, ConfigID: "sdk-1"}); err != nil {
		t.Fatalf("DeleteTaskPushConfig: %v", err)
	}
	_, err = client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigParams{TaskID: task.ID, ConfigID: "sdk-1"})
	if !errors.Is(err, a2a.ErrTaskNotFound) || !strings.Contains(err.Error(), "Push notification config not found") {
		t.Fatalf("GetTaskPushConfig of a deleted config: %v", err)
	}
	if list, err := client.ListTaskPushConfig(ctx, &a2a.ListTaskPushConfigParams{TaskID: task.ID}); err != nil || len(list) != 1 || list[0].Config.ID != string(task.ID) {
		t.Fatalf("ListTaskPushConfig after delete = %v, %v", list, err)
	}
	if _, err := client.ListTaskPushConfig(ctx, &a2a.ListTaskPushConfigParams{TaskID: "no-such-task"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("ListTaskPushConfig of an unknown task: %v", err)
	}
	if _, err := client.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{TaskID: task.ID, Config: a2a.PushConfig{URL: "http://169.254.169.254/"}}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Fatalf("SetTaskPushConfig of the metadata service: %v", err)
	}

	if _, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
}

func TestPushSuccessAfter503s(t *testing.T) {
	skipShort(t, "waits for the sender's backoff (1 s base)")
	hook := newHookReceiver(t, func(n int) int {
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	m := startMain(t, func(c *Config) { c.PushAllow = pushAllowLoopback })
	base := "http://" + m.Addr()

	task := resultTask(t, rpc(t, base, "message/send", pushSendParams("push-503", "demo::echo", map[string]any{"message": "again"}, true,
		map[string]any{"url": hook.URL, "token": "tok-503"})))
	id := task["id"].(string)

	eventually(t, 15*time.Second, "delivery after two 503s", func() bool { return len(hook.delivered()) > 0 })
	waitOutboxEmpty(t, "http://"+m.AdminAddr(), 10*time.Second)
	reqs := hook.requests()
	var statuses []int
	for _, r := range reqs {
		statuses = append(statuses, r.Status)
		if got := r.task(t); got["id"] != id || state(got) != "completed" || r.Header.Get("X-A2A-Notification-Token") != "tok-503" {
			t.Fatalf("attempt: task %v state %v token %q", got["id"], got["status"], r.Header.Get("X-A2A-Notification-Token"))
		}
		if string(r.Body) != string(reqs[0].Body) {
			t.Fatalf("attempts carry different bodies:\n%s\n%s", reqs[0].Body, r.Body)
		}
	}
	if want := []int{503, 503, 200}; !slices.Equal(statuses, want) {
		t.Fatalf("receiver answered %v, want %v", statuses, want)
	}
	if code, raw, list := getDeadLetters(t, "http://"+m.AdminAddr(), ""); code != http.StatusOK || len(list.DeadLetters) != 0 {
		t.Fatalf("dead letters: HTTP %d %s", code, raw)
	}
}

func TestPushDeadLetter(t *testing.T) {
	skipShort(t, "waits for the sender's backoff (1 s base)")
	hook500 := newHookReceiver(t, func(int) int { return http.StatusInternalServerError })
	hook404 := newHookReceiver(t, func(int) int { return http.StatusNotFound })
	m := startMain(t, func(c *Config) {
		c.PushAllow = pushAllowLoopback
		c.PushMaxAttempts = 2
	})
	base := "http://" + m.Addr()
	secret := map[string]any{"token": "tok-secret", "authentication": map[string]any{"schemes": []any{"Bearer"}, "credentials": "cred-secret"}}
	withURL := func(u string) map[string]any {
		c := map[string]any{"url": u}
		for k, v := range secret {
			c[k] = v
		}
		return c
	}
	t500 := resultTask(t, rpc(t, base, "message/send", pushSendParams("dead-500", "demo::echo", map[string]any{}, true, withURL(hook500.URL))))["id"].(string)
	t404 := resultTask(t, rpc(t, base, "message/send", pushSendParams("dead-404", "demo::echo", map[string]any{}, true, withURL(hook404.URL))))["id"].(string)

	var list admin.OutboxList
	var raw []byte
	eventually(t, 15*time.Second, "two dead letters", func() bool {
		var code int
		code, raw, list = getDeadLetters(t, "http://"+m.AdminAddr(), "")
		return code == http.StatusOK && len(list.DeadLetters) == 2
	})
	byTask := map[string]int{}
	for i, d := range list.DeadLetters {
		byTask[d.TaskID] = i
	}
	d500, d404 := list.DeadLetters[byTask[t500]], list.DeadLetters[byTask[t404]]
	if d500.TaskID != t500 || d500.ConfigID != t500 || d500.URL != hook500.URL || d500.Attempts != 2 || !strings.Contains(d500.LastError, "500") {
		t.Errorf("dead letter of the 500 webhook: %+v", d500)
	}
	if d404.TaskID != t404 || d404.Attempts != 1 || !strings.Contains(d404.LastError, "404") {
		t.Errorf("dead letter of the 404 webhook: %+v", d404)
	}
	for _, s := range []string{"tok-secret", "cred-secret", "Bearer", `"kind"`} {
		if strings.Contains(string(raw), s) {
			t.Errorf("dead letters show %q: %s", s, raw)
		}
	}
	if list.OutboxDepth != 0 {
		t.Errorf("outboxDepth %d, want 0", list.OutboxDepth)
	}
	// No attempt after the dead letter.
	time.Sleep(100 * time.Millisecond)
	if n := len(hook500.requests()); n != 2 {
		t.Errorf("500 webhook got %d requests, want 2", n)
	}
	if n := len(hook404.requests()); n != 1 {
		t.Errorf("404 webhook got %d requests, want 1 (not retried)", n)
	}

	// Paging, oldest first.
	first, second := list.DeadLetters[0], list.DeadLetters[1]
	if first.ID >= second.ID {
		t.Errorf("dead letters not oldest first: ids %d, %d", first.ID, second.ID)
	}
	if _, raw, page := getDeadLetters(t, "http://"+m.AdminAddr(), "?limit=1"); len(page.DeadLetters) != 1 || page.DeadLetters[0].ID != first.ID {
		t.Errorf("limit=1: %s", raw)
	}
	if _, raw, page := getDeadLetters(t, "http://"+m.AdminAddr(), fmt.Sprintf("?after=%d", first.ID)); len(page.DeadLetters) != 1 || page.DeadLetters[0].ID != second.ID {
		t.Errorf("after=%d: %s", first.ID, raw)
	}
	if _, raw, page := getDeadLetters(t, "http://"+m.AdminAddr(), fmt.Sprintf("?after=%d", second.ID)); page.DeadLetters == nil || len(page.DeadLetters) != 0 {
		t.Errorf("after the last: %s (want an empty array)", raw)
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?limit=x", "?after=x", "?after=-1"} {
		if code, raw, _ := getDeadLetters(t, "http://"+m.AdminAddr(), q); code != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d %s, want 400", q, code, raw)
		}
	}
}

// TestPushOrderKept: a transition that comes while the notification of
// an earlier one is in flight reaches the webhook after it, and the
// webhook ends with the latest state. Notifications not yet sent carry
// the task as it stands when they are sent, so a failed attempt is
// retried with the newer state rather than followed by a second one.
func TestPushOrderKept(t *testing.T) {
	skipShort(t, "waits for the sender's backoff (1 s base)")
	for _, tc := range []struct {
		name  string
		first int // the answer to the first attempt, held until the task completed
		want  []string
	}{
		{"first attempt fails", http.StatusServiceUnavailable, []string{"input-required:503", "completed:200"}},
		{"first attempt succeeds", http.StatusOK, []string{"input-required:200", "completed:200"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answered := make(chan struct{})
			hook := newHookReceiver(t, func(n int) int {
				if n == 1 {
					select {
					case <-answered:
					case <-time.After(5 * time.Second):
					}
					return tc.first
				}
				return http.StatusOK
			})
			catalog := filepath.Join(t.TempDir(), "catalog.yaml")
			putFile(t, catalog, `functions:
  - id: demo::ask
    metadata: {"a2a.expose": true}
    builtin: ask
`)
			m := startMain(t, func(c *Config) {
				c.Catalog = catalog
				c.PushAllow = pushAllowLoopback
			})
			base := "http://" + m.Addr()

			task := resultTask(t, rpc(t, base, "message/send", pushSendParams("order-1", "demo::ask", map[string]any{}, true,
				map[string]any{"url": hook.URL, "token": "tok-order"})))
			if state(task) != "input-required" {
				t.Fatalf("first message: state %s, want input-required", state(task))
			}
			id := task["id"].(string)
			eventually(t, 5*time.Second, "the first attempt", func() bool { return hook.arrivals() > 0 })
			answer := map[string]any{
				"message": map[string]any{
					"kind": "message", "messageId": "order-2", "role": "user", "taskId": id,
					"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"answer": "x"}}},
				},
			}
			done := resultTask(t, rpc(t, base, "message/send", answer))
			if state(done) != "completed" {
				t.Fatalf("answer: state %s, want completed", state(done))
			}
			close(answered)

			eventually(t, 15*time.Second, "the completion delivered", func() bool {
				d := hook.delivered()
				return len(d) > 0 && state(d[len(d)-1].task(t)) == "completed"
			})
			waitOutboxEmpty(t, "http://"+m.AdminAddr(), 10*time.Second)
			var seen []string
			for _, r := range hook.requests() {
				got := r.task(t)
				if got["id"] != id {
					t.Fatalf("notification of task %v, want %s", got["id"], id)
				}
				seen = append(seen, fmt.Sprintf("%s:%d", state(got), r.Status))
			}
			if !slices.Equal(seen, tc.want) {
				t.Fatalf("receiver saw %v, want %v", seen, tc.want)
			}
		})
	}
}

func TestPushSurvivesRestart(t *testing.T) {
	skipShort(t, "runs the binary twice and waits for the sender's backoff")
	var (
		mu       sync.Mutex
		released bool
	)
	hook := newHookReceiver(t, func(int) int {
		mu.Lock()
		defer mu.Unlock()
		if released {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	// startBinary inherits the environment: this is --push-allow.
	t.Setenv("A2AD_PUSH_ALLOW", pushAllowLoopback)
	store := filepath.Join(t.TempDir(), "a2ad.db")
	p := startBinary(t, exampleCatalog, store)

	task := resultTask(t, rpc(t, p.base, "message/send", pushSendParams("restart-1", "demo::echo", map[string]any{"message": "survive"}, true,
		map[string]any{"url": hook.URL, "token": "tok-restart"})))
	if state(task) != "completed" {
		t.Fatalf("send: state %s", state(task))
	}
	id := task["id"].(string)
	eventually(t, 10*time.Second, "a failed attempt", func() bool { return len(hook.requests()) > 0 })
	p.kill(t)
	before := len(hook.requests())

	p2 := startBinary(t, exampleCatalog, store)
	mu.Lock()
	released = true
	mu.Unlock()
	eventually(t, 15*time.Second, "delivery after the restart", func() bool { return len(hook.delivered()) > 0 })
	waitOutboxEmpty(t, p2.admin, 10*time.Second)

	reqs := hook.requests()
	for i, r := range reqs {
		got := r.task(t)
		if got["id"] != id || state(got) != "completed" || r.Header.Get("X-A2A-Notification-Token") != "tok-restart" {
			t.Fatalf("request %d: task %v state %v token %q", i, got["id"], got["status"], r.Header.Get("X-A2A-Notification-Token"))
		}
		if i < before && r.Status == http.StatusOK {
			t.Fatalf("request %d answered 200 before the restart", i)
		}
	}
	if code, raw, list := getDeadLetters(t, p2.admin, ""); code != http.StatusOK || len(list.DeadLetters) != 0 {
		t.Fatalf("dead letters: HTTP %d %s", code, raw)
	}
}
