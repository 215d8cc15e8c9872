package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/internal/testkit"
)

// TestDeadLettersReplayed: a receiver that fails makes three dead
// letters; once it recovers, the operator drops one (a2ad push drop),
// retries one (a2ad push retry ID) and the rest (--all). The retried ones
// reach the receiver, each once, reporting the task's current state; the
// dropped one never does; each action is in the audit trail; a second
// retry of the same id is a 404.
func TestDeadLettersReplayed(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	hook := newHookReceiver(t, func(int) int {
		if broken.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	k := startKeyed(t, func(c *Config) {
		anonymousPartners(c)
		c.RatePerSecond = 0
		c.PushMaxAttempts = 1
	})
	adminURL := "http://" + k.m.AdminAddr()
	var ids []string
	for i := range 3 {
		task := resultTask(t, rpc(t, k.base, "message/send", pushSendParams(fmt.Sprintf("dl-%d", i), "demo::echo",
			map[string]any{}, true, map[string]any{"url": hook.URL, "token": "tok-secret"})))
		ids = append(ids, task["id"].(string))
	}
	var list []string // dead letter ids, in task order
	eventually(t, 15*time.Second, "three dead letters", func() bool {
		_, _, l := getDeadLetters(t, adminURL, "")
		if len(l.DeadLetters) != 3 {
			return false
		}
		byTask := map[string]uint64{}
		for _, d := range l.DeadLetters {
			byTask[d.TaskID] = d.ID
		}
		list = list[:0]
		for _, id := range ids {
			list = append(list, fmt.Sprint(byTask[id]))
		}
		return true
	})
	if n := hook.arrivals(); n != 3 {
		t.Fatalf("the failing receiver got %d requests, want 3", n)
	}
	broken.Store(false)

	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append(append([]string{"push"}, args...), "--server", adminURL), strings.NewReader(""),
			&out, &errb, func(string) (string, bool) { return "", false })
		return code, out.String(), errb.String()
	}
	if code, out, errs := cli("drop", list[0]); code != 0 || out != fmt.Sprintf("dropped dead letter %s (task %s, webhook %s)\n", list[0], ids[0], ids[0]) {
		t.Fatalf("push drop: exit %d, %q %q", code, out, errs)
	}
	if code, out, errs := cli("retry", list[1]); code != 0 || !strings.HasPrefix(out, "retried dead letter "+list[1]+" ") {
		t.Fatalf("push retry: exit %d, %q %q", code, out, errs)
	}
	if code, out, errs := cli("retry", "--all"); code != 0 || !strings.HasSuffix(out, "retried 1 dead letter\n") {
		t.Fatalf("push retry --all: exit %d, %q %q", code, out, errs)
	}
	waitOutboxEmpty(t, adminURL, 15*time.Second)

	// Each retried letter reached the receiver once, with the task as it
	// stands; the dropped one never.
	var delivered []string
	for _, r := range hook.requests()[3:] {
		task := r.task(t)
		if r.Status != http.StatusOK || state(task) != "completed" || r.Header.Get("X-A2A-Notification-Token") != "tok-secret" {
			t.Errorf("replayed delivery: HTTP %d, task %v, token %q", r.Status, task["status"], r.Header.Get("X-A2A-Notification-Token"))
		}
		delivered = append(delivered, task["id"].(string))
	}
	slices.Sort(delivered)
	want := []string{ids[1], ids[2]}
	slices.Sort(want)
	if !slices.Equal(delivered, want) {
		t.Fatalf("replayed deliveries of tasks %v, want %v", delivered, want)
	}
	if _, raw, l := getDeadLetters(t, adminURL, ""); len(l.DeadLetters) != 0 {
		t.Fatalf("dead letters after the replay: %s", raw)
	}

	// Gone: a second retry, or a drop, of the same id is a 404; a bad id
	// is a 400.
	if code, _, errs := cli("retry", list[1]); code != 1 || errs != "a2ad: push retry "+list[1]+": no dead letter has id "+list[1]+" (HTTP 404)\n" {
		t.Errorf("second retry: exit %d, %q", code, errs)
	}
	if code, _, errs := cli("drop", "x"); code != 2 || errs != "a2ad: push drop: the dead letter id must be a positive integer, not \"x\"\n" {
		t.Errorf("drop x: exit %d, %q", code, errs)
	}
	req, _ := http.NewRequest(http.MethodDelete, adminURL+"/admin/v1/dead-letters/0", nil)
	resp, body := testkit.RoundTrip(t, nil, req)
	if resp.StatusCode != http.StatusBadRequest || string(bytes.TrimSpace(body)) != `{"message":"the dead letter id in the path must be a positive integer, not \"0\""}` {
		t.Errorf("DELETE /admin/v1/dead-letters/0: HTTP %d %s", resp.StatusCode, body)
	}

	// Audited: ids and outcomes, never the URL or the token.
	var actions []string
	for _, r := range k.auditRecords(t) {
		if r["operator"] != true {
			continue
		}
		actions = append(actions, fmt.Sprintf("%s %v %v %s", r["action"], r["dead_letter_id"], r["task_id"], r["reason"]))
		if b, _ := json.Marshal(r); strings.Contains(string(b), "tok-secret") || strings.Contains(string(b), hook.URL) {
			t.Errorf("audit record shows the webhook: %s", b)
		}
	}
	wantActions := []string{
		fmt.Sprintf("dead-letters/delete %s %s ok", list[0], ids[0]),
		fmt.Sprintf("dead-letters/retry %s %s ok", list[1], ids[1]),
		fmt.Sprintf("dead-letters/retry %s %s ok", list[2], ids[2]),
		fmt.Sprintf("dead-letters/retry %s  not_found", list[1]),
	}
	if !slices.Equal(actions, wantActions) {
		t.Errorf("operator audit records:\n%s\nwant\n%s", strings.Join(actions, "\n"), strings.Join(wantActions, "\n"))
	}
}

// TestDeadLetterRoutesAgree: on the real binary and store, GET
// /admin/push/dead-letters (the alias kept for a release) pages through
// the same dead letters as GET /admin/v1/dead-letters.
func TestDeadLetterRoutesAgree(t *testing.T) {
	hook := newHookReceiver(t, func(int) int { return http.StatusServiceUnavailable })
	k := startKeyed(t, func(c *Config) {
		anonymousPartners(c)
		c.RatePerSecond = 0
		c.PushMaxAttempts = 1
	})
	adminURL := "http://" + k.m.AdminAddr()
	for i := range 3 {
		rpc(t, k.base, "message/send", pushSendParams(fmt.Sprintf("agree-%d", i), "demo::echo",
			map[string]any{}, true, map[string]any{"url": hook.URL}))
	}
	eventually(t, 15*time.Second, "three dead letters", func() bool {
		_, _, l := getDeadLetters(t, adminURL, "")
		return len(l.DeadLetters) == 3
	})
	var v1 []admin.DeadLetter
	for path := "/admin/v1/dead-letters?limit=2"; ; {
		resp, raw := httpGet(t, adminURL+path)
		var page admin.DeadLetterList
		if err := json.Unmarshal(raw, &page); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("GET %s: HTTP %d %s (%v)", path, resp.StatusCode, raw, err)
		}
		v1 = append(v1, page.DeadLetters...)
		if page.NextPageToken == nil || len(v1) > 3 {
			break
		}
		path = "/admin/v1/dead-letters?limit=2&page_token=" + *page.NextPageToken
	}
	var alias []admin.DeadLetter
	for after := uint64(0); len(alias) <= 3; {
		code, raw, page := getDeadLetters(t, adminURL, fmt.Sprintf("?limit=2&after=%d", after))
		if code != http.StatusOK {
			t.Fatalf("GET /admin/push/dead-letters after %d: HTTP %d %s", after, code, raw)
		}
		if len(page.DeadLetters) == 0 {
			break
		}
		alias = append(alias, page.DeadLetters...)
		after = page.DeadLetters[len(page.DeadLetters)-1].ID
	}
	if len(v1) != 3 || !slices.Equal(v1, alias) {
		t.Errorf("GET /admin/v1/dead-letters: %+v\nGET /admin/push/dead-letters: %+v\nwant the same 3 letters", v1, alias)
	}
}
