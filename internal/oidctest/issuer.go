// Package oidctest runs a real OpenID Connect issuer for tests: an
// httptest server that serves a discovery document and a JWKS, and signs
// real tokens (ES256) with keys it can rotate.
package oidctest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Issuer is an OpenID Connect issuer on a loopback port.
type Issuer struct {
	URL string // the issuer, as its tokens' "iss" say

	srv      *httptest.Server
	jwksHits atomic.Int64
	held     atomic.Pointer[chan struct{}] // while set, the JWKS waits for it to close

	mu        sync.Mutex
	signing   jose.JSONWebKey   // the key tokens are signed with
	published []jose.JSONWebKey // the private keys whose public halves the JWKS lists
	n         int               // keys made, for their ids
}

// NewIssuer starts an issuer with one key, "k1", and stops it when the
// test ends.
func NewIssuer(tb testing.TB) *Issuer {
	tb.Helper()
	is := &Issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": is.URL, "jwks_uri": is.URL + "/jwks",
			"authorization_endpoint": is.URL + "/authorize", "token_endpoint": is.URL + "/token",
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"ES256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksHits.Add(1)
		if h := is.held.Load(); h != nil {
			select {
			case <-*h:
			case <-r.Context().Done():
				return
			}
		}
		is.mu.Lock()
		set := jose.JSONWebKeySet{}
		for _, k := range is.published {
			set.Keys = append(set.Keys, k.Public())
		}
		is.mu.Unlock()
		writeJSON(w, set)
	})
	// The URL is set before the server starts: its handlers read it.
	is.srv = httptest.NewUnstartedServer(mux)
	is.URL = "http://" + is.srv.Listener.Addr().String()
	is.srv.Start()
	tb.Cleanup(is.srv.Close)
	is.Rotate(tb, false)
	return is
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Rotate makes a new key ("k2", "k3"...), publishes it and signs with it
// from now on; keepOld keeps the previous keys in the JWKS. It returns the
// new key's id.
func (is *Issuer) Rotate(tb testing.TB, keepOld bool) string {
	tb.Helper()
	k := NewKey(tb, "")
	is.mu.Lock()
	defer is.mu.Unlock()
	is.n++
	k.KeyID = fmt.Sprintf("k%d", is.n)
	is.signing = k
	if !keepOld {
		is.published = nil
	}
	is.published = append(is.published, k)
	return k.KeyID
}

// NewKey makes an ES256 private key with id kid, which no issuer
// publishes unless given it.
func NewKey(tb testing.TB, kid string) jose.JSONWebKey {
	tb.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return jose.JSONWebKey{Key: priv, KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"}
}

// HoldJWKS makes the JWKS answer no request until release is called (or
// the request ends): an issuer whose keys are slow to fetch. The test's
// end releases it.
func (is *Issuer) HoldJWKS(tb testing.TB) (release func()) {
	tb.Helper()
	ch := make(chan struct{})
	is.held.Store(&ch)
	var once sync.Once
	release = func() {
		once.Do(func() {
			is.held.Store(nil)
			close(ch)
		})
	}
	tb.Cleanup(release)
	return release
}

// JWKSHits is how many times the JWKS was fetched.
func (is *Issuer) JWKSHits() int { return int(is.jwksHits.Load()) }

// Claims are a token's usual claims for aud, sub and tiers, valid from a
// minute ago for an hour.
func (is *Issuer) Claims(aud, sub string, tiers ...string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": is.URL, "aud": aud, "sub": sub, "a2a_tiers": tiers,
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix()}
}

// Token signs claims with the issuer's current key.
func (is *Issuer) Token(tb testing.TB, claims map[string]any) string {
	tb.Helper()
	is.mu.Lock()
	k := is.signing
	is.mu.Unlock()
	return Sign(tb, k, claims)
}

// Sign signs claims with key as a compact JWT.
func Sign(tb testing.TB, key jose.JSONWebKey, claims map[string]any) string {
	tb.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		tb.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		tb.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
