package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// v1call posts one JSON-RPC request with A2A-Version (none when "") and
// returns the status and body.
func v1call(tb testing.TB, base, version, method string, params any) (int, []byte) {
	tb.Helper()
	req := map[string]any{"jsonrpc": "2.0", "id": 1, "method": method}
	if params != nil {
		req["params"] = params
	}
	body, _ := json.Marshal(req)
	h := http.Header{}
	if version != "" {
		h.Set("A2A-Version", version)
	}
	resp, out := postRaw(tb, base, body, h)
	return resp.StatusCode, out
}

func v1result(tb testing.TB, body []byte) map[string]any {
	tb.Helper()
	var resp map[string]any
	if err := json.Unmarshal(body, &resp); err != nil {
		tb.Fatalf("%v: %s", err, body)
	}
	r, ok := resp["result"].(map[string]any)
	if !ok {
		tb.Fatalf("no result: %s", body)
	}
	return r
}

func v1Send(msgID, skill string, input any, returnImmediately bool) map[string]any {
	p := map[string]any{
		"message": map[string]any{
			"messageId": msgID, "role": "ROLE_USER",
			"parts": []any{map[string]any{"data": map[string]any{"skill": skill, "input": input}}},
		},
	}
	if returnImmediately {
		p["configuration"] = map[string]any{"returnImmediately": true}
	}
	return p
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE = regexp.MustCompile(`20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	portRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	// Page tokens hold times and ids: only their presence is pinned.
	tokenRE = regexp.MustCompile(`"(nextPageToken|next_page_token)":"[^"]+"`)
)

// normalizer replaces generated ids (numbered in order of appearance)
// and timestamps, so that answers can be compared with golden files.
type normalizer map[string]string

func (n normalizer) apply(b []byte) string {
	s := uuidRE.ReplaceAllStringFunc(string(b), func(id string) string {
		if v, ok := n[id]; ok {
			return v
		}
		v := fmt.Sprintf("<id-%d>", len(n)+1)
		n[id] = v
		return v
	})
	s = portRE.ReplaceAllString(s, "127.0.0.1:<port>")
	s = tokenRE.ReplaceAllString(s, `"$1":"<token>"`)
	return timeRE.ReplaceAllString(s, "<time>")
}

// golden compares got with testdata/wire/<name>.golden, indented.
func golden(tb testing.TB, name, got string) {
	tb.Helper()
	var buf bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if err := json.Indent(&buf, []byte(line), "", "  "); err != nil {
			buf.WriteString(line)
		}
		buf.WriteByte('\n')
	}
	path := filepath.Join("testdata", "wire", name+".golden")
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != buf.String() {
		tb.Errorf("%s differs from %s:\n got:\n%s\nwant:\n%s", name, path, buf.String(), want)
	}
}

func TestVersionNegotiation(t *testing.T) {
	m := startMain(t, nil)
	base := "http://" + m.Addr()
	for _, tt := range []struct {
		version string
		ok      bool
	}{
		{"", true}, {"1.0", true}, {"0.3", true}, {"1.0.1", true}, {" 1.0 ", true},
		{"2.0", false}, {"1", false}, {"v1.0", false}, {"1.1", false},
	} {
		_, body := v1call(t, base, tt.version, "GetTask", map[string]any{"id": "no-such-task"})
		code := "-32001"
		if !tt.ok {
			code = "-32009"
		}
		if !bytes.Contains(body, []byte(`"code":`+code)) {
			t.Errorf("A2A-Version %q: %s, want code %s", tt.version, body, code)
		}
	}
	// The query parameter works too, and the header wins.
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": map[string]any{"id": "x"}})
	resp, out := postURL(t, nil, base+"/a2a?A2A-Version=9.9", body, nil)
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32009,"message":"Version not supported","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"VERSION_NOT_SUPPORTED","domain":"a2a-protocol.org","metadata":{"supported":"0.3, 1.0","version":"9.9"}}]}}`
	if resp.StatusCode != http.StatusOK || string(out) != want {
		t.Errorf("?A2A-Version=9.9: HTTP %d %s\nwant %s", resp.StatusCode, out, want)
	}
	if _, out := postURL(t, nil, base+"/a2a?A2A-Version=9.9", body, http.Header{"A2A-Version": {"1.0"}}); !bytes.Contains(out, []byte(`"code":-32001`)) {
		t.Errorf("header 1.0 with ?A2A-Version=9.9: %s", out)
	}
	// A 0.3 method keeps the 0.3 shapes under A2A-Version: 1.0.
	_, out = v1call(t, base, "1.0", "tasks/get", map[string]any{"id": "x"})
	if string(out) != `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}` {
		t.Errorf("tasks/get under 1.0: %s", out)
	}
}

// TestWireGolden pins every method's answer in both versions.
func TestWireGolden(t *testing.T) {
	hook := newHookReceiver(t, nil)
	m := startMain(t, func(c *Config) { c.PushAllow = pushAllowLoopback })
	base := "http://" + m.Addr()
	n := normalizer{}
	var log strings.Builder
	record := func(title string, body []byte) {
		log.WriteString(`{"call":` + fmt.Sprintf("%q", title) + `}` + "\n")
		log.WriteString(n.apply(body) + "\n")
	}
	// call records the answer to method with params under version.
	call := func(title, version, method string, params any) []byte {
		_, b := v1call(t, base, version, method, params)
		record(title, b)
		return b
	}

	// 0.3 and 1.0, side by side.
	b := call("0.3 message/send", "", "message/send", sendParams("w-1", "demo::echo", map[string]any{"n": 1}, true))
	task03 := resultTask(t, decodeJSON(t, b))["id"].(string)
	b = call("1.0 SendMessage", "1.0", "SendMessage", v1Send("w-2", "demo::echo", map[string]any{"n": 2}, false))
	task10 := v1result(t, b)["task"].(map[string]any)["id"].(string)

	call("0.3 tasks/get", "", "tasks/get", map[string]any{"id": task03, "historyLength": 1})
	call("1.0 GetTask", "1.0", "GetTask", map[string]any{"id": task10, "historyLength": 1})

	_, b = v1call(t, base, "1.0", "SendMessage", v1Send("w-3", "demo::sleep", map[string]any{"seconds": 30}, true))
	sleeping := v1result(t, b)["task"].(map[string]any)["id"].(string)
	call("1.0 CreateTaskPushNotificationConfig", "1.0", "CreateTaskPushNotificationConfig", map[string]any{
		"taskId": sleeping, "id": "hook-1", "url": hook.URL, "token": "tok",
		"authentication": map[string]any{"scheme": "Bearer", "credentials": "s3cret"}})
	call("1.0 GetTaskPushNotificationConfig", "1.0", "GetTaskPushNotificationConfig", map[string]any{"taskId": sleeping, "id": "hook-1"})
	call("1.0 ListTaskPushNotificationConfigs", "1.0", "ListTaskPushNotificationConfigs", map[string]any{"taskId": sleeping})
	call("0.3 tasks/pushNotificationConfig/list", "", "tasks/pushNotificationConfig/list", map[string]any{"id": sleeping})
	call("0.3 tasks/pushNotificationConfig/set", "", "tasks/pushNotificationConfig/set", map[string]any{
		"taskId": sleeping, "pushNotificationConfig": map[string]any{"id": "hook-03", "url": hook.URL + "/03"}})
	call("0.3 tasks/pushNotificationConfig/get", "", "tasks/pushNotificationConfig/get", map[string]any{"id": sleeping, "pushNotificationConfigId": "hook-03"})
	call("0.3 tasks/pushNotificationConfig/delete", "", "tasks/pushNotificationConfig/delete", map[string]any{"id": sleeping, "pushNotificationConfigId": "hook-03"})
	call("1.0 CancelTask", "1.0", "CancelTask", map[string]any{"id": sleeping})
	call("0.3 tasks/cancel of a canceled task", "", "tasks/cancel", map[string]any{"id": sleeping})
	call("1.0 CancelTask of a canceled task", "1.0", "CancelTask", map[string]any{"id": sleeping})
	call("1.0 DeleteTaskPushNotificationConfig", "1.0", "DeleteTaskPushNotificationConfig", map[string]any{"taskId": sleeping, "id": "hook-1"})
	call("1.0 DeleteTaskPushNotificationConfig again (idempotent)", "1.0", "DeleteTaskPushNotificationConfig", map[string]any{"taskId": sleeping, "id": "hook-1"})

	b = call("1.0 ListTasks", "1.0", "ListTasks", map[string]any{"pageSize": 1, "status": "TASK_STATE_COMPLETED"})
	next := v1result(t, b)["nextPageToken"].(string)
	if next == "" {
		t.Fatal("ListTasks: no next page")
	}
	call("1.0 ListTasks, page 2", "1.0", "ListTasks", map[string]any{"pageSize": 1, "status": "TASK_STATE_COMPLETED", "pageToken": next, "includeArtifacts": true, "historyLength": 0})
	call("0.3 tasks/list", "", "tasks/list", map[string]any{"page_size": 1, "status": "completed"})
	call("1.0 ListTasks with a bad token", "1.0", "ListTasks", map[string]any{"pageToken": "bm90LWEtdG9rZW4"})

	// The errors 1.0 requires.
	call("1.0 GetTask of an unknown task", "1.0", "GetTask", map[string]any{"id": "no-such-task"})
	msg := v1Send("w-4", "demo::echo", map[string]any{}, false)
	msg["message"].(map[string]any)["taskId"] = task10
	call("1.0 SendMessage to a terminal task", "1.0", "SendMessage", msg)
	msg = v1Send("w-5", "demo::echo", map[string]any{}, false)
	msg["message"].(map[string]any)["taskId"] = "no-such-task"
	call("1.0 SendMessage to an unknown taskId", "1.0", "SendMessage", msg)
	msg = v1Send("w-6", "demo::echo", map[string]any{}, false)
	msg["message"].(map[string]any)["taskId"] = task10
	msg["message"].(map[string]any)["contextId"] = "another-context"
	call("1.0 SendMessage with a contextId that is not the task's", "1.0", "SendMessage", msg)
	call("1.0 SubscribeToTask of a terminal task", "1.0", "SubscribeToTask", map[string]any{"id": task10})
	call("1.0 GetExtendedAgentCard without keys", "1.0", "GetExtendedAgentCard", nil)
	call("1.0 SendMessage with bad params", "1.0", "SendMessage", map[string]any{"message": map[string]any{"role": "user", "parts": []any{}}})

	// A stream, in 1.0: a task, then updates, then the end.
	s := openStream(t, nil, base, 9, "SendStreamingMessage", v1Send("w-7", "demo::sleep", map[string]any{"seconds": 0.3}, false),
		http.Header{"A2A-Version": {"1.0"}})
	for _, ev := range s.rest(t) {
		record("1.0 SendStreamingMessage event "+ev.ID, []byte(ev.Data))
	}

	// The same stream in 0.3: a task, then updates, the last with final.
	s = openStream(t, nil, base, 10, "message/stream", sendParams("w-8", "demo::sleep", map[string]any{"seconds": 0.3}, true), nil)
	for _, ev := range s.rest(t) {
		record("0.3 message/stream event "+ev.ID, []byte(ev.Data))
	}

	golden(t, "methods", log.String())

	// The 1.0 webhook heard of the cancel as a 1.0 StreamResponse.
	eventually(t, 10*time.Second, "the webhook delivery", func() bool { return len(hook.delivered()) > 0 })
	d := hook.delivered()[0]
	if ct, auth, tok := d.Header.Get("Content-Type"), d.Header.Get("Authorization"), d.Header.Get("X-A2A-Notification-Token"); ct != "application/a2a+json" || auth != "Bearer s3cret" || tok != "tok" {
		t.Errorf("webhook headers: Content-Type %q, Authorization %q, token %q", ct, auth, tok)
	}
	golden(t, "webhook-v1", n.apply(d.Body))
}

func decodeJSON(tb testing.TB, b []byte) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatalf("%v: %s", err, b)
	}
	return m
}
