package callers

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Key is one API key, with the entry of the caller it belongs to: a
// caller may have several keys at once (to rotate them without downtime),
// which share its tiers, rate, limits and tasks.
type Key struct {
	// CallerID is the entry's "id" in the file: required, unique, 1 to 64
	// characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'.
	CallerID string
	// ID names the key among its caller's, in the audit trail and to
	// revoke it: the key's "id" in a version 2 file (same characters as a
	// caller id), KeyIDOf(Hash) for the one key of a version 1 entry.
	ID string
	// Hash is "hash" in the file, "sha256:<64 hex digits>": the SHA-256 of
	// the key's secret. Required and unique in the file.
	Hash [32]byte
	// Created is when the key was made (the key's "created"); zero when
	// unknown.
	Created time.Time
	// Revoked is when the key was revoked (the key's "revoked"); zero
	// while it is in force. A revoked key never authenticates.
	Revoked time.Time
	// Tiers is "tiers" in the file: one or more tier names.
	Tiers []string
	// Rate is "rate" in the file; nil when the entry has none.
	Rate *Rate
	// Limits are the entry's own limits.
	Limits Limits
	// Enabled is the entry's "enabled", true by default. The keys of a
	// disabled caller never authenticate.
	Enabled bool
	// TLSSubjects is the entry's "tls_subjects": the subjects of the
	// client certificates that authenticate as its caller (see
	// Keys.AuthenticateSubject).
	TLSSubjects []string
}

// InForce reports whether the key authenticates: its caller is enabled
// and the key not revoked.
func (key Key) InForce() bool { return key.Enabled && key.Revoked.IsZero() }

// State names the key's state: "active", "revoked", or "disabled" (its
// caller is).
func (key Key) State() string {
	switch {
	case !key.Revoked.IsZero():
		return "revoked"
	case !key.Enabled:
		return "disabled"
	}
	return "active"
}

// KeyIDOf is the id of the key whose hash is hash when the file gives it
// none (the one key of a version 1 entry): 8 hex digits of a SHA-256 of
// the hash, which tells nothing of the hash itself.
func KeyIDOf(hash [32]byte) string {
	sum := sha256.Sum256(append([]byte("a2ad key id\x00"), hash[:]...))
	return hex.EncodeToString(sum[:4])
}

// Rate is a caller's request rate: a token bucket refilled at PerSecond
// tokens a second that holds at most Burst tokens.
type Rate struct {
	PerSecond float64 // "per_second": a number > 0
	Burst     int     // "burst": an integer >= 1
}

// Limits are a caller's own limits (of storage, calls and request bytes),
// each an integer >= 0 in the file where 0 means unlimited; a nil field
// takes the server's default.
type Limits struct {
	QuotaTasks *int64 // "quota_tasks": tasks the caller may keep stored
	QuotaBytes *int64 // "quota_bytes": bytes the caller's tasks may take
	MaxHistory *int   // "max_history": messages one of its tasks may hold
	MaxCalls   *int   // "max_calls": its calls running or waiting at once
	RateBytes  *int64 // "rate_bytes": bytes a second of its request bodies
	// "idempotency_window": how long its messageIds are remembered (see
	// ParseIdemWindow: 0 here is as long as the task, IdemOff never).
	IdemWindow *time.Duration
}

// clone copies l so that the copy shares nothing with it.
func (l Limits) clone() Limits {
	return Limits{QuotaTasks: clonePtr(l.QuotaTasks), QuotaBytes: clonePtr(l.QuotaBytes), MaxHistory: clonePtr(l.MaxHistory),
		MaxCalls: clonePtr(l.MaxCalls), RateBytes: clonePtr(l.RateBytes), IdemWindow: clonePtr(l.IdemWindow)}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Keys is a loaded keys file. It is immutable and safe for concurrent use.
type Keys struct {
	byHash  map[[32]byte]Key
	callers map[string]struct{} // the caller ids
	entries int                 // caller entries
	version int                 // the file's format version
	// bySubject maps each tls_subjects item, as dn.Name.String writes it, to its caller's part of the
	// entry: no key of its own.
	bySubject map[string]Key
}

// Len returns the number of caller entries, enabled or not.
func (k *Keys) Len() int { return k.entries }

// Version returns the file's format version, Version1 or Version2.
func (k *Keys) Version() int { return k.version }

// HasCaller reports whether the file has an entry for callerID.
func (k *Keys) HasCaller(callerID string) bool {
	if k == nil {
		return false
	}
	_, ok := k.callers[callerID]
	return ok
}

// List returns the keys, in force or not, ordered by caller id, then by
// creation time (unknown first), then by key id.
func (k *Keys) List() []Key {
	out := make([]Key, 0, len(k.byHash))
	for _, key := range k.byHash {
		out = append(out, key.clone())
	}
	slices.SortFunc(out, func(a, b Key) int {
		if c := strings.Compare(a.CallerID, b.CallerID); c != 0 {
			return c
		}
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Authenticate returns the key in force whose hash is the SHA-256 of
// secret, and false if there is none.
//
// The secret itself is never compared: it is hashed first, so the map
// lookup only sees a SHA-256 digest, and timing differences in that lookup
// tell an attacker nothing usable about a stored hash (they would need a
// preimage). The final comparison against the stored hash uses
// subtle.ConstantTimeCompare.
func (k *Keys) Authenticate(secret string) (Key, bool) {
	if k == nil || secret == "" {
		return Key{}, false
	}
	sum := sha256.Sum256([]byte(secret))
	key, found := k.byHash[sum]
	if !found || subtle.ConstantTimeCompare(sum[:], key.Hash[:]) != 1 || !key.InForce() {
		return Key{}, false
	}
	return key.clone(), true
}

// InForce reports whether the key whose hash is hash still authenticates
// callerID: it is in the file, enabled, and still the key of that caller.
// A key revoked (marked so, its entry removed or its hash changed), whose
// caller is disabled, or given to another caller id is not.
func (k *Keys) InForce(callerID string, hash [32]byte) bool {
	if k == nil {
		return false
	}
	key, found := k.byHash[hash]
	return found && key.InForce() && key.CallerID == callerID
}

// TiersOf returns the tiers, as the file in force gives them, of the key
// whose hash is hash, if it still authenticates callerID (see InForce): a
// reload may change a key's tiers. ok is false for a key not in force.
func (k *Keys) TiersOf(callerID string, hash [32]byte) (tiers []string, ok bool) {
	if !k.InForce(callerID, hash) {
		return nil, false
	}
	return slices.Clone(k.byHash[hash].Tiers), true
}

// clone copies the parts of key that a caller could modify.
func (key Key) clone() Key {
	key.Tiers = slices.Clone(key.Tiers)
	if key.Rate != nil {
		r := *key.Rate
		key.Rate = &r
	}
	key.Limits = key.Limits.clone()
	key.TLSSubjects = slices.Clone(key.TLSSubjects)
	return key
}

// secretPrefix starts every secret that NewSecret makes.
const secretPrefix = "a2ad_"

// NewSecret returns a new random secret: "a2ad_" followed by the 43
// characters of the unpadded base64url encoding of 32 random bytes.
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate secret: %w", err)
	}
	return secretPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// HashSecret returns the hash of secret as it is written in a keys file:
// "sha256:" followed by 64 lower-case hex digits.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hashPrefix + hex.EncodeToString(sum[:])
}

const hashPrefix = "sha256:"

// parseHash reads "sha256:<64 hex digits>".
func parseHash(s string) ([32]byte, bool) {
	var h [32]byte
	rest, ok := strings.CutPrefix(s, hashPrefix)
	if !ok || len(rest) != hex.EncodedLen(len(h)) {
		return h, false
	}
	if _, err := hex.Decode(h[:], []byte(rest)); err != nil {
		return h, false
	}
	return h, true
}

// SecretFromRequest returns the secret the request presents, in
// "Authorization: Bearer <secret>" (the scheme in any case) or in
// "X-API-Key: <secret>". Both headers may be sent if they carry the same
// secret. It returns
//
//   - ErrNoKey when the request has neither header;
//   - ErrBadKey when its one credential is not a secret a2ad takes: another
//     Authorization scheme such as Basic, a bare "Bearer", a blank X-API-Key;
//   - ErrConflictingKeys when the credentials repeat or disagree: either
//     header more than once, or both headers with different secrets (or one
//     of them not a secret a2ad takes). Which one to believe is not a2ad's
//     guess to make.
func SecretFromRequest(r *http.Request) (string, error) {
	auths, keys := r.Header.Values("Authorization"), r.Header.Values("X-Api-Key")
	if len(auths) > 1 || len(keys) > 1 {
		return "", ErrConflictingKeys
	}
	var bearer, apiKey string
	if len(auths) == 1 {
		if scheme, rest, ok := strings.Cut(strings.TrimSpace(auths[0]), " "); ok && strings.EqualFold(scheme, "Bearer") {
			bearer = strings.TrimSpace(rest)
		}
	}
	if len(keys) == 1 {
		apiKey = strings.TrimSpace(keys[0])
	}
	switch {
	case len(auths) == 1 && len(keys) == 1:
		if bearer == "" || bearer != apiKey {
			return "", ErrConflictingKeys
		}
		return bearer, nil
	case len(auths) == 1:
		if bearer == "" {
			return "", ErrBadKey
		}
		return bearer, nil
	case len(keys) == 1:
		if apiKey == "" {
			return "", ErrBadKey
		}
		return apiKey, nil
	}
	return "", ErrNoKey
}

// Registry holds the keys in force. It is safe for concurrent use: Keys
// never blocks, and Reload swaps in a new Keys atomically.
type Registry struct {
	path string
	keys atomic.Pointer[Keys]
	mu   sync.Mutex // serializes Reload
}

// NewRegistry loads the keys file at path. It returns the *LoadError of
// LoadKeys if the file is unreadable or has problems.
func NewRegistry(path string) (*Registry, error) {
	ks, err := LoadKeys(path)
	if err != nil {
		return nil, err
	}
	r := &Registry{path: path}
	r.keys.Store(ks)
	return r, nil
}

// Reload loads the keys file again and puts it in force. If the file is
// unreadable or has problems, it returns the *LoadError and the previous
// keys stay in force.
func (r *Registry) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ks, err := LoadKeys(r.path)
	if err != nil {
		return err
	}
	r.keys.Store(ks)
	return nil
}

// Keys returns the keys in force.
func (r *Registry) Keys() *Keys { return r.keys.Load() }
