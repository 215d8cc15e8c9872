package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/oidctest"
	"github.com/rs/zerolog"
)

// TestOIDCCallersE2E runs the real binary against a real issuer (an
// httptest server with discovery, a JWKS and real ES256 tokens): the card
// declares the issuer; a token's caller is served in its tiers and kept
// apart from key callers; a token that fails a check (expired, another
// audience, a keys file caller's id) gets the bad key's 401; the issuer's
// key rotation is picked up; bad tokens are throttled and audited.
func TestOIDCCallersE2E(t *testing.T) {
	const aud = "a2ad-e2e"
	is := oidctest.NewIssuer(t)
	dir := t.TempDir()
	keys, audit := filepath.Join(dir, "keys.yaml"), filepath.Join(dir, "audit.log")
	acme := mustAppendKey(t, keys, "acme", "partner")
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--audit-log", audit,
		"--oidc-issuer", is.URL, "--oidc-audience", aud, "--auth-fail-burst", "6")

	// The card declares the issuer beside the keys (in the 0.3 and 1.0
	// forms at once).
	var card struct {
		SecuritySchemes map[string]map[string]any `json:"securitySchemes"`
		Security        []map[string][]string     `json:"security"`
	}
	_, body := httpGet(t, p.base+"/.well-known/agent-card.json")
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatal(err)
	}
	if oidc := card.SecuritySchemes["oidc"]; oidc["type"] != "openIdConnect" || oidc["openIdConnectUrl"] != is.URL+"/.well-known/openid-configuration" ||
		oidc["openIdConnectSecurityScheme"].(map[string]any)["openIdConnectUrl"] != is.URL+"/.well-known/openid-configuration" ||
		len(card.Security) != 3 || card.Security[2]["oidc"] == nil {
		t.Errorf("card security: %s", body)
	}

	call := func(cred, method string, params any) (int, http.Header, map[string]any, []byte) {
		t.Helper()
		h := http.Header{}
		if cred != "" {
			h.Set("Authorization", "Bearer "+cred)
		}
		resp, out := postRaw(t, p.base, rpcBody(method, params), h)
		var m map[string]any
		_ = json.Unmarshal(out, &m)
		return resp.StatusCode, resp.Header, m, out
	}
	globex := is.Token(t, is.Claims(aud, "globex", "partner"))
	status, _, m, raw := call(globex, "message/send", sendParams("g-1", "demo::echo", map[string]any{"hi": 1}, true))
	if status != http.StatusOK || state(resultTask(t, m)) != "completed" {
		t.Fatalf("token caller's send: HTTP %d %s", status, raw)
	}
	taskID := resultTask(t, m)["id"].(string)
	// Its own card is its tiers' view: partner skills, not pricing::quote.
	_, _, m, raw = call(globex, "agent/getAuthenticatedExtendedCard", nil)
	if skills := cardSkills(t, m["result"].(map[string]any)); len(skills) == 0 || contains(skills, "pricing::quote") {
		t.Errorf("token caller's card skills %v (%s)", skills, raw)
	}
	// Isolation: the key caller cannot see the token caller's task, nor
	// another subject of the issuer.
	other := is.Token(t, is.Claims(aud, "initech", "partner"))
	for name, cred := range map[string]string{"acme": acme, "initech": other} {
		if _, _, m, raw := call(cred, "tasks/get", map[string]any{"id": taskID}); m["error"] == nil || m["error"].(map[string]any)["code"] != float64(-32001) {
			t.Errorf("%s reading globex's task: %s", name, raw)
		}
	}
	if _, _, m, raw := call(globex, "tasks/get", map[string]any{"id": taskID}); m["result"] == nil {
		t.Errorf("globex reading its own task: %s", raw)
	}

	// Every failed check gets the 401 of a bad key, byte for byte.
	_, badHdr, _, badBody := call("a2ad_no-such-key", "agent/getAuthenticatedExtendedCard", nil)
	expired := is.Claims(aud, "globex", "partner")
	expired["exp"] = time.Now().Add(-10 * time.Minute).Unix()
	for name, tok := range map[string]string{
		"expired":          is.Token(t, expired),
		"other audience":   is.Token(t, is.Claims("someone-else", "globex", "partner")),
		"keys file caller": is.Token(t, is.Claims(aud, "acme", "internal")),
		"foreign key":      oidctest.Sign(t, oidctest.NewKey(t, "k1"), is.Claims(aud, "globex", "partner")),
	} {
		status, hdr, _, body := call(tok, "agent/getAuthenticatedExtendedCard", nil)
		if status != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") != badHdr.Get("WWW-Authenticate") || !bytes.Equal(body, badBody) {
			t.Errorf("%s: HTTP %d %q %s; want the bad key's 401 %q %s", name, status, hdr.Get("WWW-Authenticate"), body, badHdr.Get("WWW-Authenticate"), badBody)
		}
	}

	// The issuer rotates its key: a token of the new key is taken (one
	// fetch of the JWKS), the old key's tokens are refused once dropped
	// from the cache... which takes the keys' max age; here, the new one.
	hits := is.JWKSHits()
	is.Rotate(t, false)
	if status, _, _, raw := call(is.Token(t, is.Claims(aud, "globex", "partner")), "tasks/get", map[string]any{"id": taskID}); status != http.StatusOK {
		t.Errorf("token of the issuer's new key: HTTP %d %s", status, raw)
	}
	if got := is.JWKSHits() - hits; got != 1 {
		t.Errorf("%d JWKS fetches after the rotation, want 1", got)
	}
	// Tokens of unknown keys: refused, no new fetch within the minute,
	// and the address is throttled like one sending bad keys.
	var statuses []int
	for range 8 {
		s, _, _, _ := call(oidctest.Sign(t, oidctest.NewKey(t, "stranger"), is.Claims(aud, "globex", "partner")), "tasks/get", map[string]any{"id": taskID})
		statuses = append(statuses, s)
	}
	if got := is.JWKSHits() - hits; got != 1 {
		t.Errorf("%d JWKS fetches after 8 tokens of unknown keys, want still 1", got)
	}
	if statuses[0] != http.StatusUnauthorized || statuses[len(statuses)-1] != http.StatusTooManyRequests {
		t.Errorf("statuses of tokens of unknown keys: %v, want 401 first and 429 (throttled) last", statuses)
	}

	// The audit trail: the token caller's calls say auth "oidc"; the
	// refusals are unauthenticated and auth_throttled; no token anywhere.
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r struct {
			Caller, Auth, Reason string
		}
		if json.Unmarshal(line, &r) != nil {
			continue
		}
		if r.Caller == "globex" && r.Auth != "oidc" {
			t.Errorf("globex's record without auth oidc: %s", line)
		}
		reasons[r.Reason]++
	}
	t.Logf("audit reasons %v", reasons)
	if reasons["unauthenticated"] < 5 || reasons["auth_throttled"] < 1 {
		t.Errorf("audit reasons %v, want 5 or more unauthenticated and some auth_throttled", reasons)
	}
	p.mu.Lock()
	logs := p.logs.String()
	p.mu.Unlock()
	for _, tok := range []string{globex, other} {
		if sig := tok[len(tok)-40:]; bytes.Contains(data, []byte(sig)) || strings.Contains(logs, sig) {
			t.Error("a token is in the audit trail or the log")
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestOIDCWithoutKeysFile: tokens alone, no keys file. A request without
// one is refused (or served as anonymous with --allow-anonymous); the
// public card shows no skill and declares only the issuer; a start whose
// issuer is unreachable fails, naming it.
func TestOIDCWithoutKeysFile(t *testing.T) {
	const aud = "a2ad-only-oidc"
	is := oidctest.NewIssuer(t)
	m := startMain(t, func(c *Config) { c.OIDCIssuer, c.OIDCAudience = is.URL, aud })
	base := "http://" + m.Addr()
	card := getCard(t, base)
	if skills := cardSkills(t, card); len(skills) != 0 {
		t.Errorf("public card skills %v, want none", skills)
	}
	if schemes, _ := card["securitySchemes"].(map[string]any); len(schemes) != 1 || schemes["oidc"] == nil {
		t.Errorf("public card schemes %v, want oidc alone", card["securitySchemes"])
	}
	body := rpcBody("message/send", sendParams("o-1", "demo::echo", map[string]any{}, true))
	if resp, _ := postRaw(t, base, body, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: HTTP %d, want 401", resp.StatusCode)
	}
	tok := is.Token(t, is.Claims(aud, "globex", "partner"))
	if resp, out := postRaw(t, base, body, http.Header{"Authorization": {"Bearer " + tok}}); resp.StatusCode != http.StatusOK {
		t.Errorf("token: HTTP %d %s", resp.StatusCode, out)
	}

	anon := startMain(t, func(c *Config) {
		c.OIDCIssuer, c.OIDCAudience, c.AllowAnonymous, c.AnonymousTiers = is.URL, aud, true, "partner"
	})
	if resp, out := postRaw(t, "http://"+anon.Addr(), body, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("anonymous with --allow-anonymous: HTTP %d %s", resp.StatusCode, out)
	}

	cfg := testConfig(filepath.Join(t.TempDir(), "a2ad.db"))
	cfg.OIDCIssuer, cfg.OIDCAudience = is.URL+"/nowhere", aud
	err := (&Main{Config: cfg, Logger: zerolog.Nop()}).Open(context.Background())
	want := "oidc-issuer: oidc: discovery: GET " + is.URL + "/nowhere/.well-known/openid-configuration: 404 Not Found"
	if err == nil || err.Error() != want {
		t.Errorf("Open with an unreachable issuer = %v, want %s", err, want)
	}
}
