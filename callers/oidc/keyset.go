package oidc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/rs/zerolog"
)

// algorithms are the signature algorithms a2ad takes: asymmetric ones
// only, since the keys are public (never "none" or HMAC).
var algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// errNoKey: no key of the issuer's verifies the token's signature.
var errNoKey = errors.New("no key of the issuer verifies the token's signature")

// KeySet is the issuer's signing keys, fetched from its JWKS and cached.
// The cache is fetched again when it is older than MaxAge, or when a token
// names a key it lacks (the issuer rotated its keys), but at most once per
// MinInterval whatever the tokens say. It implements go-oidc's KeySet.
type KeySet struct {
	url         string
	client      *http.Client
	maxBytes    int64
	minInterval time.Duration
	maxAge      time.Duration
	now         func() time.Time
	log         zerolog.Logger

	fetchMu sync.Mutex // one fetch at a time

	mu        sync.Mutex // guards what follows
	keys      []jose.JSONWebKey
	fetchedAt time.Time // the last good fetch
	triedAt   time.Time // the last fetch, good or not
}

// VerifySignature returns the payload of the compact JWS token if a key of
// the issuer verifies it, or an error.
func (ks *KeySet) VerifySignature(ctx context.Context, token string) ([]byte, error) {
	jws, err := jose.ParseSigned(token, algorithms)
	if err != nil {
		return nil, fmt.Errorf("malformed token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("the token must have one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, stale := ks.cached()
	if stale {
		keys = ks.refresh(ctx)
	}
	if payload, found, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	} else if found {
		return nil, errNoKey // the key is known: a fetch would not help
	}
	// A key id we do not know: the issuer may have rotated its keys.
	if payload, _, ok := verifyWith(jws, ks.refresh(ctx), kid); ok {
		return payload, nil
	}
	return nil, errNoKey
}

// verifyWith verifies jws with the keys whose id is kid (every key when
// kid is ""); found says whether any key had that id.
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) (payload []byte, found, ok bool) {
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		found = kid != ""
		if p, err := jws.Verify(&keys[i]); err == nil {
			return p, found, true
		}
	}
	return nil, found, false
}

// cached returns the keys in the cache, and whether they are older than
// MaxAge.
func (ks *KeySet) cached() ([]jose.JSONWebKey, bool) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.keys, ks.now().Sub(ks.fetchedAt) > ks.maxAge
}

// refresh fetches the JWKS unless a fetch was tried less than MinInterval
// ago, and returns the keys then in the cache. A failed fetch keeps the
// keys the cache has.
func (ks *KeySet) refresh(ctx context.Context) []jose.JSONWebKey {
	ks.fetchMu.Lock()
	defer ks.fetchMu.Unlock()
	ks.mu.Lock()
	if now := ks.now(); now.Sub(ks.triedAt) < ks.minInterval {
		keys := ks.keys
		ks.mu.Unlock()
		return keys
	} else {
		ks.triedAt = now
	}
	ks.mu.Unlock()

	// The fetch outlives a request that gives up: others may wait for it.
	keys, err := ks.fetch(context.WithoutCancel(ctx))
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if err != nil {
		// At most one a MinInterval: the fetches are.
		ks.log.Warn().Err(err).Str("jwks_uri", ks.url).Msg("oidc: cannot fetch the issuer's keys; the cached ones stay in use")
		return ks.keys
	}
	ks.keys, ks.fetchedAt = keys, ks.now()
	return keys
}

// Fetch fetches the JWKS now and puts its keys in the cache. It returns
// an error, and keeps the cache, if the JWKS is unreachable, too large or
// holds no usable key. It does not count as a refresh: the first token of
// an unknown key after it may fetch again at once (the issuer may rotate
// just after a2ad starts).
func (ks *KeySet) Fetch(ctx context.Context) error {
	ks.fetchMu.Lock()
	defer ks.fetchMu.Unlock()
	keys, err := ks.fetch(ctx)
	if err != nil {
		return err
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.keys, ks.fetchedAt = keys, ks.now()
	return nil
}

// fetch reads the JWKS: its public signing keys, skipping those a2ad
// cannot use (an unknown key type, a key for encryption).
func (ks *KeySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	body, err := get(ctx, ks.client, ks.url, ks.maxBytes)
	if err != nil {
		return nil, err
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("JWKS %s: %w", ks.url, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if json.Unmarshal(raw, &k) != nil || !k.Valid() || !k.IsPublic() || k.Use == "enc" {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("JWKS %s holds no public signing key", ks.url)
	}
	return keys, nil
}

// get fetches url, bounded by the client's timeout and maxBytes.
func get(ctx context.Context, client *http.Client, url string, maxBytes int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if int64(len(body)) > maxBytes {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", url, maxBytes)
	}
	return body, nil
}
