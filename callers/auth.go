package callers

import (
	"errors"
	"net/http"
	"slices"
)

// Errors of Authenticator.Identify.
var (
	// ErrNoKey: the request presents no key and anonymous access is off.
	ErrNoKey = errors.New("no API key")
	// ErrBadKey: the request presents a key that matches no enabled
	// entry (unknown, revoked or disabled).
	ErrBadKey = errors.New("invalid API key")
)

// Identity is who a request comes from.
type Identity struct {
	CallerID  string   // "" for the anonymous caller
	Tiers     []string // the caller's tiers
	Rate      *Rate    // the caller's own rate; nil for the defaults
	Anonymous bool
}

// Authenticator identifies the caller of a request by its API key.
type Authenticator struct {
	Registry *Registry
	// Anonymous serves requests that present no key, as the anonymous
	// caller in AnonymousTiers. A request that presents a bad key is
	// refused either way: it is never served as anonymous.
	Anonymous      bool
	AnonymousTiers []string
}

// Identify returns the identity of r's caller, ErrNoKey or ErrBadKey.
func (a *Authenticator) Identify(r *http.Request) (Identity, error) {
	secret, ok := SecretFromRequest(r)
	if !ok {
		if presentsCredentials(r) {
			// Basic auth, a bare "Bearer", a blank X-API-Key...: a client
			// that meant to authenticate is told so, never served as
			// anonymous.
			return Identity{}, ErrBadKey
		}
		if a.Anonymous {
			return Identity{Tiers: slices.Clone(a.AnonymousTiers), Anonymous: true}, nil
		}
		return Identity{}, ErrNoKey
	}
	key, ok := a.Registry.Keys().Authenticate(secret)
	if !ok {
		return Identity{}, ErrBadKey
	}
	return Identity{CallerID: key.CallerID, Tiers: key.Tiers, Rate: key.Rate}, nil
}

// presentsCredentials reports whether r carries an Authorization or an
// X-API-Key header at all.
func presentsCredentials(r *http.Request) bool {
	_, auth := r.Header["Authorization"]
	_, key := r.Header["X-Api-Key"]
	return auth || key
}
