package callers

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"

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
	entryKeys = []string{"id", "hash", "tiers", "rate", "enabled", "quota_tasks", "quota_bytes", "max_history", "max_calls", "rate_bytes"}
	rateKeys  = []string{"per_second", "burst"}
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
}

// load parses and checks data.
func (l *keyLoader) load(data []byte) *Keys {
	list := l.TopList(data, "keys file", "keys")
	if list == nil {
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		// "keys:" with nothing after it is an empty list.
		if list.Kind == yaml.ScalarNode && list.ShortTag() == "!!null" {
			return &Keys{byHash: map[[32]byte]Key{}}
		}
		l.Add(list, "/keys", "keys must be a list, got %s", yamlnode.Kind(list))
		return nil
	}

	ks := &Keys{byHash: make(map[[32]byte]Key, len(list.Content))}
	ids := map[string]int{} // caller id → line
	hashes := map[[32]byte]firstUse{}
	for i, item := range list.Content {
		if key, ok := l.entry("/keys/"+strconv.Itoa(i), yamlnode.Resolve(item), ids, hashes); ok {
			ks.byHash[key.Hash] = key
		}
	}
	return ks
}

// entry checks one item of the keys list.
func (l *keyLoader) entry(ptr string, n *yaml.Node, ids map[string]int, hashes map[[32]byte]firstUse) (Key, bool) {
	before := l.Count()
	l.ID = ""
	defer func() { l.ID = "" }()
	if n.Kind != yaml.MappingNode {
		l.Add(n, ptr, "each key entry must be a mapping, got %s", yamlnode.Kind(n))
		return Key{}, false
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

	if e, ok := kv["hash"]; !ok {
		l.Add(n, ptr, "hash is required")
	} else if s, ok := l.Str(e.Val, ptr+"/hash", "hash"); ok {
		// Never print the value: it might be a secret pasted by mistake.
		if h, ok := parseHash(s); !ok {
			l.Add(e.Val, ptr+"/hash", `hash must be "sha256:" followed by 64 hex digits`)
		} else if first, dup := hashes[h]; dup {
			l.Add(e.Val, ptr+"/hash", "duplicate hash: the same secret as caller %q (line %d)",
				first.callerID, first.line)
		} else {
			key.Hash = h
			hashes[h] = firstUse{key.CallerID, e.Val.Line}
		}
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
	return key, l.Count() == before
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
