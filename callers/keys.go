package callers

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/a2ad/a2ad/internal/syncdir"
	"github.com/a2ad/a2ad/internal/yamlnode"
	yaml "go.yaml.in/yaml/v3"
)

// Key is one caller's API key entry.
type Key struct {
	// CallerID is "id" in the file: required, unique, 1 to 64 characters
	// of A-Z, a-z, 0-9, '.', '_', ':' and '-'.
	CallerID string
	// Hash is "hash" in the file, "sha256:<64 hex digits>": the SHA-256 of
	// the caller's secret. Required and unique.
	Hash [32]byte
	// Tiers is "tiers" in the file: one or more tier names.
	Tiers []string
	// Rate is "rate" in the file; nil when the entry has none.
	Rate *Rate
	// Limits are the entry's own limits.
	Limits Limits
	// Enabled is "enabled" in the file, true by default. A disabled key
	// never authenticates.
	Enabled bool
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
}

// clone copies l so that the copy shares nothing with it.
func (l Limits) clone() Limits {
	return Limits{QuotaTasks: clonePtr(l.QuotaTasks), QuotaBytes: clonePtr(l.QuotaBytes), MaxHistory: clonePtr(l.MaxHistory),
		MaxCalls: clonePtr(l.MaxCalls), RateBytes: clonePtr(l.RateBytes)}
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
	byHash map[[32]byte]Key
}

// Len returns the number of entries, enabled or not.
func (k *Keys) Len() int { return len(k.byHash) }

// List returns the entries, enabled or not, ordered by caller id.
func (k *Keys) List() []Key {
	out := make([]Key, 0, len(k.byHash))
	for _, key := range k.byHash {
		out = append(out, key.clone())
	}
	slices.SortFunc(out, func(a, b Key) int { return strings.Compare(a.CallerID, b.CallerID) })
	return out
}

// Authenticate returns the enabled key whose hash is the SHA-256 of
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
	if !found || subtle.ConstantTimeCompare(sum[:], key.Hash[:]) != 1 || !key.Enabled {
		return Key{}, false
	}
	return key.clone(), true
}

// InForce reports whether the key whose hash is hash still authenticates
// callerID: it is in the file, enabled, and still the key of that caller.
// A key revoked (its entry removed or its hash changed), disabled or given
// to another caller id is not.
func (k *Keys) InForce(callerID string, hash [32]byte) bool {
	if k == nil {
		return false
	}
	key, found := k.byHash[hash]
	return found && key.Enabled && key.CallerID == callerID
}

// clone copies the parts of key that a caller could modify.
func (key Key) clone() Key {
	key.Tiers = slices.Clone(key.Tiers)
	if key.Rate != nil {
		r := *key.Rate
		key.Rate = &r
	}
	key.Limits = key.Limits.clone()
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

// AppendKey adds an enabled entry for callerID with tiers to the keys file
// at path, creating the file if it does not exist, and returns the new
// secret, which is written nowhere: the file holds only its hash. The file
// is replaced atomically and has mode 0600. AppendKey returns an error if
// callerID or a tier is invalid, callerID is already in the file, or the
// existing file has problems (its *LoadError). Concurrent calls on the same
// file may lose an entry.
func AppendKey(path, callerID string, tiers []string) (secret string, err error) {
	return putKey(path, callerID, tiers, false)
}

// ReplaceKey is AppendKey, but an entry callerID already has is replaced
// by the new one (a new secret, enabled, with tiers and none of the old
// entry's own limits) instead of being an error: the old secret stops
// working once the server reloads the file.
func ReplaceKey(path, callerID string, tiers []string) (secret string, err error) {
	return putKey(path, callerID, tiers, true)
}

func putKey(path, callerID string, tiers []string, replace bool) (secret string, err error) {
	if !callerIDPattern.MatchString(callerID) {
		return "", errors.New("append key: caller " + badCallerID)
	}
	if len(tiers) == 0 {
		return "", fmt.Errorf("append key for caller %q: tiers must list at least one tier", callerID)
	}
	for i, t := range tiers {
		if t == "" || slices.Contains(tiers[:i], t) {
			return "", fmt.Errorf("append key for caller %q: tiers must be distinct and not empty", callerID)
		}
	}

	doc, list, oldLen, err := openKeysDoc(path, callerID, replace)
	if err != nil {
		return "", err
	}

	secret, err = NewSecret()
	if err != nil {
		return "", fmt.Errorf("append key: %w", err)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	tierList := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
	for _, t := range tiers {
		tierList.Content = append(tierList.Content, str(t))
	}
	list.Content = append(list.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		str("id"), str(callerID),
		str("hash"), str(HashSecret(secret)),
		str("tiers"), tierList,
	}})

	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return "", fmt.Errorf("append key: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("append key: %w", err)
	}
	// Check what is about to be written, so a bug here cannot break the file.
	if ks, err := parseKeys(path, out.Bytes()); err != nil {
		return "", fmt.Errorf("append key: the new file would not load: %w", err)
	} else if ks.Len() != oldLen+1 {
		return "", fmt.Errorf("append key: the new file would hold %d keys instead of %d", ks.Len(), oldLen+1)
	}
	if err := writeFileAtomic(path, out.Bytes()); err != nil {
		return "", fmt.Errorf("append key: %w", err)
	}
	return secret, nil
}

// openKeysDoc reads the keys file at path, which may be missing or empty,
// as a YAML document to append to: it returns the document, its keys
// list, and how many keys the file holds. It returns the file's
// *LoadError if it has problems, and an error if callerID has a key in it,
// unless replace, which drops that key from the list (and the count).
func openKeysDoc(path, callerID string, replace bool) (doc yaml.Node, list *yaml.Node, oldLen int, err error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		return doc, nil, 0, fmt.Errorf("append key: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{
			Kind: yaml.MappingNode, Tag: "!!map",
			Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: "keys"}, list},
		}}}
		return doc, list, 0, nil
	}
	ks, err := parseKeys(path, data)
	if err != nil {
		return doc, nil, 0, err
	}
	has := false
	for _, k := range ks.byHash {
		if k.CallerID == callerID {
			has = true
		}
	}
	if has && !replace {
		return doc, nil, 0, fmt.Errorf("append key: caller %q already has a key in %s (--force replaces it)", callerID, path)
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return doc, nil, 0, fmt.Errorf("append key: %w", err)
	}
	_, list = yamlnode.Lookup(yamlnode.Resolve(doc.Content[0]), "keys")
	if list = yamlnode.Resolve(list); list.Kind != yaml.SequenceNode { // "keys:" with no value
		*list = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	}
	list.Style = 0 // an empty "[]" list becomes a block list
	n := ks.Len()
	if has {
		list.Content = slices.DeleteFunc(list.Content, func(e *yaml.Node) bool {
			_, id := yamlnode.Lookup(yamlnode.Resolve(e), "id")
			return id != nil && yamlnode.Resolve(id).Value == callerID
		})
		n--
	}
	return doc, list, n, nil
}

// writeFileAtomic replaces the file at path by data, with mode 0600,
// through a temporary file in the same directory and a rename.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename durable; not every platform can sync a directory.
	_ = syncdir.Sync(dir)
	return nil
}
