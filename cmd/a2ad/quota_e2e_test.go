package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// answerError decodes a JSON-RPC error answer.
func answerError(tb testing.TB, status int, body []byte) (code int, msg string, data map[string]any) {
	tb.Helper()
	var resp struct {
		Error *struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || status != http.StatusOK {
		tb.Fatalf("HTTP %d: %v: %.300s", status, err, body)
	}
	if resp.Error == nil {
		return 0, "", nil
	}
	return resp.Error.Code, resp.Error.Message, resp.Error.Data
}

// TestStorageLimitsOverHTTP reproduces the attacks of issue 13 item 4 on
// the real server, scaled down: a key with a 1 MiB quota (its own, from
// the keys file) sends 64 KiB inputs until it is refused with -32055,
// while another key goes on; an ask loop is refused with -32056 at the
// cap (the server's --max-history for one key, its own max_history for
// the other); an output past --max-task-artifact-bytes fails its task.
// At the defaults the same holds at 1 GiB, 100 messages and 16 MiB.
func TestStorageLimitsOverHTTP(t *testing.T) {
	const quota = 1 << 20
	// acme gets its own quota, bob his own history cap.
	k, _ := startPartners(t, func(c *Config) {
		c.MaxHistory = 10
		c.MaxTaskArtifactBytes = 200 << 10
	}, map[string]string{"acme": fmt.Sprintf("quota_bytes: %d", quota), "bob": "max_history: 6"})

	// The ask loops: each answer adds itself and the next question.
	askLoop := func(key, prefix string, max int) {
		t.Helper()
		task := resultTask(t, k.ok(t, key, "message/send", sendParams(prefix+"-0", "demo::ask", map[string]any{"question": "?"}, true)))
		id := task["id"].(string)
		for i := 1; ; i++ {
			if i > 2*max {
				t.Fatalf("%s: %d answers taken by a task of at most %d messages", prefix, i, max)
			}
			answer := map[string]any{"message": map[string]any{
				"kind": "message", "messageId": fmt.Sprintf("%s-%d", prefix, i), "role": "user", "taskId": id,
				"parts": []any{map[string]any{"kind": "text", "text": "more"}},
			}}
			status, _, body := k.call(t, key, "message/send", answer)
			code, msg, data := answerError(t, status, body)
			if code == 0 {
				var r map[string]any
				_ = json.Unmarshal(body, &r)
				if h := len(resultTask(t, r)["history"].([]any)); h > max {
					t.Fatalf("%s: a reply holds %d messages, over the cap of %d", prefix, h, max)
				}
				continue
			}
			want := fmt.Sprintf("Task limit exceeded: the task holds %d messages (max %d); start a new task", max, max)
			if code != -32056 || msg != want || data["limit"] != "history" || data["max"] != float64(max) || data["messages"] != float64(max) {
				t.Fatalf("%s: answer %d = %d %q %v, want -32056 %q", prefix, i, code, msg, data, want)
			}
			got := resultTask(t, k.ok(t, key, "tasks/get", map[string]any{"id": id}))
			if h := len(got["history"].([]any)); h != max || state(got) != "input-required" {
				t.Fatalf("%s: after the refusal the task holds %d messages and is %s", prefix, h, state(got))
			}
			return
		}
	}
	askLoop(k.acme, "acme-ask", 10) // --max-history
	askLoop(k.bob, "bob-ask", 6)    // the key's own max_history

	// The flood: 64 KiB inputs until the quota refuses one.
	input := map[string]any{"s": strings.Repeat("x", 64<<10)}
	quotaRE := regexp.MustCompile(`^Storage quota exceeded: (\d+) of 1048576 bytes stored; wait for old tasks to expire or ask the operator for more$`)
	accepted := 0
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatalf("100 inputs of 64 KiB taken under a quota of 1 MiB")
		}
		status, _, body := k.call(t, k.acme, "message/send", sendParams(fmt.Sprintf("flood-%d", i), "demo::echo", input, true))
		code, msg, data := answerError(t, status, body)
		if code == 0 {
			accepted++
			continue
		}
		if code != -32055 || !quotaRE.MatchString(msg) || data["quota"] != "bytes" || data["limit"] != float64(quota) {
			t.Fatalf("flood %d = %d %q %v, want -32055", i, code, msg, data)
		}
		if used := data["used"].(float64); used > quota || used < quota-300<<10 {
			t.Fatalf("refused with %v bytes used of %d", used, quota)
		}
		// Nothing of the refused message is stored: not its task, not
		// its messageId (a retry is refused again, not answered).
		status, _, body = k.call(t, k.acme, "message/send", sendParams(fmt.Sprintf("flood-%d", i), "demo::echo", input, true))
		if code, _, _ := answerError(t, status, body); code != -32055 {
			t.Fatalf("retry of the refused message = %d, want -32055 again: %.200s", code, body)
		}
		break
	}
	if accepted < 2 {
		t.Fatalf("only %d inputs of 64 KiB taken under a quota of 1 MiB", accepted)
	}
	// In 1.0 the refusal carries its reason.
	v1body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": v1Send("flood-v1", "demo::echo", input, false)})
	_, v1out := postRaw(t, k.base, v1body, http.Header{"A2A-Version": {"1.0"}, "Authorization": {"Bearer " + k.acme}})
	if !bytes.Contains(v1out, []byte(`"code":-32055`)) || !bytes.Contains(v1out, []byte(`"reason":"STORAGE_QUOTA_EXCEEDED"`)) {
		t.Fatalf("1.0 SendMessage over the quota: %.400s", v1out)
	}
	list := k.ok(t, k.acme, "tasks/list", map[string]any{"page_size": 1})
	if total := list["result"].(map[string]any)["total_size"]; total != float64(accepted+1) {
		t.Fatalf("acme has %v tasks, want the %d floods and the ask task", total, accepted)
	}
	u, err := boltOf(t, k.m).Usage(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	// A call's result is counted, never refused: at most one result over.
	if u.Bytes > quota+200<<10 {
		t.Fatalf("acme stores %d bytes under a quota of %d", u.Bytes, quota)
	}

	// bob is not affected.
	for i := range 3 {
		task := resultTask(t, k.ok(t, k.bob, "message/send", sendParams(fmt.Sprintf("bob-%d", i), "demo::echo", input, true)))
		if state(task) != "completed" {
			t.Fatalf("bob's echo %d: %s", i, state(task))
		}
	}

	// An output past --max-task-artifact-bytes fails its task.
	task := resultTask(t, k.ok(t, k.bob, "message/send", sendParams("bob-big", "demo::echo", map[string]any{"s": strings.Repeat("y", 250<<10)}, true)))
	want := "Function output is too large: the task's artifacts would take 256008 bytes, over the limit of 204800; the output was not stored"
	if state(task) != "failed" || statusMessage(task) != want || task["artifacts"] != nil {
		t.Fatalf("a 250 KiB output: %s %q, artifacts %v", state(task), statusMessage(task), task["artifacts"] != nil)
	}

	// The audit trail names each refusal.
	reasons := map[string]int{}
	for _, r := range k.auditRecords(t) {
		reasons[fmt.Sprint(r["reason"])]++
	}
	if reasons["quota_exceeded"] != 3 || reasons["task_limit"] != 2 || reasons["output_too_large"] != 1 {
		t.Errorf("audit reasons %v, want quota_exceeded 3, task_limit 2, output_too_large 1", reasons)
	}

	// keys list shows each key's own limits.
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"keys", "list", "--keys", k.keys}, nil, &out, &errOut, func(string) (string, bool) { return "", false }); code != 0 {
		t.Fatalf("keys list: %d %s", code, errOut.String())
	}
	wantList := "" +
		"CALLER                   STATE    RATE                 TASKS      BYTES          HISTORY  CALLS     BYTES/S     TIERS\n" +
		"acme                     enabled  default              default    1048576        default  default   default     partner\n" +
		"bob                      enabled  default              default    default        6        default   default     partner\n" +
		"ops                      enabled  default              default    default        default  default   default     internal\n"
	if !strings.HasPrefix(out.String(), wantList+"\n") {
		t.Errorf("keys list:\n%s\nwant:\n%s", out.String(), wantList)
	}
}
