package callers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Errors of Authenticator.Identify.
var (
	// ErrNoKey: the request presents no key and anonymous access is off.
	ErrNoKey = errors.New("no API key")
	// ErrBadKey: the request presents a key that matches no enabled
	// entry (unknown, revoked or disabled), or a credential a2ad does not
	// take.
	ErrBadKey = errors.New("invalid API key")
	// ErrConflictingKeys: the request presents more than one credential,
	// and they are not one and the same key.
	ErrConflictingKeys = errors.New("conflicting API keys")
)

// Identity is who a request comes from.
type Identity struct {
	CallerID  string   // "" for the anonymous caller
	Tiers     []string // the caller's tiers
	Rate      *Rate    // the caller's own rate; nil for the defaults
	Limits    Limits   // the caller's own storage limits; nil fields for the defaults
	Anonymous bool
	// KeyHash is the hash of the key the caller presented; zero for the
	// anonymous caller and for a token. Keys.InForce tells whether it
	// still holds.
	KeyHash [32]byte
	// KeyID is the id of that key, for the audit trail; "" without one.
	KeyID string
	// Token is true for a caller identified by a TokenVerifier.
	Token bool
}

// TokenVerifier identifies the caller of a bearer token that is not an
// API key: an OpenID Connect JWT (see package callers/oidc).
type TokenVerifier interface {
	// Verify returns the identity token asserts, or an error saying which
	// check it failed (never the token itself).
	Verify(ctx context.Context, token string) (Identity, error)
}

// LooksLikeJWT reports whether s has the shape of a JWS in compact form:
// three dot-separated parts. a2ad's own secrets never hold a dot.
func LooksLikeJWT(s string) bool { return strings.Count(s, ".") == 2 }

// Usage records when each key was last used, in memory only: keeping it
// costs no write per request. It is safe for concurrent use.
type Usage struct {
	m sync.Map // [32]byte key hash → *atomic.Int64, Unix seconds
}

// Touch records a use of the key whose hash is hash at now. Uses within
// the same second as the last one recorded write nothing.
func (u *Usage) Touch(hash [32]byte, now time.Time) {
	sec := now.Unix()
	v, ok := u.m.Load(hash)
	if !ok {
		v, _ = u.m.LoadOrStore(hash, new(atomic.Int64))
	}
	last := v.(*atomic.Int64)
	if old := last.Load(); old < sec {
		last.CompareAndSwap(old, sec)
	}
}

// Last returns when the key whose hash is hash was last used since the
// server started, zero if it was not.
func (u *Usage) Last(hash [32]byte) time.Time {
	v, ok := u.m.Load(hash)
	if !ok {
		return time.Time{}
	}
	return time.Unix(v.(*atomic.Int64).Load(), 0).UTC()
}

// Authenticator identifies the caller of a request by its API key or, with
// Tokens, by a token.
type Authenticator struct {
	// Registry holds the API keys; nil for none (tokens only).
	Registry *Registry
	// Tokens, when set, verifies a bearer credential that is no key in
	// force and looks like a JWT. The caller id it asserts may not be one
	// of the keys file's: such a token is refused (ErrBadKey), so that an
	// identity at the issuer can never act as a key's caller.
	Tokens TokenVerifier
	// Usage, when set, records each key's last use.
	Usage *Usage
	// Now is the clock of Usage; nil means time.Now.
	Now func() time.Time
	// Anonymous serves requests that present no key, as the anonymous
	// caller in AnonymousTiers. A request that presents a bad key is
	// refused either way: it is never served as anonymous.
	Anonymous      bool
	AnonymousTiers []string
}

// Identify returns the identity of r's caller, or ErrNoKey, ErrBadKey or
// ErrConflictingKeys (see SecretFromRequest).
func (a *Authenticator) Identify(r *http.Request) (Identity, error) {
	secret, err := SecretFromRequest(r)
	switch {
	case errors.Is(err, ErrNoKey) && a.Anonymous:
		return Identity{Tiers: slices.Clone(a.AnonymousTiers), Anonymous: true}, nil
	case err != nil:
		// Basic auth, a bare "Bearer", a blank X-API-Key, two keys...: a
		// client that meant to authenticate is told so, never served as
		// anonymous.
		return Identity{}, err
	}
	var keys *Keys
	if a.Registry != nil {
		keys = a.Registry.Keys()
	}
	if key, ok := keys.Authenticate(secret); ok {
		if a.Usage != nil {
			a.Usage.Touch(key.Hash, a.now())
		}
		return Identity{CallerID: key.CallerID, Tiers: key.Tiers, Rate: key.Rate, KeyHash: key.Hash, KeyID: key.ID, Limits: key.Limits}, nil
	}
	if a.Tokens == nil || !LooksLikeJWT(secret) {
		return Identity{}, ErrBadKey
	}
	id, err := a.Tokens.Verify(r.Context(), secret)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	if keys.HasCaller(id.CallerID) {
		return Identity{}, fmt.Errorf("%w: the token's caller %q is a caller of the keys file", ErrBadKey, id.CallerID)
	}
	id.Token, id.Anonymous, id.KeyHash, id.KeyID = true, false, [32]byte{}, ""
	return id, nil
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
