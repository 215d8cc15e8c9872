package oidc_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/callers/oidc"
	"github.com/a2ad/a2ad/internal/oidctest"
	"github.com/a2ad/a2ad/internal/testkit"
)

const audience = "a2ad-test"

// newVerifier starts a verifier of is's tokens on clock.
func newVerifier(tb testing.TB, is *oidctest.Issuer, clock *testkit.Clock) *oidc.Verifier {
	tb.Helper()
	v, err := oidc.New(context.Background(), oidc.Config{Issuer: is.URL, Audience: audience, Now: clock.Now})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = v.Close() })
	return v
}

func TestVerifyGoodToken(t *testing.T) {
	is := oidctest.NewIssuer(t)
	v := newVerifier(t, is, testkit.NewClock(time.Now()))
	claims := is.Claims(audience, "auth0|partner-7", "partner", "internal", "partner")
	got, err := v.Verify(context.Background(), is.Token(t, claims))
	if err != nil {
		t.Fatal(err)
	}
	want := callers.Identity{CallerID: "auth0|partner-7", Tiers: []string{"partner", "internal"}, Token: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Verify (-want +got):\n%s", diff)
	}
	// Tiers as one string, an audience among several.
	claims["a2a_tiers"], claims["aud"] = "partner, gold", []string{"other", audience}
	if got, err := v.Verify(context.Background(), is.Token(t, claims)); err != nil || !cmp.Equal(got.Tiers, []string{"partner", "gold"}) {
		t.Errorf("Verify(tiers string) = %+v, %v", got, err)
	}
}

// TestVerifyRefuses: a token that fails any check is refused, and the
// error says which check, never the token.
func TestVerifyRefuses(t *testing.T) {
	is := oidctest.NewIssuer(t)
	clock := testkit.NewClock(time.Now())
	v := newVerifier(t, is, clock)
	now := clock.Now()
	with := func(k string, val any) map[string]any {
		c := is.Claims(audience, "acme", "partner")
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	foreign := oidctest.NewKey(t, "k1") // the issuer's key id, another key
	expired := now.Add(-2 * time.Minute).Truncate(time.Second)
	notYet := now.Add(2 * time.Minute).Truncate(time.Second)
	tests := []struct {
		name, token, want string
	}{
		{"other audience", is.Token(t, with("aud", "someone-else")), `oidc: expected audience "a2ad-test" got ["someone-else"]`},
		{"other issuer", is.Token(t, with("iss", "https://evil.example")), `oidc: id token issued by a different provider, expected "` + is.URL + `" got "https://evil.example"`},
		{"expired beyond the skew", is.Token(t, with("exp", expired.Unix())), "the token expired at " + expired.UTC().Format(time.RFC3339)},
		{"not yet valid beyond the skew", is.Token(t, with("nbf", notYet.Unix())), "the token is not valid before " + notYet.UTC().Format(time.RFC3339)},
		{"no exp", is.Token(t, with("exp", nil)), "the token has no exp"},
		{"nbf as a string", is.Token(t, with("nbf", strconv.FormatInt(notYet.Unix(), 10))), "the token's nbf claim must be a number (seconds since 1970), got a string"},
		{"exp as a string", is.Token(t, with("exp", strconv.FormatInt(now.Add(time.Hour).Unix(), 10))), "the token's exp claim must be a number (seconds since 1970), got a string"},
		{"iat as a string", is.Token(t, with("iat", strconv.FormatInt(now.Unix(), 10))), "the token's iat claim must be a number (seconds since 1970), got a string"},
		{"signed by another key", oidctest.Sign(t, foreign, with("sub", "acme")), "failed to verify signature: no key of the issuer verifies the token's signature"},
		{"no tiers", is.Token(t, with("a2a_tiers", nil)), "the token's a2a_tiers claim: missing"},
		{"empty tiers", is.Token(t, with("a2a_tiers", []string{})), "the token's a2a_tiers claim: lists no tier"},
		{"tiers of numbers", is.Token(t, with("a2a_tiers", []int{1})), "the token's a2a_tiers claim: must list strings"},
		{"no sub", is.Token(t, with("sub", nil)), "the token's sub claim is no caller id (1 to 255 printable ASCII characters, no space)"},
		{"sub with a space", is.Token(t, with("sub", "a b")), "the token's sub claim is no caller id (1 to 255 printable ASCII characters, no space)"},
		{"unsigned", unsigned(with("sub", "acme")), "oidc: malformed jwt: ..."},
		{"garbage", "a.b.c", "oidc: malformed jwt: ..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tt.token)
			if err == nil {
				t.Fatal("Verify succeeded, want an error")
			}
			if got := err.Error(); got != tt.want && !(strings.HasSuffix(tt.want, "...") && strings.HasPrefix(got, strings.TrimSuffix(tt.want, "..."))) {
				t.Errorf("Verify error = %q, want %q", got, tt.want)
			}
			if strings.Contains(err.Error(), tt.token) {
				t.Error("the error holds the token")
			}
		})
	}

	// Within the skew (1 minute), exp and nbf still hold.
	for name, c := range map[string]map[string]any{
		"expired 30s ago":         with("exp", now.Add(-30*time.Second).Unix()),
		"valid from 30s from now": with("nbf", now.Add(30*time.Second).Unix()),
	} {
		if _, err := v.Verify(context.Background(), is.Token(t, c)); err != nil {
			t.Errorf("%s: %v, want it taken (within the skew)", name, err)
		}
	}
}

// unsigned is a JWT with "alg": "none".
func unsigned(claims map[string]any) string {
	return "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + b64JSON(claims) + "."
}

// TestIssuerRotatesKeys: a token signed with the issuer's new key is
// taken after one fetch of the JWKS; the old key's tokens are refused once
// the issuer drops it.
func TestIssuerRotatesKeys(t *testing.T) {
	is := oidctest.NewIssuer(t)
	clock := testkit.NewClock(time.Now())
	v := newVerifier(t, is, clock)
	old := is.Token(t, is.Claims(audience, "acme", "partner"))
	if _, err := v.Verify(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	hits := is.JWKSHits()
	clock.Advance(2 * time.Minute) // past the least interval between fetches
	is.Rotate(t, false)
	if _, err := v.Verify(context.Background(), is.Token(t, is.Claims(audience, "acme", "partner"))); err != nil {
		t.Fatalf("token of the new key: %v", err)
	}
	if got := is.JWKSHits() - hits; got != 1 {
		t.Errorf("%d JWKS fetches for the new key, want 1", got)
	}
	// The old key is cached still: its tokens hold until the keys are
	// fetched again, at most an hour later (MaxAge).
	clock.Advance(oidc.DefaultMaxAge + time.Minute)
	if _, err := v.Verify(context.Background(), old); err == nil {
		t.Error("a token of the dropped key is taken after the keys' max age")
	}
}

// TestUnknownKeysDoNotHammerTheIssuer: tokens naming keys the issuer does
// not have fetch the JWKS at most once a minute, however many they are.
func TestUnknownKeysDoNotHammerTheIssuer(t *testing.T) {
	is := oidctest.NewIssuer(t)
	clock := testkit.NewClock(time.Now())
	v := newVerifier(t, is, clock)
	clock.Advance(2 * time.Minute)
	hits := is.JWKSHits()
	for i := range 50 {
		bad := oidctest.Sign(t, oidctest.NewKey(t, "stranger-"+string(rune('a'+i%26))), is.Claims(audience, "acme", "partner"))
		if _, err := v.Verify(context.Background(), bad); err == nil {
			t.Fatal("a token of an unknown key was taken")
		}
	}
	if got := is.JWKSHits() - hits; got != 1 {
		t.Errorf("%d JWKS fetches for 50 tokens of unknown keys within a minute, want 1", got)
	}
	clock.Advance(time.Minute)
	bad := oidctest.Sign(t, oidctest.NewKey(t, "stranger"), is.Claims(audience, "acme", "partner"))
	_, _ = v.Verify(context.Background(), bad)
	if got := is.JWKSHits() - hits; got != 2 {
		t.Errorf("%d JWKS fetches after a minute more, want 2", got)
	}
}

// TestNewRefuses: discovery naming another issuer, a JWKS too large or
// too slow, an unreachable issuer.
func TestNewRefuses(t *testing.T) {
	var srvURL string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /other/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"issuer":"https://elsewhere.example","jwks_uri":"` + srvURL + `/big"}`))
	})
	mux.HandleFunc("GET /big/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"issuer":"` + srvURL + `/big","jwks_uri":"` + srvURL + `/big/jwks"}`))
	})
	mux.HandleFunc("GET /big/jwks", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"keys":[` + strings.Repeat(" ", 2<<10) + `]}`))
	})
	mux.HandleFunc("GET /slow/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	srvURL = srv.URL
	tests := []struct {
		name, issuer, want string
	}{
		{"other issuer", srv.URL + "/other", `oidc: the discovery document at ` + srv.URL + `/other/.well-known/openid-configuration names the issuer "https://elsewhere.example", not "` + srv.URL + `/other"`},
		{"large JWKS", srv.URL + "/big", `oidc: GET ` + srv.URL + `/big/jwks: larger than 1024 bytes`},
		{"slow", srv.URL + "/slow", "oidc: discovery: Get \"" + srv.URL + "/slow/.well-known/openid-configuration\": context deadline exceeded"},
		{"no audience", srv.URL, "oidc: the issuer and the audience are required"},
	}
	for _, tt := range tests {
		aud := audience
		if tt.name == "no audience" {
			aud = ""
		}
		start := time.Now()
		_, err := oidc.New(context.Background(), oidc.Config{Issuer: tt.issuer, Audience: aud, MaxBytes: 1024, Timeout: 300 * time.Millisecond})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want %s", tt.name, err, tt.want)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: New took %v, want it bounded by the timeout", tt.name, d)
		}
	}
}

// TestAuthenticatorWithTokens: keys and tokens side by side; a token whose
// caller is a caller of the keys file is refused.
func TestAuthenticatorWithTokens(t *testing.T) {
	is := oidctest.NewIssuer(t)
	v := newVerifier(t, is, testkit.NewClock(time.Now()))
	keys := t.TempDir() + "/keys.yaml"
	nk, err := callers.AppendKey(keys, "acme", []string{"partner"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := callers.NewRegistry(keys)
	if err != nil {
		t.Fatal(err)
	}
	a := &callers.Authenticator{Registry: reg, Tokens: v}
	identify := func(cred string) (callers.Identity, error) {
		r := httptest.NewRequest("POST", "/a2a", nil)
		r.Header.Set("Authorization", "Bearer "+cred)
		return a.Identify(r)
	}
	if id, err := identify(nk.Secret); err != nil || id.CallerID != "acme" || id.Token || id.KeyID != nk.ID {
		t.Errorf("key: %+v, %v", id, err)
	}
	if id, err := identify(is.Token(t, is.Claims(audience, "globex", "partner"))); err != nil || id.CallerID != "globex" || !id.Token || id.KeyID != "" {
		t.Errorf("token: %+v, %v", id, err)
	}
	_, err = identify(is.Token(t, is.Claims(audience, "acme", "internal")))
	if !errors.Is(err, callers.ErrBadKey) || err.Error() != `invalid API key: the token's caller "acme" is a caller of the keys file` {
		t.Errorf("token of a keys file caller: %v", err)
	}
	expired := is.Claims(audience, "globex", "partner")
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	if _, err := identify(is.Token(t, expired)); !errors.Is(err, callers.ErrBadKey) {
		t.Errorf("expired token: %v, want ErrBadKey", err)
	}
	if _, err := identify("not-a-jwt"); !errors.Is(err, callers.ErrBadKey) || err != callers.ErrBadKey {
		t.Errorf("unknown key: %v, want ErrBadKey itself (no token check)", err)
	}
}

// TestUnknownKeyDoesNotWaitForASlowIssuer: while the issuer's JWKS is slow
// (held), a token of a key id the cache lacks asks for a fetch but waits
// at most KeyWait (1 s) for it, not the fetch's 10 s timeout; tokens of a
// cached key are not held at all; and Close ends the fetch under way.
func TestUnknownKeyDoesNotWaitForASlowIssuer(t *testing.T) {
	is := oidctest.NewIssuer(t)
	clock := testkit.NewClock(time.Now())
	v := newVerifier(t, is, clock)
	clock.Advance(2 * time.Minute) // past the least interval between fetches
	hits := is.JWKSHits()
	release := is.HoldJWKS(t)
	forged := oidctest.Sign(t, oidctest.NewKey(t, "forged"), is.Claims(audience, "acme", "partner"))
	start := time.Now()
	_, err := v.Verify(context.Background(), forged)
	if took := time.Since(start); took > oidc.DefaultTimeout/2 {
		t.Errorf("a token of an unknown key was answered in %v while the JWKS was slow, want about %v", took, oidc.DefaultKeyWait)
	}
	if want := "failed to verify signature: no key of the issuer verifies the token's signature"; err == nil || err.Error() != want {
		t.Fatalf("Verify(forged) = %v, want %q", err, want)
	}
	// The fetch goes on: a good token meanwhile is served from the cache.
	start = time.Now()
	if _, err := v.Verify(context.Background(), is.Token(t, is.Claims(audience, "acme", "partner"))); err != nil {
		t.Fatalf("a good token during the fetch: %v", err)
	}
	if took := time.Since(start); took > oidc.DefaultKeyWait/2 {
		t.Errorf("a good token waited %v during the fetch", took)
	}
	waitHits(t, is, hits+1)
	start = time.Now()
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > oidc.DefaultTimeout/2 {
		t.Errorf("Close took %v with a fetch under way", took)
	}
	release()
}

// TestStaleKeysServeWhileTheyAreFetched: once the cache is older than
// MaxAge, tokens are verified with it at once while a fetch runs in the
// background (they never queue on the fetch), and the fetched keys serve
// once it ends: a key the issuer dropped stops working then.
func TestStaleKeysServeWhileTheyAreFetched(t *testing.T) {
	is := oidctest.NewIssuer(t)
	clock := testkit.NewClock(time.Now())
	v := newVerifier(t, is, clock)
	claims := is.Claims(audience, "acme", "partner")
	claims["exp"] = clock.Now().Add(3 * time.Hour).Unix() // valid past the clock's advance
	old := is.Token(t, claims)
	is.Rotate(t, false) // k1 dropped; the cache has it for up to MaxAge
	clock.Advance(oidc.DefaultMaxAge + time.Minute)
	hits := is.JWKSHits()
	release := is.HoldJWKS(t)
	start := time.Now()
	for range 20 {
		if _, err := v.Verify(context.Background(), old); err != nil {
			t.Fatalf("a token of a cached key while the stale keys are fetched: %v", err)
		}
	}
	if took := time.Since(start); took > oidc.DefaultTimeout/2 {
		t.Errorf("20 tokens took %v while the stale keys were fetched, want no wait", took)
	}
	waitHits(t, is, hits+1)
	release()
	// Once the fetch ends, k1 is gone and k2 serves.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := v.Verify(context.Background(), old)
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dropped key still verifies 10 s after the fetch was released")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := v.Verify(context.Background(), is.Token(t, claims)); err != nil {
		t.Fatalf("a token of the new key after the fetch: %v", err)
	}
	if got := is.JWKSHits() - hits; got != 1 {
		t.Errorf("%d JWKS fetches, want 1", got)
	}
}

// waitHits waits until the issuer's JWKS has had n requests.
func waitHits(t *testing.T, is *oidctest.Issuer, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for is.JWKSHits() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d JWKS requests, want %d", is.JWKSHits(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
