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
// MinInterval whatever the tokens say. Fetches after the first run in the
// KeySet's own goroutine (Start, Close): a token never waits for one
// because the cache is old (the old keys serve meanwhile), and a token of
// an unknown key waits at most KeyWait for the fetch it asks for, so a
// forged key id never holds a request for a slow issuer's timeout. It
// implements go-oidc's KeySet.
type KeySet struct {
	url         string
	client      *http.Client
	maxBytes    int64
	minInterval time.Duration
	maxAge      time.Duration
	keyWait     time.Duration
	now         func() time.Time
	log         zerolog.Logger

	fetchMu sync.Mutex    // one fetch at a time
	kick    chan struct{} // asks the refresher for a fetch (buffer 1)
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu        sync.Mutex // guards what follows
	keys      []jose.JSONWebKey
	fetchedAt time.Time     // the last good fetch
	triedAt   time.Time     // the last fetch, good or not
	pending   chan struct{} // closed when the refresher has handled the kicks so far
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
		ks.requestRefresh() // in the background: the cached keys serve meanwhile
	}
	if payload, found, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	} else if found {
		return nil, errNoKey // the key is known: a fetch would not help
	}
	// A key id we do not know: the issuer may have rotated its keys. Wait
	// a little for the fetch (none if one was tried within MinInterval).
	done := ks.requestRefresh()
	t := time.NewTimer(ks.keyWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
	keys, _ = ks.cached()
	if payload, _, ok := verifyWith(jws, keys, kid); ok {
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

// Start starts the goroutine that fetches the JWKS when asked; Close
// stops it.
func (ks *KeySet) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	ks.kick, ks.cancel = make(chan struct{}, 1), cancel
	ks.wg.Add(1)
	go func() {
		defer ks.wg.Done()
		ks.refresher(ctx)
	}()
}

// Close stops the refresher, ending a fetch under way, and waits for it.
func (ks *KeySet) Close() error {
	if ks.cancel != nil {
		ks.cancel()
		ks.wg.Wait()
	}
	return nil
}

// requestRefresh asks the refresher for a fetch, and returns a channel
// closed once it has handled the request (fetched, failed, or found a
// fetch tried within MinInterval).
func (ks *KeySet) requestRefresh() <-chan struct{} {
	ks.mu.Lock()
	if ks.pending == nil {
		ks.pending = make(chan struct{})
	}
	done := ks.pending
	ks.mu.Unlock()
	select {
	case ks.kick <- struct{}{}:
	default: // asked already: the request is in that one
	}
	return done
}

// refresher fetches the JWKS each time it is asked, until ctx ends.
func (ks *KeySet) refresher(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ks.kick:
		}
		ks.mu.Lock()
		done := ks.pending
		ks.pending = nil
		ks.mu.Unlock()
		ks.refresh(ctx)
		if done != nil {
			close(done)
		}
	}
}

// refresh fetches the JWKS unless a fetch was tried less than MinInterval
// ago. A failed fetch keeps the keys the cache has.
func (ks *KeySet) refresh(ctx context.Context) {
	ks.fetchMu.Lock()
	defer ks.fetchMu.Unlock()
	ks.mu.Lock()
	if now := ks.now(); now.Sub(ks.triedAt) < ks.minInterval {
		ks.mu.Unlock()
		return
	} else {
		ks.triedAt = now
	}
	ks.mu.Unlock()

	keys, err := ks.fetch(ctx)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			// At most one a MinInterval: the fetches are.
			ks.log.Warn().Err(err).Str("jwks_uri", ks.url).Msg("oidc: cannot fetch the issuer's keys; the cached ones stay in use")
		}
		return
	}
	ks.keys, ks.fetchedAt = keys, ks.now()
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
