package callers

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/a2ad/a2ad/internal/yamlnode"
	yaml "go.yaml.in/yaml/v3"
)

// LoadError lists every problem of a keys file; its Path is the keys
// file, as given to LoadKeys.
type LoadError = yamlnode.LoadError[Problem]

// Problem is one thing wrong with a keys file. Messages never hold a
// secret or a hash.
type Problem struct {
	// Line and Column are the 1-based position in the file, 0 if unknown.
	Line, Column int
	// Pointer is the JSON pointer of the offending value, e.g.
	// "/keys/2/rate/burst"; "" is the whole document.
	Pointer string
	// CallerID is the id of the entry the problem is in, "" when it is not
	// inside an entry or the id is unknown or invalid.
	CallerID string
	// Message says what is wrong: lower-case, no final period.
	Message string
}

// String formats the problem as `12:5: /keys/2/rate/burst (caller
// "billing"): burst must be at least 1, got 0`, leaving out the parts that
// are unknown. LoadError.Error prefixes it with the path.
func (p Problem) String() string {
	return yamlnode.FormatProblem(p.Line, p.Column, p.Pointer, yamlnode.Subject("caller", p.CallerID), p.Message)
}

// toProblem converts a problem the loader recorded.
func toProblem(p yamlnode.Problem) Problem {
	return Problem{Line: p.Line, Column: p.Column, Pointer: p.Pointer, CallerID: p.ID, Message: p.Message}
}

// The keys allowed in each mapping, in the order the messages list them.
var (
	entryKeys = []string{"id", "hash", "keys", "tiers", "rate", "enabled", "quota_tasks", "quota_bytes", "max_history", "max_calls", "rate_bytes", "idempotency_window", "tls_subjects"}
	rateKeys  = []string{"per_second", "burst"}
	keyKeys   = []string{"id", "hash", "created", "revoked"}
)

// The versions of the keys file format. Version 1 (no "version" at the
// top) gives each caller entry one key, its "hash"; version 2 gives each
// entry a "keys" list, each key with an id, a hash, and when it was
// created and revoked.
const (
	Version1 = 1
	Version2 = 2
)

var callerIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

const badCallerID = "id must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'"

// LoadKeys reads and checks the keys file at path. It returns every
// problem found, not just the first, as a *LoadError.
func LoadKeys(path string) (*Keys, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &LoadError{Path: path, Problems: []Problem{{Message: "cannot read keys file: " + err.Error()}}}
	}
	return parseKeys(path, data)
}

// parseKeys checks data, the contents of the keys file at path.
func parseKeys(path string, data []byte) (*Keys, error) {
	l := &keyLoader{}
	keys := l.load(data)
	if err := yamlnode.Err(&l.Checker, path, toProblem); err != nil {
		return nil, err
	}
	return keys, nil
}

// keyLoader holds the state of one LoadKeys. Its Checker's ID is the id of
// the entry being read, for messages.
type keyLoader struct {
	yamlnode.Checker
	version  int                 // the file's format version
	subjects map[string]firstUse // tls_subjects seen, see tlsSubjects
}

// load parses and checks data.
func (l *keyLoader) load(data []byte) *Keys {
	list, top := l.TopListWith(data, "keys file", "keys", []string{"version"})
	l.version = Version1
	if e, ok := top["version"]; ok {
		switch v := yamlnode.Resolve(e.Val); {
		case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!int" && (v.Value == "1" || v.Value == "2"):
			l.version = int(v.Value[0] - '0')
		case v.Kind == yaml.ScalarNode:
			l.Add(e.Val, "/version", "version must be 1 or 2, got %q", v.Value)
		default:
			l.Add(e.Val, "/version", "version must be 1 or 2, got %s", yamlnode.Kind(v))
		}
	}
	if list == nil {
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		// "keys:" with nothing after it is an empty list.
		if list.Kind == yaml.ScalarNode && list.ShortTag() == "!!null" {
			return &Keys{byHash: map[[32]byte]Key{}, callers: map[string]struct{}{}, version: l.version}
		}
		l.Add(list, "/keys", "keys must be a list, got %s", yamlnode.Kind(list))
		return nil
	}

	ks := &Keys{byHash: make(map[[32]byte]Key, len(list.Content)), callers: map[string]struct{}{}, version: l.version}
	ids := map[string]int{} // caller id → line
	hashes := map[[32]byte]firstUse{}
	for i, item := range list.Content {
		if entry, ok := l.entry("/keys/"+strconv.Itoa(i), yamlnode.Resolve(item), ids, hashes); ok {
			for _, key := range entry {
				ks.byHash[key.Hash] = key
				ks.callers[key.CallerID] = struct{}{}
			}
			ks.addSubjects(entry)
			ks.entries++
		}
	}
	return ks
}

// entry checks one item of the keys list, a caller's entry, and returns
// its keys.
func (l *keyLoader) entry(ptr string, n *yaml.Node, ids map[string]int, hashes map[[32]byte]firstUse) ([]Key, bool) {
	before := l.Count()
	l.ID = ""
	defer func() { l.ID = "" }()
	if n.Kind != yaml.MappingNode {
		l.Add(n, ptr, "each key entry must be a mapping, got %s", yamlnode.Kind(n))
		return nil, false
	}

	// The id comes first so that every other problem can name it.
	key := Key{Enabled: true}
	if idKey, idVal := yamlnode.Lookup(n, "id"); idKey == nil {
		l.Add(n, ptr, "id is required")
	} else if id, ok := l.Str(idVal, ptr+"/id", "id"); ok {
		switch line, dup := ids[id]; {
		case !callerIDPattern.MatchString(id):
			l.Add(idVal, ptr+"/id", badCallerID)
		case dup:
			l.ID = id
			l.Add(idVal, ptr+"/id", "duplicate id %q (first defined at line %d)", id, line)
		default:
			l.ID = id
			ids[id] = idVal.Line
		}
		key.CallerID = id
	}

	kv := l.Fields(n, ptr, "in key entry", entryKeys)
	var keys []Key
	if l.version == Version1 {
		keys = l.entryHash(n, kv, ptr, key.CallerID, hashes)
	} else {
		keys = l.entryKeys(n, kv, ptr, key.CallerID, hashes)
	}
	if e, ok := kv["tiers"]; !ok {
		l.Add(n, ptr, "tiers is required")
	} else {
		key.Tiers = l.tiers(e.Val, ptr+"/tiers")
	}
	if e, ok := kv["rate"]; ok {
		key.Rate = l.rate(e.Val, ptr+"/rate")
	}
	if e, ok := kv["enabled"]; ok {
		key.Enabled = l.Bool(e.Val, ptr+"/enabled", "enabled")
	}
	l.limits(kv, ptr, &key.Limits)
	if e, ok := kv["tls_subjects"]; ok {
		key.TLSSubjects = l.tlsSubjects(e.Val, ptr+"/tls_subjects")
	}
	for i, k := range keys {
		// Each key shares its caller's part, as a copy of its own.
		e := key.clone()
		e.ID, e.Hash, e.Created, e.Revoked = k.ID, k.Hash, k.Created, k.Revoked
		keys[i] = e
	}
	return keys, l.Count() == before
}

// entryHash reads the one key of the version 1 entry of callerID: its
// "hash". Its id derives from the hash (KeyIDOf).
func (l *keyLoader) entryHash(n *yaml.Node, kv map[string]yamlnode.Entry, ptr, callerID string, hashes map[[32]byte]firstUse) []Key {
	if e, ok := kv["keys"]; ok {
		l.Add(e.Key, ptr+"/keys", "a list of keys per caller needs \"version: 2\" at the top of the file")
	}
	e, ok := kv["hash"]
	if !ok {
		if _, hasList := kv["keys"]; !hasList {
			l.Add(n, ptr, "hash is required")
		}
		return nil
	}
	h, ok := l.hash(e.Val, ptr+"/hash", callerID, hashes)
	if !ok {
		return nil
	}
	return []Key{{ID: KeyIDOf(h), Hash: h}}
}

// entryKeys reads the "keys" list of the version 2 entry of callerID.
func (l *keyLoader) entryKeys(n *yaml.Node, kv map[string]yamlnode.Entry, ptr, callerID string, hashes map[[32]byte]firstUse) []Key {
	if e, ok := kv["hash"]; ok {
		l.Add(e.Key, ptr+"/hash", "in a version 2 file, a caller's hash goes in its keys list")
	}
	e, ok := kv["keys"]
	if !ok {
		l.Add(n, ptr, "keys is required (a list of the caller's keys)")
		return nil
	}
	list := yamlnode.Resolve(e.Val)
	if list.Kind != yaml.SequenceNode {
		l.Add(e.Val, ptr+"/keys", "keys must be a list of the caller's keys, got %s", yamlnode.Kind(list))
		return nil
	}
	if len(list.Content) == 0 {
		l.Add(e.Val, ptr+"/keys", "keys must list at least one key")
		return nil
	}
	var out []Key
	keyIDs := map[string]int{}
	for i, item := range list.Content {
		if key, ok := l.key(ptr+"/keys/"+strconv.Itoa(i), yamlnode.Resolve(item), callerID, keyIDs, hashes); ok {
			out = append(out, key)
		}
	}
	return out
}

// key reads one key of a version 2 entry: {id, hash, created, revoked}.
func (l *keyLoader) key(ptr string, n *yaml.Node, callerID string, keyIDs map[string]int, hashes map[[32]byte]firstUse) (Key, bool) {
	if n.Kind != yaml.MappingNode {
		l.Add(n, ptr, "each key must be a mapping with id and hash, got %s", yamlnode.Kind(n))
		return Key{}, false
	}
	before := l.Count()
	kv := l.Fields(n, ptr, "in key", keyKeys)
	var key Key
	if e, ok := kv["id"]; !ok {
		l.Add(n, ptr, "id is required")
	} else if id, ok := l.Str(e.Val, ptr+"/id", "id"); ok {
		if line, dup := keyIDs[id]; dup {
			l.Add(e.Val, ptr+"/id", "duplicate key id %q (first defined at line %d)", id, line)
		} else if !callerIDPattern.MatchString(id) {
			l.Add(e.Val, ptr+"/id", "key "+badCallerID)
		} else {
			keyIDs[id] = e.Val.Line
			key.ID = id
		}
	}
	if e, ok := kv["hash"]; !ok {
		l.Add(n, ptr, "hash is required")
	} else if h, ok := l.hash(e.Val, ptr+"/hash", callerID, hashes); ok {
		key.Hash = h
	}
	if e, ok := kv["created"]; ok {
		key.Created = l.time(e.Val, ptr+"/created", "created")
	}
	if e, ok := kv["revoked"]; ok {
		key.Revoked = l.time(e.Val, ptr+"/revoked", "revoked")
	}
	return key, l.Count() == before
}

// hash reads "sha256:<64 hex digits>", unique in the file.
func (l *keyLoader) hash(v *yaml.Node, ptr, callerID string, hashes map[[32]byte]firstUse) ([32]byte, bool) {
	s, ok := l.Str(v, ptr, "hash")
	if !ok {
		return [32]byte{}, false
	}
	// Never print the value: it might be a secret pasted by mistake.
	h, ok := parseHash(s)
	if !ok {
		l.Add(v, ptr, `hash must be "sha256:" followed by 64 hex digits`)
		return h, false
	}
	if first, dup := hashes[h]; dup {
		l.Add(v, ptr, "duplicate hash: the same secret as caller %q (line %d)", first.callerID, first.line)
		return h, false
	}
	hashes[h] = firstUse{callerID, v.Line}
	return h, true
}

// time reads an RFC 3339 time, such as 2026-11-24T06:00:00Z.
func (l *keyLoader) time(v *yaml.Node, ptr, label string) time.Time {
	n := yamlnode.Resolve(v)
	if n.Kind != yaml.ScalarNode {
		l.Add(v, ptr, "%s must be a time such as 2026-11-24T06:00:00Z, got %s", label, yamlnode.Kind(n))
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, n.Value)
	if err == nil {
		return t.UTC()
	}
	l.Add(v, ptr, "%s must be a time such as 2026-11-24T06:00:00Z, got %q", label, n.Value)
	return time.Time{}
}

// limits reads an entry's own limits, those kv holds, into lim.
func (l *keyLoader) limits(kv map[string]yamlnode.Entry, ptr string, lim *Limits) {
	if e, ok := kv["quota_tasks"]; ok {
		if n, ok := l.limit(e.Val, ptr+"/quota_tasks", "quota_tasks", math.MaxInt64); ok {
			lim.QuotaTasks = &n
		}
	}
	if e, ok := kv["quota_bytes"]; ok {
		if n, ok := l.limit(e.Val, ptr+"/quota_bytes", "quota_bytes", math.MaxInt64); ok {
			lim.QuotaBytes = &n
		}
	}
	if e, ok := kv["max_history"]; ok {
		if n, ok := l.limit(e.Val, ptr+"/max_history", "max_history", math.MaxInt32); ok {
			m := int(n)
			lim.MaxHistory = &m
		}
	}
	if e, ok := kv["max_calls"]; ok {
		if n, ok := l.limit(e.Val, ptr+"/max_calls", "max_calls", math.MaxInt32); ok {
			m := int(n)
			lim.MaxCalls = &m
		}
	}
	if e, ok := kv["rate_bytes"]; ok {
		if n, ok := l.limit(e.Val, ptr+"/rate_bytes", "rate_bytes", math.MaxInt64); ok {
			lim.RateBytes = &n
		}
	}
	if e, ok := kv["idempotency_window"]; ok {
		if w, ok := l.idemWindow(e.Val, ptr+"/idempotency_window"); ok {
			lim.IdemWindow = &w
		}
	}
}

// firstUse is where a hash first appears.
type firstUse struct {
	callerID string
	line     int
}

// tiers reads a non-empty list of distinct, non-empty tier names.
func (l *keyLoader) tiers(v *yaml.Node, ptr string) []string {
	n := yamlnode.Resolve(v)
	if n.Kind != yaml.SequenceNode {
		l.Add(v, ptr, "tiers must be a list of tier names, got %s", yamlnode.Kind(n))
		return nil
	}
	if len(n.Content) == 0 {
		l.Add(v, ptr, "tiers must list at least one tier")
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		ip, il := ptr+"/"+strconv.Itoa(i), "tiers["+strconv.Itoa(i)+"]"
		s, ok := l.Str(item, ip, il)
		switch {
		case !ok:
		case s == "":
			l.Add(item, ip, "%s must not be empty", il)
		case slices.Contains(out, s):
			l.Add(item, ip, "%s repeats tier %q", il, s)
		default:
			out = append(out, s)
		}
	}
	return out
}

// rate reads {per_second, burst}; both are required.
func (l *keyLoader) rate(v *yaml.Node, ptr string) *Rate {
	n := yamlnode.Resolve(v)
	if n.Kind != yaml.MappingNode {
		l.Add(v, ptr, "rate must be a mapping with per_second and burst, got %s", yamlnode.Kind(n))
		return nil
	}
	before := l.Count()
	kv := l.Fields(n, ptr, "in rate", rateKeys)
	r := &Rate{}
	if e, ok := kv["per_second"]; !ok {
		l.Add(n, ptr, "rate.per_second is required")
	} else {
		vn := yamlnode.Resolve(e.Val)
		var f float64
		if vn.Kind != yaml.ScalarNode || (vn.ShortTag() != "!!int" && vn.ShortTag() != "!!float") || vn.Decode(&f) != nil {
			l.Add(e.Val, ptr+"/per_second", "rate.per_second must be a number, got %s", yamlnode.Kind(vn))
		} else if !(f > 0) || math.IsInf(f, 0) {
			l.Add(e.Val, ptr+"/per_second", "rate.per_second must be a positive number, got %s", vn.Value)
		} else {
			r.PerSecond = f
		}
	}
	if e, ok := kv["burst"]; !ok {
		l.Add(n, ptr, "rate.burst is required")
	} else {
		vn := yamlnode.Resolve(e.Val)
		var b int64
		if vn.Kind != yaml.ScalarNode || vn.ShortTag() != "!!int" {
			l.Add(e.Val, ptr+"/burst", "rate.burst must be an integer, got %s", yamlnode.Kind(vn))
		} else if vn.Decode(&b) != nil || b < 1 || b > math.MaxInt32 {
			l.Add(e.Val, ptr+"/burst", "rate.burst must be an integer from 1 to %d, got %s", math.MaxInt32, vn.Value)
		} else {
			r.Burst = int(b)
		}
	}
	if l.Count() > before {
		return nil
	}
	return r
}

// limit reads an integer from 0 (unlimited) to most.
func (l *keyLoader) limit(v *yaml.Node, ptr, label string, most int64) (int64, bool) {
	n := yamlnode.Resolve(v)
	var i int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		l.Add(v, ptr, "%s must be an integer (0 for no limit), got %s", label, yamlnode.Kind(n))
		return 0, false
	}
	if n.Decode(&i) != nil || i < 0 || i > most {
		l.Add(v, ptr, "%s must be an integer from 0 (no limit) to %d, got %s", label, most, n.Value)
		return 0, false
	}
	return i, true
}
