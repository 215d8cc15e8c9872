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
	// anonymous caller. Keys.InForce tells whether it still holds.
	KeyHash [32]byte
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
	key, ok := a.Registry.Keys().Authenticate(secret)
	if !ok {
		return Identity{}, ErrBadKey
	}
	return Identity{CallerID: key.CallerID, Tiers: key.Tiers, Rate: key.Rate, KeyHash: key.Hash, Limits: key.Limits}, nil
}
