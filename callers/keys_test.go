package callers_test

// Over 600 lines: mostly tables of keys files, their problems and the
// exact message each gets.

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
	"github.com/google/go-cmp/cmp"
)

// writeKeysFile writes a keys file in a fresh temporary directory and
// returns its path.
func writeKeysFile(tb testing.TB, content string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "keys.yaml")
	rewriteKeysFile(tb, path, content)
	return path
}

// rewriteKeysFile replaces the keys file at path.
func rewriteKeysFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// mustLoadKeys loads path and fails the test on error.
func mustLoadKeys(tb testing.TB, path string) *callers.Keys {
	tb.Helper()
	ks, err := callers.LoadKeys(path)
	if err != nil {
		tb.Fatalf("LoadKeys: %v", err)
	}
	return ks
}

// Secrets used by the tests and their hashes.
const (
	secretBilling = "a2ad_billing-secret-000000000000000000000000000"
	secretPartner = "a2ad_partner-secret-000000000000000000000000000"
	secretOld     = "a2ad_old-secret-0000000000000000000000000000000"
)

var (
	hashBilling = callers.HashSecret(secretBilling)
	hashPartner = callers.HashSecret(secretPartner)
	hashOld     = callers.HashSecret(secretOld)
)

// goodKeys is a valid keys file with an enabled key with a rate, an
// enabled key without one, and a disabled key.
func goodKeys() string {
	return `# callers of a2ad
keys:
  - id: billing
    hash: "` + hashBilling + `"
    tiers: [internal, gold]
    rate: {per_second: 2.5, burst: 10}
  - id: "partner:acme"
    hash: sha256:` + strings.ToUpper(hashPartner[len("sha256:"):]) + `
    tiers:
      - public
    enabled: true
  - id: old
    hash: ` + hashOld + `
    tiers: [public]
    enabled: false
`
}

func TestLoadKeysGood(t *testing.T) {
	// The partner's hash is in upper-case hex, which is accepted too.
	ks := mustLoadKeys(t, writeKeysFile(t, goodKeys()))
	if got := ks.Len(); got != 3 {
		t.Fatalf("Len() = %d, want 3", got)
	}

	key, ok := ks.Authenticate(secretBilling)
	if !ok {
		t.Fatal("Authenticate(billing secret) = false, want true")
	}
	want := callers.Key{
		CallerID: "billing",
		Tiers:    []string{"internal", "gold"},
		Rate:     &callers.Rate{PerSecond: 2.5, Burst: 10},
		Enabled:  true,
	}
	copy(want.Hash[:], mustHex(t, hashBilling))
	want.ID = callers.KeyIDOf(want.Hash) // a version 1 entry's one key
	if diff := cmp.Diff(want, key); diff != "" {
		t.Errorf("Authenticate(billing secret) mismatch (-want +got):\n%s", diff)
	}

	key, ok = ks.Authenticate(secretPartner)
	if !ok || key.CallerID != "partner:acme" || key.Rate != nil || !key.Enabled ||
		!cmp.Equal(key.Tiers, []string{"public"}) {
		t.Errorf("Authenticate(partner secret) = %+v, %v; want partner:acme, [public], no rate", key, ok)
	}
}

func mustHex(tb testing.TB, hash string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(hash, "sha256:"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestLoadKeysEmptyList(t *testing.T) {
	for _, content := range []string{"keys: []\n", "keys:\n"} {
		ks := mustLoadKeys(t, writeKeysFile(t, content))
		if ks.Len() != 0 {
			t.Errorf("%q: Len() = %d, want 0", content, ks.Len())
		}
		if _, ok := ks.Authenticate(secretBilling); ok {
			t.Errorf("%q: Authenticate = true, want false", content)
		}
	}
}

// TestLoadKeysProblems checks that every problem is reported at once, in
// file order, with its line, column, pointer and caller.
func TestLoadKeysProblems(t *testing.T) {
	content := `keys:
  - id: a
    hash: ` + hashBilling + `
    tiers: [t]
    tier: [x]
  - id: a
    hash: ` + hashPartner + `
    tiers: [t]
  - id: b
    hash: ` + hashBilling + `
    tiers: [t]
  - id: c
    hash: sha256:zz
    tiers: [t]
  - id: d
    hash: ` + hashOld + `
  - id: e
    hash: ` + callers.HashSecret("e") + `
    tiers: []
    rate: {per_second: 0, burst: 0}
  - id: "bad id!"
    hash: ` + callers.HashSecret("f") + `
    tiers: [t]
  - id: g
    hash: ` + secretPartner + `
    tiers: [t, t]
    rate: {per_second: fast}
    enabled: "yes"
    idempotency_window: -5m
`
	path := writeKeysFile(t, content)
	_, err := callers.LoadKeys(path)
	var le *callers.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("LoadKeys error = %v (%T), want *callers.LoadError", err, err)
	}
	want := []string{
		`5:5: /keys/0/tier (caller "a"): unknown key "tier" in key entry; allowed: id, hash, keys, tiers, rate, enabled, quota_tasks, quota_bytes, max_history, max_calls, rate_bytes, idempotency_window, tls_subjects`,
		`6:9: /keys/1/id (caller "a"): duplicate id "a" (first defined at line 2)`,
		`10:11: /keys/2/hash (caller "b"): duplicate hash: the same secret as caller "a" (line 3)`,
		`13:11: /keys/3/hash (caller "c"): hash must be "sha256:" followed by 64 hex digits`,
		`15:5: /keys/4 (caller "d"): tiers is required`,
		`19:12: /keys/5/tiers (caller "e"): tiers must list at least one tier`,
		`20:24: /keys/5/rate/per_second (caller "e"): rate.per_second must be a positive number, got 0`,
		`20:34: /keys/5/rate/burst (caller "e"): rate.burst must be an integer from 1 to 2147483647, got 0`,
		`21:9: /keys/6/id: id must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'`,
		`25:11: /keys/7/hash (caller "g"): hash must be "sha256:" followed by 64 hex digits`,
		`26:16: /keys/7/tiers/1 (caller "g"): tiers[1] repeats tier "t"`,
		`27:11: /keys/7/rate (caller "g"): rate.burst is required`,
		`27:24: /keys/7/rate/per_second (caller "g"): rate.per_second must be a number, got a string`,
		`28:14: /keys/7/enabled (caller "g"): enabled must be true or false, got a string`,
		`29:25: /keys/7/idempotency_window (caller "g"): idempotency_window must be a duration such as 10m, 0 for no deduplication, or "retention", got "-5m"`,
	}
	var got []string
	for _, p := range le.Problems {
		got = append(got, p.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}

	// Error() prefixes each line with the path.
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("Error() has %d lines, want %d", len(lines), len(want))
	}
	for i, line := range lines {
		if line != path+":"+want[i] {
			t.Errorf("Error() line %d = %q, want %q", i, line, path+":"+want[i])
		}
	}

	// No secret or hash value appears in the error.
	msg := err.Error()
	for _, s := range []string{secretPartner, hashBilling[7:15], hashPartner[7:15], hashOld[7:15], "zz"} {
		if strings.Contains(msg, s) {
			t.Errorf("error contains secret or hash material %q:\n%s", s, msg)
		}
	}
	if m := regexp.MustCompile(`[0-9a-fA-F]{16}`).FindString(msg); m != "" {
		t.Errorf("error contains a hex run %q:\n%s", m, msg)
	}
}

func TestLoadKeysFileProblems(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"empty", "", "keys file is empty; want a mapping with a keys list"},
		{"not a mapping", "- a\n", "1:1: the keys file must be a mapping with a keys list, got a list"},
		{"no keys", "other: 1\n", "1:1: /other: unknown key \"other\" at top level; allowed: keys, version\n" +
			"1:1: keys is required"},
		{"keys not a list", "keys: 3\n", "1:7: /keys: keys must be a list, got an integer"},
		{"entry not a mapping", "keys: [x]\n", "1:8: /keys/0: each key entry must be a mapping, got a string"},
		{"no id or hash", "keys:\n  - tiers: [t]\n", "2:5: /keys/0: id is required\n2:5: /keys/0: hash is required"},
		{"duplicate field", "keys:\n  - id: a\n    id: a\n", "2:5: /keys/0 (caller \"a\"): hash is required\n" +
			"2:5: /keys/0 (caller \"a\"): tiers is required\n" +
			"3:5: /keys/0/id (caller \"a\"): duplicate key \"id\" (first at line 2)"},
		{"two documents", "keys: []\n---\nkeys: []\n", "2:1: a keys file must be a single YAML document; found another one"},
		{"syntax", "keys: [\n", "not valid YAML: did not find expected node content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeKeysFile(t, tt.content)
			_, err := callers.LoadKeys(path)
			var le *callers.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("LoadKeys error = %v, want *callers.LoadError", err)
			}
			got := strings.ReplaceAll(err.Error(), path+":", "")
			if !strings.HasSuffix(got, tt.want) {
				t.Errorf("LoadKeys error =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}

	_, err := callers.LoadKeys(filepath.Join(t.TempDir(), "missing.yaml"))
	var le *callers.LoadError
	if !errors.As(err, &le) || !strings.HasSuffix(err.Error(), ":cannot read keys file: no such file or directory") {
		t.Errorf("LoadKeys(missing) = %v", err)
	}
}

func TestAuthenticate(t *testing.T) {
	ks := mustLoadKeys(t, writeKeysFile(t, goodKeys()))
	tests := []struct {
		name, secret, wantID string
	}{
		{"good", secretBilling, "billing"},
		{"other good", secretPartner, "partner:acme"},
		{"unknown", "a2ad_nope", ""},
		{"empty", "", ""},
		{"hash instead of secret", hashBilling, ""},
		{"secret with extra byte", secretBilling + " ", ""},
		{"disabled", secretOld, ""},
	}
	for _, tt := range tests {
		key, ok := ks.Authenticate(tt.secret)
		if ok != (tt.wantID != "") || key.CallerID != tt.wantID {
			t.Errorf("%s: Authenticate = %q, %v; want %q, %v", tt.name, key.CallerID, ok, tt.wantID, tt.wantID != "")
		}
	}

	// The returned key is a copy: changing it does not change the Keys.
	key, _ := ks.Authenticate(secretBilling)
	key.Tiers[0] = "admin"
	key.Rate.Burst = 1000
	again, _ := ks.Authenticate(secretBilling)
	if again.Tiers[0] != "internal" || again.Rate.Burst != 10 {
		t.Errorf("Authenticate returned shared state: %+v", again)
	}
}

func TestSecretFromRequest(t *testing.T) {
	tests := []struct {
		name    string
		headers [][2]string
		want    string
		err     error
	}{
		{"bearer", [][2]string{{"Authorization", "Bearer s1"}}, "s1", nil},
		{"lowercase bearer", [][2]string{{"Authorization", "bearer s1"}}, "s1", nil},
		{"upper BEARER, extra spaces", [][2]string{{"Authorization", "  BEARER   s1 "}}, "s1", nil},
		{"api key", [][2]string{{"X-API-Key", "s2"}}, "s2", nil},
		{"api key lowercase header", [][2]string{{"x-api-key", "s2"}}, "s2", nil},
		{"both headers, one key", [][2]string{{"Authorization", "Bearer s1"}, {"X-API-Key", " s1"}}, "s1", nil},
		{"basic", [][2]string{{"Authorization", "Basic x"}}, "", callers.ErrBadKey},
		{"bearer without token", [][2]string{{"Authorization", "Bearer "}}, "", callers.ErrBadKey},
		{"bare token", [][2]string{{"Authorization", "s1"}}, "", callers.ErrBadKey},
		{"empty api key", [][2]string{{"X-API-Key", " "}}, "", callers.ErrBadKey},
		{"missing", nil, "", callers.ErrNoKey},
		// Credentials that repeat or disagree.
		{"both headers, two keys", [][2]string{{"Authorization", "Bearer s1"}, {"X-API-Key", "s2"}}, "", callers.ErrConflictingKeys},
		{"basic beside an api key", [][2]string{{"Authorization", "Basic x"}, {"X-API-Key", "s2"}}, "", callers.ErrConflictingKeys},
		{"bearer beside a blank api key", [][2]string{{"Authorization", "Bearer s1"}, {"X-API-Key", ""}}, "", callers.ErrConflictingKeys},
		{"two authorization headers", [][2]string{{"Authorization", "Bearer s1"}, {"Authorization", "Bearer s2"}}, "", callers.ErrConflictingKeys},
		{"one bearer twice", [][2]string{{"Authorization", "Bearer s1"}, {"Authorization", "Bearer s1"}}, "", callers.ErrConflictingKeys},
		{"two api keys", [][2]string{{"X-API-Key", "s1"}, {"x-api-key", "s1"}}, "", callers.ErrConflictingKeys},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "/a2a", nil)
		for _, h := range tt.headers {
			r.Header.Add(h[0], h[1])
		}
		got, err := callers.SecretFromRequest(r)
		if got != tt.want || !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
			t.Errorf("%s: SecretFromRequest = %q, %v; want %q, %v", tt.name, got, err, tt.want, tt.err)
		}
	}
}

func TestKeysInForce(t *testing.T) {
	ks, err := callers.LoadKeys(writeKeysFile(t, goodKeys()))
	if err != nil {
		t.Fatal(err)
	}
	hash := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }
	for _, tt := range []struct {
		caller string
		hash   [32]byte
		want   bool
	}{
		{"billing", hash(secretBilling), true},
		{"partner:acme", hash(secretBilling), false}, // another caller's key
		{"billing", hash("a2ad_unknown"), false},     // not in the file
		{"old", hash(secretOld), false},              // disabled
	} {
		if got := ks.InForce(tt.caller, tt.hash); got != tt.want {
			t.Errorf("InForce(%q, …) = %v, want %v", tt.caller, got, tt.want)
		}
		if tiers, ok := ks.TiersOf(tt.caller, tt.hash); ok != tt.want || (ok && !slices.Equal(tiers, []string{"internal", "gold"})) {
			t.Errorf("TiersOf(%q, …) = %v, %v; want %v", tt.caller, tiers, ok, tt.want)
		}
	}
}

func TestNewSecret(t *testing.T) {
	format := regexp.MustCompile(`^a2ad_[A-Za-z0-9_-]{43}$`)
	seen := map[string]bool{}
	for range 1000 {
		s, err := callers.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		if !format.MatchString(s) {
			t.Fatalf("NewSecret() = %q, want a2ad_ and 43 base64url characters", s)
		}
		if b, err := base64.RawURLEncoding.DecodeString(s[len("a2ad_"):]); err != nil || len(b) != 32 {
			t.Fatalf("NewSecret() = %q does not decode to 32 bytes: %v", s, err)
		}
		if seen[s] {
			t.Fatalf("NewSecret() repeated %q", s)
		}
		seen[s] = true
	}
}

func TestHashSecret(t *testing.T) {
	const want = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := callers.HashSecret("abc"); got != want {
		t.Errorf("HashSecret(abc) = %q, want %q", got, want)
	}
}

func TestRegistryReload(t *testing.T) {
	reg, path := goodRegistry(t)
	if _, ok := reg.Keys().Authenticate(secretBilling); !ok {
		t.Fatal("billing not authenticated before revocation")
	}

	// Revoke billing by disabling it.
	rewriteKeysFile(t, path, strings.Replace(goodKeys(), "rate: {per_second: 2.5, burst: 10}", "enabled: false", 1))
	if err := reg.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if _, ok := reg.Keys().Authenticate(secretBilling); ok {
		t.Error("billing authenticated after it was disabled and reloaded")
	}
	if _, ok := reg.Keys().Authenticate(secretPartner); !ok {
		t.Error("partner not authenticated after reload")
	}

	// A broken file keeps the keys in force.
	before := reg.Keys()
	rewriteKeysFile(t, path, "keys:\n  - id: partner\n    tiers: []\n")
	err := reg.Reload()
	var le *callers.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Reload of a broken file = %v, want *callers.LoadError", err)
	}
	if reg.Keys() != before {
		t.Error("Reload of a broken file replaced the keys")
	}
	if _, ok := reg.Keys().Authenticate(secretPartner); !ok {
		t.Error("partner not authenticated after a failed reload")
	}

	// So does a missing file.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := reg.Reload(); err == nil || reg.Keys() != before {
		t.Errorf("Reload of a missing file = %v, keys replaced: %v", err, reg.Keys() != before)
	}
}

// goodRegistry is a registry of goodKeys, and its file.
func goodRegistry(tb testing.TB) (*callers.Registry, string) {
	tb.Helper()
	path := writeKeysFile(tb, goodKeys())
	reg, err := callers.NewRegistry(path)
	if err != nil {
		tb.Fatal(err)
	}
	return reg, path
}

func TestNewRegistryBadFile(t *testing.T) {
	if reg, err := callers.NewRegistry(writeKeysFile(t, "keys: 1\n")); err == nil || reg != nil {
		t.Errorf("NewRegistry(bad file) = %v, %v; want nil and an error", reg, err)
	}
}

// TestRegistryConcurrent runs readers against reloads, for the race
// detector.
func TestRegistryConcurrent(t *testing.T) {
	reg, _ := goodRegistry(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if _, ok := reg.Keys().Authenticate(secretPartner); !ok {
					t.Error("partner not authenticated during reloads")
					return
				}
			}
		})
	}
	for range 20 {
		if err := reg.Reload(); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
}

func TestAppendKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	nk, err := callers.AppendKey(path, "billing", []string{"internal", "gold"}, time.Now())
	secret := nk.Secret
	if err != nil {
		t.Fatalf("AppendKey (new file): %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("keys file mode = %o, want 600", mode)
	}
	reg, err := callers.NewRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	key, ok := reg.Keys().Authenticate(secret)
	if !ok || key.CallerID != "billing" || !key.Enabled || key.Rate != nil ||
		!cmp.Equal(key.Tiers, []string{"internal", "gold"}) {
		t.Fatalf("Authenticate(new secret) = %+v, %v", key, ok)
	}

	nk, err = callers.AppendKey(path, "partner", []string{"public"}, time.Now())
	second := nk.Secret
	if err != nil {
		t.Fatalf("AppendKey (existing file): %v", err)
	}
	if second == secret {
		t.Fatal("AppendKey returned the same secret twice")
	}
	if _, ok := reg.Keys().Authenticate(second); ok {
		t.Error("new key authenticated before Reload")
	}
	if err := reg.Reload(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, second} {
		if _, ok := reg.Keys().Authenticate(s); !ok {
			t.Errorf("key not authenticated after append and reload")
		}
	}

	// The file holds hashes, never a secret or any part of one.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, second} {
		if bytes.Contains(data, []byte(s)) || bytes.Contains(data, []byte(s[len("a2ad_"):len("a2ad_")+16])) {
			t.Errorf("keys file contains a secret:\n%s", data)
		}
		if !bytes.Contains(data, []byte(callers.HashSecret(s))) {
			t.Errorf("keys file lacks the hash of a secret:\n%s", data)
		}
	}

	// Other tiers for a caller in the file are refused and the file is left alone.
	const wantErr = `append key for caller "billing": its tiers are internal,gold, not gold: a new key takes its caller's tiers (change them in the file)`
	if _, err := callers.AppendKey(path, "billing", []string{"gold"}, time.Now()); err == nil || err.Error() != wantErr {
		t.Errorf("AppendKey(other tiers) = %v, want %s", err, wantErr)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after, data) {
		t.Error("AppendKey(other tiers) changed the file")
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the keys file (no temporary files left)", len(entries))
	}
}

// TestReplaceKey: a caller's entry, disabled and with a limit of its own,
// is replaced by a fresh enabled one; the old secret is gone and the
// other callers' entries stay.
func TestReplaceKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	nk, err := callers.AppendKey(path, "acme", []string{"partner"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	old := nk.Secret
	if nk, err = callers.AppendKey(path, "acme", nil, time.Now()); err != nil { // a second key, replaced too
		t.Fatal(err)
	}
	old2 := nk.Secret
	nk, err = callers.AppendKey(path, "ops", []string{"internal"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other := nk.Secret
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	disabled := strings.Replace(string(data), "tiers: [partner]", "tiers: [partner]\n    enabled: false\n    max_calls: 3", 1)
	if disabled == string(data) {
		t.Fatalf("keys file has no acme entry to disable:\n%s", data)
	}
	if err := os.WriteFile(path, []byte(disabled), 0o600); err != nil {
		t.Fatal(err)
	}

	nk, err = callers.ReplaceKey(path, "acme", []string{"gold", "partner"}, time.Now())
	secret := nk.Secret
	if err != nil {
		t.Fatalf("ReplaceKey: %v", err)
	}
	ks, err := callers.LoadKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	if ks.Len() != 2 {
		t.Errorf("keys file holds %d keys, want 2", ks.Len())
	}
	for _, s := range []string{old, old2} {
		if _, ok := ks.Authenticate(s); ok {
			t.Error("a replaced secret still authenticates")
		}
	}
	key, ok := ks.Authenticate(secret)
	if !ok || key.CallerID != "acme" || !key.Enabled || key.Limits.MaxCalls != nil || !cmp.Equal(key.Tiers, []string{"gold", "partner"}) {
		t.Errorf("Authenticate(new secret) = %+v, %v; want acme, enabled, tiers [gold partner], no limit of its own", key, ok)
	}
	if k, ok := ks.Authenticate(other); !ok || k.CallerID != "ops" {
		t.Errorf("Authenticate(ops) = %+v, %v; want the other entry kept", k, ok)
	}
	// A caller with no entry is added.
	if _, err := callers.ReplaceKey(path, "new", []string{"public"}, time.Now()); err != nil {
		t.Errorf("ReplaceKey(new caller) = %v", err)
	}
}

func TestAppendKeyExistingFile(t *testing.T) {
	path := writeKeysFile(t, goodKeys())
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	nk, err := callers.AppendKey(path, "new.caller", []string{"public"}, time.Now())
	secret := nk.Secret
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Others lose their access; the group keeps its (the server may read
	// the file through it).
	if mode := fi.Mode().Perm(); mode != 0o640 {
		t.Errorf("keys file mode = %o, want 640", mode)
	}
	ks := mustLoadKeys(t, path)
	if ks.Len() != 4 {
		t.Errorf("Len() = %d, want 4", ks.Len())
	}
	for _, s := range []string{secret, secretBilling, secretPartner} {
		if _, ok := ks.Authenticate(s); !ok {
			t.Errorf("a key is not authenticated after append")
		}
	}
	key, _ := ks.Authenticate(secretBilling)
	if key.Rate == nil || *key.Rate != (callers.Rate{PerSecond: 2.5, Burst: 10}) {
		t.Errorf("billing rate after append = %+v", key.Rate)
	}
	if _, ok := ks.Authenticate(secretOld); ok {
		t.Error("disabled key authenticated after append")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("# callers of a2ad")) {
		t.Errorf("AppendKey dropped the file's comment:\n%s", data)
	}

	// "keys: []" becomes a list with one entry.
	path = writeKeysFile(t, "keys: []\n")
	nk, err = callers.AppendKey(path, "a", []string{"t"}, time.Now())
	secret = nk.Secret
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mustLoadKeys(t, path).Authenticate(secret); !ok {
		t.Error("key appended to an empty list is not authenticated")
	}
}

func TestAppendKeyRefuses(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		path     string
		callerID string
		tiers    []string
	}{
		{"bad id", filepath.Join(dir, "a.yaml"), "bad id!", []string{"t"}},
		{"long id", filepath.Join(dir, "b.yaml"), strings.Repeat("x", 65), []string{"t"}},
		{"no tiers", filepath.Join(dir, "c.yaml"), "a", nil},
		{"empty tier", filepath.Join(dir, "d.yaml"), "a", []string{""}},
		{"broken file", writeKeysFile(t, "keys: 1\n"), "a", []string{"t"}},
	}
	for _, tt := range tests {
		before, _ := os.ReadFile(tt.path)
		if _, err := callers.AppendKey(tt.path, tt.callerID, tt.tiers, time.Now()); err == nil {
			t.Errorf("%s: AppendKey succeeded, want an error", tt.name)
		}
		after, _ := os.ReadFile(tt.path)
		if !bytes.Equal(before, after) {
			t.Errorf("%s: AppendKey changed the file", tt.name)
		}
	}
}
