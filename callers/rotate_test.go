package callers_test

import (
	"bytes"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
	"github.com/google/go-cmp/cmp"
)

// keyIDs lists the keys of ks as "caller/id state", in List order.
func keyIDs(ks *callers.Keys) []string {
	var out []string
	for _, k := range ks.List() {
		state := "in-force"
		if !k.InForce() {
			state = "out"
		}
		out = append(out, k.CallerID+"/"+k.ID+" "+state)
	}
	return out
}

// TestRotateKeys walks a rotation on a version 1 file: a second key for a
// caller (the file becomes version 2, the first key keeps its id), then
// the first one revoked. Both keys work in between; the caller's tiers and
// rate are the same whichever key it uses.
func TestRotateKeys(t *testing.T) {
	path := writeKeysFile(t, goodKeys())
	var oldHash [32]byte
	copy(oldHash[:], mustHex(t, hashBilling))
	oldID := callers.KeyIDOf(oldHash)
	created := time.Date(2026, 11, 24, 6, 30, 0, 0, time.UTC)

	nk, err := callers.AppendKey(path, "billing", nil, created)
	if err != nil {
		t.Fatal(err)
	}
	if nk.NewCaller || nk.ID == oldID || !strings.HasPrefix(nk.Secret, "a2ad_") {
		t.Fatalf("AppendKey = %+v, want a second key of billing", nk)
	}
	ks := mustLoadKeys(t, path)
	if ks.Version() != callers.Version2 || ks.Len() != 3 {
		t.Errorf("after AppendKey: version %d, %d entries; want 2, 3", ks.Version(), ks.Len())
	}
	want := []string{"billing/" + oldID + " in-force", "billing/" + nk.ID + " in-force",
		"old/" + callers.KeyIDOf(mustHash(t, hashOld)) + " out",
		"partner:acme/" + callers.KeyIDOf(mustHash(t, hashPartner)) + " in-force"}
	if diff := cmp.Diff(want, keyIDs(ks)); diff != "" {
		t.Errorf("keys after AppendKey (-want +got):\n%s", diff)
	}
	for _, s := range []string{secretBilling, nk.Secret} {
		k, ok := ks.Authenticate(s)
		if !ok || k.CallerID != "billing" || k.Rate == nil || k.Rate.Burst != 10 || !cmp.Equal(k.Tiers, []string{"internal", "gold"}) {
			t.Errorf("Authenticate = %+v, %v; want billing with its tiers and rate", k, ok)
		}
	}
	if k, _ := ks.Authenticate(nk.Secret); !k.Created.Equal(created) || k.ID != nk.ID {
		t.Errorf("new key: id %q created %v; want %q, %v", k.ID, k.Created, nk.ID, created)
	}
	data, _ := os.ReadFile(path)
	for _, s := range []string{"# callers of a2ad\nversion: 2\nkeys:\n", "created: 2026-11-24T06:30:00Z\n"} {
		if !bytes.Contains(data, []byte(s)) {
			t.Errorf("file lacks %q:\n%s", s, data)
		}
	}

	revokedAt := created.Add(time.Hour)
	ids, err := callers.RevokeKeys(path, "billing", oldID, revokedAt)
	if err != nil || !cmp.Equal(ids, []string{oldID}) {
		t.Fatalf("RevokeKeys = %v, %v; want [%s]", ids, err, oldID)
	}
	ks = mustLoadKeys(t, path)
	if _, ok := ks.Authenticate(secretBilling); ok {
		t.Error("the revoked key still authenticates")
	}
	if ks.InForce("billing", oldHash) {
		t.Error("InForce(revoked key) = true")
	}
	if _, ok := ks.Authenticate(nk.Secret); !ok {
		t.Error("the new key no longer authenticates")
	}
	for _, k := range ks.List() {
		if k.ID == oldID && !k.Revoked.Equal(revokedAt) {
			t.Errorf("revoked key's Revoked = %v, want %v", k.Revoked, revokedAt)
		}
	}

	// Revoking all of a caller's keys revokes those in force.
	ids, err = callers.RevokeKeys(path, "billing", "", revokedAt)
	if err != nil || !cmp.Equal(ids, []string{nk.ID}) {
		t.Fatalf("RevokeKeys(all) = %v, %v; want [%s]", ids, err, nk.ID)
	}
	if _, ok := mustLoadKeys(t, path).Authenticate(nk.Secret); ok {
		t.Error("a key revoked with all of its caller's still authenticates")
	}
}

func mustHash(tb testing.TB, s string) [32]byte {
	tb.Helper()
	var h [32]byte
	copy(h[:], mustHex(tb, s))
	return h
}

// TestRevokeKeysRefuses: each refusal names what is wrong and leaves the
// file as it was.
func TestRevokeKeysRefuses(t *testing.T) {
	path := writeKeysFile(t, goodKeys())
	partnerID := callers.KeyIDOf(mustHash(t, hashPartner))
	if _, err := callers.RevokeKeys(path, "partner:acme", partnerID, time.Now()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	tests := []struct {
		callerID, keyID, want string
	}{
		{"nobody", "", `revoke keys: no caller "nobody" in ` + path},
		{"billing", "k1", `revoke keys: caller "billing" has no key "k1" (its keys: ` + callers.KeyIDOf(mustHash(t, hashBilling)) + `)`},
		{"partner:acme", partnerID, `revoke keys: key "` + partnerID + `" of caller "partner:acme" was already revoked (at `},
		{"partner:acme", "", `revoke keys: caller "partner:acme" has no key in force`},
	}
	for _, tt := range tests {
		_, err := callers.RevokeKeys(path, tt.callerID, tt.keyID, time.Now())
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("RevokeKeys(%q, %q) = %v, want %s", tt.callerID, tt.keyID, err, tt.want)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("RevokeKeys(%q, %q) changed the file", tt.callerID, tt.keyID)
		}
	}
	if _, err := callers.RevokeKeys(path+".missing", "billing", "", time.Now()); err == nil || !os.IsNotExist(errUnwrap(err)) {
		t.Errorf("RevokeKeys(missing file) = %v, want a not-exist error", err)
	}
}

func errUnwrap(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

// TestLoadKeysVersion2Problems pins the messages of version 2 files.
func TestLoadKeysVersion2Problems(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string
	}{
		{"bad version", "version: 3\nkeys: []\n", []string{`1:10: /version: version must be 1 or 2, got "3"`}},
		{"keys list in version 1", "keys:\n  - id: a\n    tiers: [t]\n    keys: []\n", []string{
			`4:5: /keys/0/keys (caller "a"): a list of keys per caller needs "version: 2" at the top of the file`}},
		{"hash in version 2", "version: 2\nkeys:\n  - id: a\n    tiers: [t]\n    hash: " + hashBilling + "\n    keys:\n      - {id: k1, hash: " + hashPartner + "}\n", []string{
			`5:5: /keys/0/hash (caller "a"): in a version 2 file, a caller's hash goes in its keys list`}},
		{"no keys", "version: 2\nkeys:\n  - id: a\n    tiers: [t]\n", []string{
			`3:5: /keys/0 (caller "a"): keys is required (a list of the caller's keys)`}},
		{"empty keys", "version: 2\nkeys:\n  - id: a\n    tiers: [t]\n    keys: []\n", []string{
			`5:11: /keys/0/keys (caller "a"): keys must list at least one key`}},
		{"bad keys", "version: 2\nkeys:\n  - id: a\n    tiers: [t]\n    keys:\n      - {id: k1, hash: " + hashBilling + "}\n" +
			"      - {id: k1, hash: " + hashPartner + ", created: yesterday}\n      - {hash: " + hashOld + ", revoked: [1]}\n      - {id: k3, hash: " + hashBilling + "}\n", []string{
			`7:14: /keys/0/keys/1/id (caller "a"): duplicate key id "k1" (first defined at line 6)`,
			`7:106: /keys/0/keys/1/created (caller "a"): created must be a time such as 2026-11-24T06:00:00Z, got "yesterday"`,
			`8:9: /keys/0/keys/2 (caller "a"): id is required`,
			`8:98: /keys/0/keys/2/revoked (caller "a"): revoked must be a time such as 2026-11-24T06:00:00Z, got a list`,
			`9:24: /keys/0/keys/3/hash (caller "a"): duplicate hash: the same secret as caller "a" (line 6)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := callers.LoadKeys(writeKeysFile(t, tt.content))
			var got []string
			if le, ok := err.(*callers.LoadError); ok {
				for _, p := range le.Problems {
					got = append(got, p.String())
				}
			} else {
				t.Fatalf("LoadKeys = %v, want a *LoadError", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUsage: Identify records each key's last use, per key, to the
// second; a refused key records nothing.
func TestUsage(t *testing.T) {
	reg, err := callers.NewRegistry(writeKeysFile(t, goodKeys()))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	u := &callers.Usage{}
	a := &callers.Authenticator{Registry: reg, Usage: u, Now: func() time.Time { return now }}
	call := func(secret string) {
		r := httptest.NewRequest("POST", "/a2a", nil)
		r.Header.Set("X-API-Key", secret)
		_, _ = a.Identify(r)
	}
	billing, old := mustHash(t, hashBilling), mustHash(t, hashOld)
	if got := u.Last(billing); !got.IsZero() {
		t.Errorf("Last before any use = %v, want zero", got)
	}
	call(secretBilling)
	now = now.Add(1500 * time.Millisecond)
	call(secretBilling)
	call(secretOld) // disabled: refused
	if got, want := u.Last(billing), now.Truncate(time.Second); !got.Equal(want) {
		t.Errorf("Last(billing) = %v, want %v", got, want)
	}
	if got := u.Last(old); !got.IsZero() {
		t.Errorf("Last(refused key) = %v, want zero", got)
	}
	// The clock going back never moves the last use back.
	now = now.Add(-time.Hour)
	call(secretBilling)
	if got := u.Last(billing); !got.After(now) {
		t.Errorf("Last(billing) after a clock step back = %v", got)
	}
}
