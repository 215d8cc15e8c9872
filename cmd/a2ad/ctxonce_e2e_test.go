//go:build linux

package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks/stores"
)

// stepsScript reports 100 small progress notes, then answers.
const stepsScript = "#!/bin/sh\ncat >/dev/null\ni=1\nwhile [ $i -le 100 ]; do\n\tprintf '{\"a2a.progress\": \"step %d\"}\\n' $i\n\ti=$((i+1))\ndone\necho '{}'\n"

// TestContextIDStoredOnceOnTheBinary is issue 25 item 1's "store it once
// per task" on the real binary, on each store: two keys call the same
// function, which reports 100 progress notes, one in a context id of the
// longest length (256 bytes), the other in a one-byte one. What the first
// key stores, as the binary's quota refusal reports it, is within a few
// context ids of what the second does, not 100 times one more; and every
// message reads back with its ids: tasks/get on the binary, the events
// from the store after it stopped. Before (record v1), each note's event
// repeated the context id and the task id.
func TestContextIDStoredOnceOnTheBinary(t *testing.T) {
	skipShort(t, "runs the real binary and a child process")
	t.Run("bbolt", func(t *testing.T) { contextIDStoredOnce(t, filepath.Join(t.TempDir(), "a2ad.db")) })
	t.Run("postgres", func(t *testing.T) { contextIDStoredOnce(t, pgtest.Schema(t)) })
}

func contextIDStoredOnce(t *testing.T, store string) {
	const quota = 200_000
	dir := t.TempDir()
	script := filepath.Join(dir, "steps.sh")
	putScript(t, script, stepsScript)
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, fmt.Sprintf(`functions:
  - id: exec::steps
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    exec: {argv: [%q]}
`, script))
	keys := filepath.Join(dir, "keys.yaml")
	long, short := strings.Repeat("c", a2a.MaxIDBytes), "c"
	callers := map[string]string{long: "longctx", short: "shortctx"}
	secrets := map[string]string{}
	for _, who := range callers {
		secrets[who] = mustAppendKey(t, keys, who, "partner")
	}
	p := startBinary(t, catalog, store, "--keys", keys, "--quota-bytes", fmt.Sprint(quota))
	ids := map[string]string{}   // the task of each context
	stored := map[string]int64{} // what each context's caller stores
	for ctxID, who := range callers {
		params := sendParams("m-"+who, "exec::steps", map[string]any{}, true)
		params["message"].(map[string]any)["contextId"] = ctxID
		h := http.Header{"Authorization": {"Bearer " + secrets[who]}}
		resp, body := postRaw(t, p.base, rpcBody("message/send", params), h)
		task := resultTask(t, decodeAnswer(t, resp, body))
		if state(task) != "completed" || task["contextId"] != ctxID {
			t.Fatalf("%s's call: %s in context %.20q", who, state(task), task["contextId"])
		}
		id := task["id"].(string)
		ids[ctxID] = id
		resp, body = postRaw(t, p.base, rpcBody("tasks/get", map[string]any{"id": id}), h)
		got := resultTask(t, decodeAnswer(t, resp, body))
		hist, _ := got["history"].([]any)
		if len(hist) == 0 {
			t.Fatalf("%s's task has no history: %s", who, body)
		}
		for i, m := range hist {
			m := m.(map[string]any)
			if m["contextId"] != ctxID || m["taskId"] != id {
				t.Errorf("%s's history message %d: context %.20q, task %q; want its task's", who, i, m["contextId"], m["taskId"])
			}
		}
		// A message as large as the quota is refused, saying what the
		// caller stores.
		pad := map[string]any{"pad": strings.Repeat("x", quota)}
		resp, body = postRaw(t, p.base, rpcBody("message/send", sendParams("probe-"+who, "exec::steps", pad, true)), h)
		code, _, data := answerError(t, resp.StatusCode, body)
		used, _ := data["used"].(float64)
		if code != -32055 || used <= 0 {
			t.Fatalf("%s's probe: %s\nwant -32055 saying what it stores", who, body)
		}
		stored[ctxID] = int64(used)
	}
	more := stored[long] - stored[short]
	t.Logf("stored: %d bytes in the 256-byte context, %d in the 1-byte one: %d more", stored[long], stored[short], more)
	if more > 8*a2a.MaxIDBytes {
		t.Errorf("a 256-byte context id took %d bytes more than a 1-byte one over 100 notes: it is stored with each", more)
	}
	if err := p.terminate(t, 15*time.Second); err != nil {
		t.Fatalf("a2ad exited with %v", err)
	}

	kind, target := stores.Of(store)
	s, err := kind.Open(t.Context(), target, stores.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for ctxID, who := range callers {
		evs, err := s.Events(t.Context(), ids[ctxID], 0)
		if err != nil {
			t.Fatal(err)
		}
		notes := 0
		for _, e := range evs {
			if e.Status == nil || e.Status.Message == nil {
				continue
			}
			notes++
			if m := e.Status.Message; m.ContextID != ctxID || m.TaskID != ids[ctxID] {
				t.Errorf("%s's event %d read back in context %.20q, task %q; want its task's", who, e.Seq, m.ContextID, m.TaskID)
			}
		}
		if notes < 100 {
			t.Errorf("%s's task has %d events with a message, want the 100 notes at least", who, notes)
		}
	}
}
