package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/internal/costtest"
)

// Issue 13 item 7: a foreign task's id must cost what a missing one does,
// or the answer's timing tells a caller that another caller's task exists.

// TestForeignTaskCostsWhatAMissingOneDoes reproduces the timing attack of
// item 7 against the real server: bob asks for acme's task and for a task
// that does not exist, 2,000 times each, interleaved; the medians must be
// within 10%, for a small task and for one of about 1.8 MB (its input, in
// its history and echoed in its artifact); and so, on the large task, for
// every other method that takes a task id.
func TestForeignTaskCostsWhatAMissingOneDoes(t *testing.T) {
	skipShort(t, "times thousands of requests")
	k := startKeyed(t, func(c *Config) {
		c.MaxBodyBytes = 4 << 20
		c.RatePerSecond, c.RateBytes = 0, 0 // thousands of requests from one key
	})
	small := resultTask(t, k.ok(t, k.acme, "message/send", sendParams("timing-small", "demo::echo", map[string]any{"message": "hi"}, true)))
	bigInput := map[string]any{"message": strings.Repeat("x", 900_000)}
	large := resultTask(t, k.ok(t, k.acme, "message/send", sendParams("timing-large", "demo::echo", bigInput, true)))
	for _, task := range []map[string]any{small, large} {
		if state(task) != "completed" {
			t.Fatalf("task %s is %s", task["id"], state(task))
		}
	}

	h := http.Header{"Authorization": {"Bearer " + k.bob}}
	ask := func(method string, params any) func() {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		return func() {
			_, out := postRaw(t, k.base, body, h)
			if !bytes.Contains(out, []byte(`"code":-32001`)) {
				t.Fatalf("%s: %s, want -32001", method, out)
			}
		}
	}
	get := func(id string) func() { return ask("tasks/get", map[string]any{"id": id}) }
	for _, c := range []struct {
		name string
		id   string
	}{{"small", small["id"].(string)}, {"1.8 MB", large["id"].(string)}} {
		foreign, missing := get(c.id), get(costtest.Neighbour(c.id))
		costtest.Medians(200, foreign, missing) // warm up
		costtest.SameTime(t, "tasks/get of a "+c.name+" task", 2000, 0.10, foreign, missing)
	}

	id := large["id"].(string)
	msgTo := func(taskID string) any {
		p := sendParams("timing-msg", "demo::echo", map[string]any{"message": "hi"}, true)
		p["message"].(map[string]any)["taskId"] = taskID
		return p
	}
	methods := []struct {
		method string
		params func(id string) any
	}{
		{"tasks/get", func(id string) any { return map[string]any{"id": id, "historyLength": 1} }},
		{"tasks/cancel", func(id string) any { return map[string]any{"id": id} }},
		{"tasks/resubscribe", func(id string) any { return map[string]any{"id": id} }},
		{"tasks/pushNotificationConfig/set", func(id string) any {
			return map[string]any{"taskId": id, "pushNotificationConfig": map[string]any{"url": "http://127.0.0.1:9/hook"}}
		}},
		{"tasks/pushNotificationConfig/get", func(id string) any { return map[string]any{"id": id} }},
		{"tasks/pushNotificationConfig/list", func(id string) any { return map[string]any{"id": id} }},
		{"tasks/pushNotificationConfig/delete", func(id string) any { return map[string]any{"id": id, "pushNotificationConfigId": "w1"} }},
		{"message/send", msgTo},
	}
	for _, mt := range methods {
		foreign, missing := ask(mt.method, mt.params(id)), ask(mt.method, mt.params(costtest.Neighbour(id)))
		costtest.Medians(50, foreign, missing) // warm up
		costtest.SameTime(t, fmt.Sprintf("%s of the 1.8 MB task", mt.method), 2000, 0.10, foreign, missing)
	}
}
