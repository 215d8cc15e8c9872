package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// TestIdempotencyWindow runs the real binary on each store with the
// default window (a messageId is remembered as long as its task, pinned),
// a caller whose keys entry turns deduplication off, a server whose
// window is 1s (a messageId sent again after the window is a new task),
// and a server whose window is 0.
func TestIdempotencyWindow(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"bbolt":    func(t *testing.T) string { return filepath.Join(t.TempDir(), "a2ad.db") },
		"postgres": func(t *testing.T) string { return pgtest.Schema(t) },
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			t.Run("keys", func(t *testing.T) { idemByKeys(t, store(t)) })
			t.Run("window", func(t *testing.T) { idemWindowed(t, store(t)) })
			t.Run("off", func(t *testing.T) { idemOff(t, store(t)) })
		})
	}
}

// idemSend sends an echo of text under msgID with key ("" for none) and
// returns the task's id, or the error's code and message.
func idemSend(t *testing.T, base, key, msgID, text string) (id string, code float64, msg string) {
	t.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	_, body := postRaw(t, base, rpcBody("message/send", sendParams(msgID, "demo::echo", map[string]any{"message": text}, true)), h)
	var ans map[string]any
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatalf("%s: %v: %s", msgID, err, body)
	}
	if e, ok := ans["error"].(map[string]any); ok {
		return "", e["code"].(float64), e["message"].(string)
	}
	task := resultTask(t, ans)
	if state(task) != "completed" {
		t.Fatalf("%s: task %v", msgID, task)
	}
	return task["id"].(string), 0, ""
}

// idemByKeys: acme keeps the default, bob's entry says 0.
func idemByKeys(t *testing.T, store string) {
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	acme := mustAppendKey(t, keys, "acme", "partner")
	bob := mustAppendKey(t, keys, "bob", "partner")
	b, err := os.ReadFile(keys)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "id: bob\n", "id: bob\n    idempotency_window: 0\n", 1)
	if err := os.WriteFile(keys, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, exampleCatalog, store, "--keys", keys, "--expose-all")

	// The default: the same message again is the same task, another
	// message under its id is refused.
	first, _, _ := idemSend(t, p.base, acme, "idem-1", "hi")
	if again, _, _ := idemSend(t, p.base, acme, "idem-1", "hi"); again != first {
		t.Fatalf("acme's resend made task %s, want %s", again, first)
	}
	if _, code, msg := idemSend(t, p.base, acme, "idem-1", "other"); code != -32602 || msg != "messageId reused with a different message" {
		t.Fatalf("acme's reused messageId: %v %q", code, msg)
	}
	// bob's window is 0: every send is a new message, the same or not.
	b1, _, _ := idemSend(t, p.base, bob, "idem-1", "hi")
	b2, _, _ := idemSend(t, p.base, bob, "idem-1", "hi")
	b3, code, msg := idemSend(t, p.base, bob, "idem-1", "other")
	if b1 == "" || b2 == "" || b3 == "" || b1 == b2 || b2 == b3 || b1 == first {
		t.Fatalf("bob's sends without deduplication: tasks %q %q %q (error %v %q), acme's %s", b1, b2, b3, code, msg, first)
	}
}

// idemWindowed: a server whose window is 1s remembers a messageId at
// least 1s and less than 2s.
func idemWindowed(t *testing.T, store string) {
	p := startBinary(t, exampleCatalog, store, "--idempotency-window", "1s", "--expose-all")
	first, _, _ := idemSend(t, p.base, "", "idem-w", "hi")
	if again, _, _ := idemSend(t, p.base, "", "idem-w", "hi"); again != first {
		t.Fatalf("a resend within the window made task %s, want %s", again, first)
	}
	if _, code, msg := idemSend(t, p.base, "", "idem-w", "other"); code != -32602 || msg != "messageId reused with a different message" {
		t.Fatalf("a reused messageId within the window: %v %q", code, msg)
	}
	time.Sleep(2100 * time.Millisecond)
	later, code, msg := idemSend(t, p.base, "", "idem-w", "other")
	if later == "" || later == first {
		t.Fatalf("after the window, the messageId with another message: task %q (error %v %q), first %s", later, code, msg, first)
	}
	if again, _, _ := idemSend(t, p.base, "", "idem-w", "other"); again != later {
		t.Fatalf("a resend within the new window made task %s, want %s", again, later)
	}
}

// idemOff: a server whose window is 0 takes every send as a new message;
// a key's own idempotency_window ("retention") brings deduplication back
// for its caller.
func idemOff(t *testing.T, store string) {
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	acme := mustAppendKey(t, keys, "acme", "partner")
	b, err := os.ReadFile(keys)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "id: acme\n", "id: acme\n    idempotency_window: retention\n", 1)
	if err := os.WriteFile(keys, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, exampleCatalog, store, "--idempotency-window", "0", "--keys", keys, "--allow-anonymous", "--anonymous-tier", "partner", "--expose-all")
	first, _, _ := idemSend(t, p.base, "", "idem-0", "hi")
	second, _, _ := idemSend(t, p.base, "", "idem-0", "other")
	if first == "" || second == "" || first == second {
		t.Fatalf("without deduplication, a reused messageId with another message: tasks %q and %q", first, second)
	}
	a1, _, _ := idemSend(t, p.base, acme, "idem-0", "hi")
	if a2, _, _ := idemSend(t, p.base, acme, "idem-0", "hi"); a2 != a1 || a1 == "" {
		t.Fatalf("acme (idempotency_window: retention): tasks %q and %q, want one", a1, a2)
	}
}
