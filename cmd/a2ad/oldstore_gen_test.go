//go:build oldstoregen

package main

// TestGenerateOldStore writes testdata/store-17d0fe1 again with an a2ad
// binary of commit 17d0fe1 (see the README.md there):
//
//	go test -tags oldstoregen -run TestGenerateOldStore ./cmd/a2ad/ -args -old-a2ad /tmp/a2ad-old
//
// It is not part of go test ./...: the file it writes is the point, and
// it must come from the old binary, not this tree's.

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/testkit"
)

var oldA2AD = flag.String("old-a2ad", "", "the a2ad binary (of commit 17d0fe1) that writes testdata/store-17d0fe1")

// oldGen makes tasks on the old binary and records what it was sent and
// answered.
type oldGen struct {
	t    *testing.T
	base string
	old  *oldStore
	ids  []string // the tasks, in the order made
	of   map[string]string
}

// send sends params (JSON) as caller and records it; it returns the task
// the answer names.
func (g *oldGen) send(caller, version, method, params string) string {
	g.t.Helper()
	answer := oldCall(g.t, g.base, g.old.Secrets[caller], version, method, json.RawMessage(params))
	id, _ := resultOf(g.t, answer)["id"].(string)
	if id == "" {
		g.t.Fatalf("%s: no task: %s", params, answer)
	}
	g.old.Sends = append(g.old.Sends, oldSend{Caller: caller, Version: version, Method: method, Params: json.RawMessage(params), TaskID: id})
	if _, ok := g.of[id]; !ok {
		g.of[id] = caller
		g.ids = append(g.ids, id)
	}
	return id
}

// waitState waits until task id of caller is in state want.
func (g *oldGen) waitState(caller, id, want string) {
	g.t.Helper()
	p, _ := json.Marshal(map[string]string{"id": id})
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		task := resultOf(g.t, oldCall(g.t, g.base, g.old.Secrets[caller], "", "tasks/get", p))
		if task["status"].(map[string]any)["state"] == want {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("task %s is not %s: %v", id, want, task["status"])
		}
	}
}

func TestGenerateOldStore(t *testing.T) {
	if *oldA2AD == "" {
		t.Skip("needs -old-a2ad, the binary of commit 17d0fe1")
	}
	work := t.TempDir()
	keys := filepath.Join(work, "keys.yaml")
	old := &oldStore{Commit: "17d0fe1c448dd91c21978a55b0925d7d902a5809", Secrets: map[string]string{"": ""}, Lists: map[string]json.RawMessage{}}
	for _, c := range [][2]string{{"acme", "partner"}, {"ops", "internal"}} {
		out, err := exec.Command(*oldA2AD, "keys", "create", "--keys", keys, "--id", c[0], "--tier", c[1]).Output()
		if err != nil {
			t.Fatal(err)
		}
		old.Secrets[c[0]] = strings.TrimSpace(string(out))
	}
	backend := newOldBackend(t)
	t.Setenv("A2AD_OLDSTORE_BACKEND", backend.URL)
	hook := newHookReceiver(t, nil)
	store := filepath.Join(work, "a2ad.db")
	p := startProgram(t, *oldA2AD, filepath.Join(oldStoreDir, "catalog.yaml"), store,
		"--keys", keys, "--allow-anonymous", "--anonymous-tier", "public", "--push-allow", pushAllowLoopback)
	g := &oldGen{t: t, base: p.base, old: old, of: map[string]string{}}
	makeOldTasks(g, hook.URL)
	for deadline := time.Now().Add(15 * time.Second); hook.arrivals() < 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the push delivery did not arrive")
		}
	}
	recordOldTasks(g)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("old a2ad did not stop cleanly: %v\n%s", err, p.logs)
	}

	out := filepath.Join(oldStoreDir, "a2ad.db")
	_ = os.Remove(out)
	if b, err := exec.Command(*oldA2AD, "store", "compact", "--store", store, "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("compact: %v\n%s", err, b)
	}
	testkit.CopyFile(t, keys, filepath.Join(oldStoreDir, "keys.yaml"))
	// Indented, but with the escapes as sent: a data part's "<" and
	// "\u003c" hash differently.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(oldStoreDir, "calls.json"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// makeOldTasks makes a task of every kind: completed (with every kind of
// part and metadata; with streamed artifacts; with a webhook; in 1.0),
// failed, rejected, canceled, input-required then continued,
// input-required and left waiting (with a 1.0 webhook), one that names no
// skill, and tasks of another caller (with a messageId acme used) and of
// the anonymous caller.
func makeOldTasks(g *oldGen, hookURL string) {
	g.send("acme", "", "message/send", `{"message":{"kind":"message","messageId":"acme-echo","contextId":"ctx-acme","role":"user",
		"parts":[
			{"kind":"data","data":{ "skill" : "test::echo", "input": {"message":"h\u00e9 <&> \u2028","n":1.50,"big":1e21,"list":[true,null,"x"]} }},
			{"kind":"text","text":"a note\twith a tab, h\u00e9 <&>","metadata":{"lang":"en","w":0.000001}},
			{"kind":"file","file":{"name":"hello.txt","mimeType":"text/plain","bytes":"aGVsbG8="}},
			{"kind":"file","file":{"uri":"https://files.example/f?a=1&b=2"}}],
		"referenceTaskIds":["t-elsewhere"],"extensions":["https://ext.example/x"],
		"metadata":{"trace":"t-1","nested":{"b":[1,true,null],"a":"<"}}},
		"configuration":{"blocking":true},"metadata":{"req":"r-1"}}`)
	g.send("acme", "", "message/send", send03("acme-stream", "test::stream", `{}`, true, ""))
	g.send("acme", "", "message/send", send03("acme-fail", "test::fail", `{}`, true, ""))
	g.send("acme", "", "message/send", send03("acme-internal", "test::internal", `{}`, true, ""))
	slow := g.send("acme", "", "message/send", send03("acme-slow", "test::slow", `{"wait":true}`, false, ""))
	g.waitState("acme", slow, "working")
	oldCall(g.t, g.base, g.old.Secrets["acme"], "", "tasks/cancel", json.RawMessage(`{"id":"`+slow+`"}`))
	g.waitState("acme", slow, "canceled")
	ask := g.send("acme", "", "message/send", send03("acme-ask", "test::ask", `{}`, true, ""))
	g.send("acme", "", "message/send", `{"message":{"kind":"message","messageId":"acme-answer","taskId":"`+ask+`","role":"user",
		"parts":[{"kind":"data","data":{"answer":"blue"}}]},"configuration":{"blocking":true}}`)
	g.send("acme", "", "message/send", send03("acme-push", "test::echo", `{"x":1}`, true,
		`,"pushNotificationConfig":{"id":"hook-1","url":"`+hookURL+`","token":"tok-1","authentication":{"schemes":["Bearer"],"credentials":"cred-1"}}`))
	wait := g.send("acme", "", "message/send", send03("acme-wait", "test::ask", `{}`, true, ""))
	oldCall(g.t, g.base, g.old.Secrets["acme"], "1.0", "CreateTaskPushNotificationConfig", json.RawMessage(`{"taskId":"`+wait+
		`","id":"hook-v1","url":"`+hookURL+`/v1","token":"tok-v1","authentication":{"scheme":"Bearer","credentials":"cred-v1"}}`))
	g.send("acme", "", "message/send", `{"message":{"kind":"message","messageId":"acme-noskill","role":"user",
		"parts":[{"kind":"text","text":"hello there"}]},"configuration":{"blocking":true}}`)
	g.send("acme", "1.0", "SendMessage", `{"message":{"messageId":"acme-v1","role":"ROLE_USER","parts":[
		{"data":{"skill":"test::echo","input":{"v":1}}},
		{"raw":"aGk","filename":"hi.txt","mediaType":"text/plain"},
		{"url":"https://files.example/v1","metadata":{"m":1}}],"metadata":{"k":"v"}}}`)
	g.send("ops", "", "message/send", send03("acme-echo", "test::internal", `{"same":"messageId, another caller"}`, true, ""))
	g.send("", "", "message/send", send03("anon-echo", "test::echo", `{"who":"anyone"}`, true, ""))

	reused := send03("acme-stream", "test::stream", `{"another":"message"}`, true, "")
	g.old.Reused = oldSend{Caller: "acme", Method: "message/send", Params: json.RawMessage(reused),
		Answer: oldCall(g.t, g.base, g.old.Secrets["acme"], "", "message/send", json.RawMessage(reused))}
}

// send03 is the params of a 0.3 message/send of skill with input, and
// more configuration (`,"name":…`).
func send03(messageID, skill, input string, blocking bool, more string) string {
	b := "false"
	if blocking {
		b = "true"
	}
	return `{"message":{"kind":"message","messageId":"` + messageID + `","role":"user","parts":[{"kind":"data","data":{"skill":"` +
		skill + `","input":` + input + `}}]},"configuration":{"blocking":` + b + more + `}}`
}

// recordOldTasks records every task as the old a2ad answers for it, and
// each caller's listing.
func recordOldTasks(g *oldGen) {
	for _, id := range g.ids {
		caller := g.of[id]
		secret := g.old.Secrets[caller]
		p, _ := json.Marshal(map[string]string{"id": id})
		g.old.Tasks = append(g.old.Tasks, oldTask{
			Caller: caller, ID: id,
			Get:   oldCall(g.t, g.base, secret, "", "tasks/get", p),
			GetV1: oldCall(g.t, g.base, secret, "1.0", "GetTask", p),
			Push:  oldCall(g.t, g.base, secret, "", "tasks/pushNotificationConfig/list", p),
		})
	}
	for caller, secret := range g.old.Secrets {
		g.old.Lists[caller] = oldCall(g.t, g.base, secret, "", "tasks/list", json.RawMessage(`{}`))
	}
}
