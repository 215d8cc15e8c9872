package main

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
)

// TestKeyRotationE2E walks the README's rotation against the real binary,
// on a keys file of today's format (version 1, one key per caller): a
// second key for acme, both working at once, the old one revoked (its
// stream ends on the reload, the new key goes on), keys list with each
// key's last use from the running server, and the key ids in the audit
// trail.
func TestKeyRotationE2E(t *testing.T) {
	dir := t.TempDir()
	keys, audit := filepath.Join(dir, "keys.yaml"), filepath.Join(dir, "audit.log")
	const oldSecret = "a2ad_old-acme-secret-00000000000000000000000000"
	putFile(t, keys, "keys:\n  - id: acme\n    hash: "+callers.HashSecret(oldSecret)+"\n    tiers: [partner]\n")
	oldID := callers.KeyIDOf(sha256Of(oldSecret))
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--audit-log", audit)

	send := func(secret, msgID string) int {
		resp, _ := postRaw(t, p.base, rpcBody("message/send", sendParams(msgID, "demo::echo", map[string]any{}, true)),
			http.Header{"Authorization": {"Bearer " + secret}})
		return resp.StatusCode
	}
	if s := send(oldSecret, "m-1"); s != http.StatusOK {
		t.Fatalf("old key: HTTP %d", s)
	}

	// A second key for acme: no --tier, it takes acme's.
	out, errOut := runOK(t, "keys", "create", "--keys", keys, "--id", "acme")
	newSecret := strings.TrimSpace(out)
	if !strings.HasPrefix(newSecret, "a2ad_") || !strings.Contains(errOut, `added to caller "acme" the key `) {
		t.Fatalf("keys create: stdout %q stderr %q", out, errOut)
	}
	newID := callers.KeyIDOf(sha256Of(newSecret))
	reload := func(until func() bool) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); !until(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the reload did not take effect within 10s")
			}
		}
	}
	reload(func() bool { return send(newSecret, "probe-"+time.Now().String()) == http.StatusOK })
	if s := send(oldSecret, "m-2"); s != http.StatusOK {
		t.Errorf("old key beside the new one: HTTP %d", s)
	}

	// A stream opened with the old key ends when the old key is revoked.
	stream := openStream(t, nil, p.base, "s-old", "message/stream", sendParams("s-old", "demo::sleep", map[string]any{"seconds": 30}, false),
		http.Header{"Authorization": {"Bearer " + oldSecret}})
	if _, ok := stream.next(t, 5*time.Second); !ok {
		t.Fatal("stream: no first event")
	}
	out, errOut = runOK(t, "keys", "revoke", "--keys", keys, "--id", "acme", "--key-id", oldID)
	if strings.TrimSpace(out) != oldID || !strings.Contains(errOut, `revoked 1 key(s) of caller "acme"`) {
		t.Fatalf("keys revoke: stdout %q stderr %q", out, errOut)
	}
	reload(func() bool { return send(oldSecret, "probe-"+time.Now().String()) == http.StatusUnauthorized })
	evs := stream.rest(t)
	if len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Data, `"code":-32054`) {
		t.Errorf("the revoked key's stream: %+v, want a last -32054 event", evs)
	}
	if s := send(newSecret, "m-3"); s != http.StatusOK {
		t.Errorf("new key after the revocation: HTTP %d", s)
	}

	// keys list: both keys, the old one revoked, each with its last use.
	out, errOut = runOK(t, "keys", "list", "--keys", keys, "--server", p.admin)
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 6 && f[0] == "acme" {
			rows[f[1]] = f[2:]
		}
	}
	today := time.Now().UTC().Format("2006-01-02T")
	if r := rows[oldID]; len(r) != 4 || r[0] != "revoked" || r[1] != "-" || !strings.HasPrefix(r[2], today) || !strings.HasPrefix(r[3], today) {
		t.Errorf("old key's row %q in:\n%s%s", r, out, errOut)
	}
	if r := rows[newID]; len(r) != 4 || r[0] != "active" || !strings.HasPrefix(r[1], today) || r[2] != "-" || !strings.HasPrefix(r[3], today) {
		t.Errorf("new key's row %q in:\n%s", r, out)
	}
	if data, _ := os.ReadFile(keys); strings.Contains(out, strings.TrimPrefix(callers.HashSecret(newSecret), "sha256:")[:16]) ||
		!bytes.Contains(data, []byte("version: 2")) {
		t.Errorf("keys list shows a hash, or the file is not version 2:\n%s\n%s", out, data)
	}

	// The audit trail names the key of each call (written as each ends).
	perKey := map[string]int{}
	for _, r := range auditFile(t, audit) {
		if r["caller"] == "acme" {
			key, _ := r["key_id"].(string)
			perKey[key]++
		}
	}
	// The old key: m-1, m-2, the stream and any probe served before the
	// reload; the new one: the probes and m-3.
	if perKey[oldID] < 3 || perKey[newID] < 2 || len(perKey) != 2 {
		t.Errorf("acme's audit records per key_id: %v, want 3 or more of %s, 2 or more of %s, none without", perKey, oldID, newID)
	}
}

// sha256Of is the SHA-256 of secret, as a keys file's hash holds it.
func sha256Of(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// runOK runs the real binary with args and returns its stdout and
// stderr; it fails the test if it exits non-zero.
func runOK(tb testing.TB, args ...string) (stdout, stderr string) {
	tb.Helper()
	code, out, errOut := runBinary(tb, args...)
	if code != 0 {
		tb.Fatalf("a2ad %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	return out, errOut
}
