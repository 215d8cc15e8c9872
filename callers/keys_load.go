package callers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/a2ad/a2ad/internal/yamlnode"
	yaml "go.yaml.in/yaml/v3"
)

// LoadError lists every problem of a keys file.
type LoadError struct {
	// Path is the keys file, as given to LoadKeys.
	Path     string
	Problems []Problem
}

// Error returns one line per problem, each prefixed with the file path.
func (e *LoadError) Error() string { return yamlnode.JoinProblems(e.Path, e.Problems) }

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
	subject := ""
	if p.CallerID != "" {
		subject = fmt.Sprintf("caller %q", p.CallerID)
	}
	return yamlnode.FormatProblem(p.Line, p.Column, p.Pointer, subject, p.Message)
}

// The keys allowed in each mapping, in the order the messages list them.
var (
	fileKeys  = []string{"keys"}
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
	if len(l.problems) > 0 {
		sort.SliceStable(l.problems, func(i, j int) bool {
			a, b := l.problems[i], l.problems[j]
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Column < b.Column
		})
		return nil, &LoadError{Path: path, Problems: l.problems}
	}
	return keys, nil
}

// keyLoader holds the state of one LoadKeys.
type keyLoader struct {
	problems []Problem
	callerID string // id of the entry being read, for messages
}

// add records a problem at node n (nil if there is no position).
func (l *keyLoader) add(n *yaml.Node, ptr, format string, args ...any) {
	p := Problem{Pointer: ptr, CallerID: l.callerID, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	l.problems = append(l.problems, p)
}

// syntaxProblem records a YAML syntax error, with its line when the
// parser gave one.
func (l *keyLoader) syntaxProblem(err error) {
	line, msg := yamlnode.SyntaxError(err)
	l.problems = append(l.problems, Problem{Line: line, Message: msg})
}

// load parses and checks data.
func (l *keyLoader) load(data []byte) *Keys {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		l.syntaxProblem(err)
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		l.add(&extra, "", "a keys file must be a single YAML document; found another one")
	case err != io.EOF:
		l.syntaxProblem(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		l.add(nil, "", "keys file is empty; want a mapping with a keys list")
		return nil
	}
	root := yamlnode.Resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		l.add(root, "", "the keys file must be a mapping with a keys list, got %s", yamlnode.Kind(root))
		return nil
	}
	top := l.fields(root, "", "at top level", fileKeys)
	listEntry, ok := top["keys"]
	if !ok {
		l.add(root, "", "keys is required")
		return nil
	}
	list := yamlnode.Resolve(listEntry.val)
	if list.Kind != yaml.SequenceNode {
		// "keys:" with nothing after it is an empty list.
		if list.Kind == yaml.ScalarNode && list.ShortTag() == "!!null" {
			return &Keys{byHash: map[[32]byte]Key{}}
		}
		l.add(list, "/keys", "keys must be a list, got %s", yamlnode.Kind(list))
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
	before := len(l.problems)
	l.callerID = ""
	defer func() { l.callerID = "" }()
	if n.Kind != yaml.MappingNode {
		l.add(n, ptr, "each key entry must be a mapping, got %s", yamlnode.Kind(n))
		return Key{}, false
	}

	// The id comes first so that every other problem can name it.
	key := Key{Enabled: true}
	if idKey, idVal := yamlnode.Lookup(n, "id"); idKey == nil {
		l.add(n, ptr, "id is required")
	} else if id, ok := l.str(idVal, ptr+"/id", "id"); ok {
		switch line, dup := ids[id]; {
		case !callerIDPattern.MatchString(id):
			l.add(idVal, ptr+"/id", badCallerID)
		case dup:
			l.callerID = id
			l.add(idVal, ptr+"/id", "duplicate id %q (first defined at line %d)", id, line)
		default:
			l.callerID = id
			ids[id] = idVal.Line
		}
		key.CallerID = id
	}

	kv := l.fields(n, ptr, "in key entry", entryKeys)

	if e, ok := kv["hash"]; !ok {
		l.add(n, ptr, "hash is required")
	} else if s, ok := l.str(e.val, ptr+"/hash", "hash"); ok {
		// Never print the value: it might be a secret pasted by mistake.
		if h, ok := parseHash(s); !ok {
			l.add(e.val, ptr+"/hash", `hash must be "sha256:" followed by 64 hex digits`)
		} else if first, dup := hashes[h]; dup {
			l.add(e.val, ptr+"/hash", "duplicate hash: the same secret as caller %q (line %d)",
				first.callerID, first.line)
		} else {
			key.Hash = h
			hashes[h] = firstUse{key.CallerID, e.val.Line}
		}
	}

	if e, ok := kv["tiers"]; !ok {
		l.add(n, ptr, "tiers is required")
	} else {
		key.Tiers = l.tiers(e.val, ptr+"/tiers")
	}

	if e, ok := kv["rate"]; ok {
		key.Rate = l.rate(e.val, ptr+"/rate")
	}

	if e, ok := kv["enabled"]; ok {
		key.Enabled = l.boolean(e.val, ptr+"/enabled", "enabled")
	}

	if e, ok := kv["quota_tasks"]; ok {
		if n, ok := l.limit(e.val, ptr+"/quota_tasks", "quota_tasks", math.MaxInt64); ok {
			key.Limits.QuotaTasks = &n
		}
	}
	if e, ok := kv["quota_bytes"]; ok {
		if n, ok := l.limit(e.val, ptr+"/quota_bytes", "quota_bytes", math.MaxInt64); ok {
			key.Limits.QuotaBytes = &n
		}
	}
	if e, ok := kv["max_history"]; ok {
		if n, ok := l.limit(e.val, ptr+"/max_history", "max_history", math.MaxInt32); ok {
			m := int(n)
			key.Limits.MaxHistory = &m
		}
	}
	if e, ok := kv["max_calls"]; ok {
		if n, ok := l.limit(e.val, ptr+"/max_calls", "max_calls", math.MaxInt32); ok {
			m := int(n)
			key.Limits.MaxCalls = &m
		}
	}
	if e, ok := kv["rate_bytes"]; ok {
		if n, ok := l.limit(e.val, ptr+"/rate_bytes", "rate_bytes", math.MaxInt64); ok {
			key.Limits.RateBytes = &n
		}
	}
	return key, len(l.problems) == before
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
		l.add(v, ptr, "tiers must be a list of tier names, got %s", yamlnode.Kind(n))
		return nil
	}
	if len(n.Content) == 0 {
		l.add(v, ptr, "tiers must list at least one tier")
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		ip, il := ptr+"/"+strconv.Itoa(i), "tiers["+strconv.Itoa(i)+"]"
		s, ok := l.str(item, ip, il)
		switch {
		case !ok:
		case s == "":
			l.add(item, ip, "%s must not be empty", il)
		case slices.Contains(out, s):
			l.add(item, ip, "%s repeats tier %q", il, s)
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
		l.add(v, ptr, "rate must be a mapping with per_second and burst, got %s", yamlnode.Kind(n))
		return nil
	}
	before := len(l.problems)
	kv := l.fields(n, ptr, "in rate", rateKeys)
	r := &Rate{}
	if e, ok := kv["per_second"]; !ok {
		l.add(n, ptr, "rate.per_second is required")
	} else {
		vn := yamlnode.Resolve(e.val)
		var f float64
		if vn.Kind != yaml.ScalarNode || (vn.ShortTag() != "!!int" && vn.ShortTag() != "!!float") || vn.Decode(&f) != nil {
			l.add(e.val, ptr+"/per_second", "rate.per_second must be a number, got %s", yamlnode.Kind(vn))
		} else if !(f > 0) || math.IsInf(f, 0) {
			l.add(e.val, ptr+"/per_second", "rate.per_second must be a positive number, got %s", vn.Value)
		} else {
			r.PerSecond = f
		}
	}
	if e, ok := kv["burst"]; !ok {
		l.add(n, ptr, "rate.burst is required")
	} else {
		vn := yamlnode.Resolve(e.val)
		var b int64
		if vn.Kind != yaml.ScalarNode || vn.ShortTag() != "!!int" {
			l.add(e.val, ptr+"/burst", "rate.burst must be an integer, got %s", yamlnode.Kind(vn))
		} else if vn.Decode(&b) != nil || b < 1 || b > math.MaxInt32 {
			l.add(e.val, ptr+"/burst", "rate.burst must be an integer from 1 to %d, got %s", math.MaxInt32, vn.Value)
		} else {
			r.Burst = int(b)
		}
	}
	if len(l.problems) > before {
		return nil
	}
	return r
}

// limit reads an integer from 0 (unlimited) to most.
func (l *keyLoader) limit(v *yaml.Node, ptr, label string, most int64) (int64, bool) {
	n := yamlnode.Resolve(v)
	var i int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		l.add(v, ptr, "%s must be an integer (0 for no limit), got %s", label, yamlnode.Kind(n))
		return 0, false
	}
	if n.Decode(&i) != nil || i < 0 || i > most {
		l.add(v, ptr, "%s must be an integer from 0 (no limit) to %d, got %s", label, most, n.Value)
		return 0, false
	}
	return i, true
}

// entry is one key of a mapping with its value.
type entry struct{ key, val *yaml.Node }

// fields reads the mapping n whose keys must be among allowed, reporting
// unknown, duplicate and non-string keys. where completes the unknown-key
// message ("in key entry").
func (l *keyLoader) fields(n *yaml.Node, ptr, where string, allowed []string) map[string]entry {
	out := map[string]entry{}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, v := n.Content[i], n.Content[i+1]
		k := yamlnode.Resolve(kn)
		if k.Kind != yaml.ScalarNode {
			l.add(kn, ptr, "keys must be strings, got %s", yamlnode.Kind(k))
			continue
		}
		kp := ptr + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k.Value)
		if k.ShortTag() == "!!merge" {
			l.add(kn, kp, "merge keys (<<) are not supported")
			continue
		}
		if first, dup := seen[k.Value]; dup {
			l.add(kn, kp, "duplicate key %q (first at line %d)", k.Value, first.Line)
			continue
		}
		seen[k.Value] = kn
		if !slices.Contains(allowed, k.Value) {
			l.add(kn, kp, "unknown key %q %s; allowed: %s", k.Value, where, strings.Join(allowed, ", "))
			continue
		}
		out[k.Value] = entry{kn, v}
	}
	return out
}

// str reads a string. It never prints the value.
func (l *keyLoader) str(v *yaml.Node, ptr, label string) (string, bool) {
	if n := yamlnode.Resolve(v); n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return n.Value, true
	}
	hint := ""
	if n := yamlnode.Resolve(v); n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		hint = "; quote it to make it a string"
	}
	l.add(v, ptr, "%s must be a string, got %s%s", label, yamlnode.Kind(v), hint)
	return "", false
}

// boolean reads true or false.
func (l *keyLoader) boolean(v *yaml.Node, ptr, label string) bool {
	var b bool
	if n := yamlnode.Resolve(v); n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" && n.Decode(&b) == nil {
		return b
	}
	l.add(v, ptr, "%s must be true or false, got %s", label, yamlnode.Kind(v))
	return false
}
