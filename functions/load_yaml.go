package functions

import (
	"encoding/json"
	"math"
	"mime"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/a2ad/a2ad/internal/yamlnode"
	"github.com/a2ad/a2ad/schemas"
	yaml "go.yaml.in/yaml/v3"
)

// This file holds the typed readers of yaml.Node values used by Load. Each
// reader records a problem at the offending node and reports whether the
// value was usable.

// strList reads a list of strings; check, if not nil, returns a problem
// with an item ("" if it is fine).
func (l *loader) strList(v *yaml.Node, ptr, label string, check func(string) string) []string {
	n := yamlnode.Resolve(v)
	if n.Kind != yaml.SequenceNode {
		l.Add(v, ptr, "%s must be a list of strings, got %s", label, yamlnode.Kind(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		ip, il := ptr+"/"+strconv.Itoa(i), label+"["+strconv.Itoa(i)+"]"
		s, ok := l.Str(item, ip, il)
		if !ok {
			continue
		}
		if check != nil {
			if msg := check(s); msg != "" {
				l.Add(item, ip, "%s %s", il, msg)
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// checkMediaType is a strList check for input_modes and output_modes.
func checkMediaType(s string) string {
	if _, _, err := mime.ParseMediaType(s); err != nil || !strings.Contains(s, "/") {
		return `is not a media type such as "application/json", got ` + strconv.Quote(s)
	}
	return ""
}

// integer reads an integer.
func (l *loader) integer(v *yaml.Node, ptr, label string) (int64, bool) {
	n := yamlnode.Resolve(v)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		l.Add(v, ptr, "%s must be an integer, got %s", label, yamlnode.Kind(v))
		return 0, false
	}
	var i int64
	if err := n.Decode(&i); err != nil {
		l.Add(v, ptr, "%s is out of range, got %s", label, n.Value)
		return 0, false
	}
	return i, true
}

// duration reads a positive Go duration string; it returns 0 if there is
// a problem.
func (l *loader) duration(v *yaml.Node, ptr, label string) time.Duration {
	n := yamlnode.Resolve(v)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		l.Add(v, ptr, `%s must be a duration string such as "30s", got %s`, label, yamlnode.Kind(v))
		return 0
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		l.Add(v, ptr, `%s is not a valid duration such as "30s", got %q`, label, n.Value)
		return 0
	}
	if d <= 0 {
		l.Add(v, ptr, "%s must be positive, got %q", label, n.Value)
		return 0
	}
	return d
}

// positive reads a positive integer.
func (l *loader) positive(v *yaml.Node, ptr, label string) int64 {
	i, ok := l.integer(v, ptr, label)
	if ok && i <= 0 {
		l.Add(v, ptr, "%s must be positive, got %d", label, i)
		return 0
	}
	return i
}

// outputCap reads a cap of a backend's output: positive and at most
// MaxResponseBytesLimit.
func (l *loader) outputCap(v *yaml.Node, ptr, label string) int64 {
	i := l.positive(v, ptr, label)
	if i > MaxResponseBytesLimit {
		l.Add(v, ptr, "%s must be at most %d (%d MiB), got %d", label, MaxResponseBytesLimit, MaxResponseBytesLimit>>20, i)
		return 0
	}
	return i
}

// metadata reads the free-form metadata mapping.
func (l *loader) metadata(v *yaml.Node, ptr string) map[string]any {
	if n := yamlnode.Resolve(v); n.Kind != yaml.MappingNode {
		l.Add(v, ptr, "metadata must be a mapping, got %s", yamlnode.Kind(n))
		return nil
	}
	val, ok := l.value(v, ptr)
	if !ok {
		return nil
	}
	return val.(map[string]any)
}

// Limits on turning a YAML tree into a Go value: aliases can make a small
// file expand enormously, or refer to themselves.
const (
	maxValueDepth = 64
	maxValueNodes = 100_000
)

// value converts a YAML tree to bool, string, int, float64, nil,
// []any and map[string]any, as encoding/json would decode it.
func (l *loader) value(v *yaml.Node, ptr string) (any, bool) {
	budget := maxValueNodes
	return l.toValue(v, ptr, 0, &budget)
}

func (l *loader) toValue(v *yaml.Node, ptr string, depth int, budget *int) (any, bool) {
	if *budget--; *budget < 0 {
		if *budget == -1 {
			l.Add(v, ptr, "value is too large: aliases expand it past %d nodes", maxValueNodes)
		}
		return nil, false
	}
	if depth > maxValueDepth {
		l.Add(v, ptr, "value is nested more than %d levels deep", maxValueDepth)
		return nil, false
	}
	n := yamlnode.Resolve(v)
	switch n.Kind {
	case yaml.MappingNode:
		return l.toMap(n, ptr, depth, budget)
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		ok := true
		for i, item := range n.Content {
			val, vok := l.toValue(item, ptr+"/"+strconv.Itoa(i), depth+1, budget)
			ok = ok && vok
			s = append(s, val)
		}
		return s, ok
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, true
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err == nil {
				return b, true
			}
		case "!!int":
			var i int
			if err := n.Decode(&i); err == nil {
				return i, true
			}
		case "!!float":
			var f float64
			if err := n.Decode(&f); err == nil {
				if math.IsInf(f, 0) || math.IsNaN(f) {
					l.Add(v, ptr, "numbers must be finite, got %s", n.Value)
					return nil, false
				}
				return f, true
			}
		default: // strings, timestamps, binary and custom tags keep their text
			return n.Value, true
		}
		l.Add(v, ptr, "cannot read %s %q", yamlnode.Kind(n), n.Value)
		return nil, false
	}
	l.Add(v, ptr, "cannot read %s", yamlnode.Kind(n))
	return nil, false
}

// toMap converts the mapping n for toValue.
func (l *loader) toMap(n *yaml.Node, ptr string, depth int, budget *int) (map[string]any, bool) {
	m := make(map[string]any, len(n.Content)/2)
	seen := map[string]int{}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := yamlnode.Resolve(kn)
		if k.Kind != yaml.ScalarNode {
			l.Add(kn, ptr, "keys must be strings, got %s", yamlnode.Kind(k))
			ok = false
			continue
		}
		kp := ptr + "/" + yamlnode.EscapePointer(k.Value)
		if k.ShortTag() == "!!merge" {
			l.Add(kn, kp, "merge keys (<<) are not supported")
			ok = false
			continue
		}
		if line, dup := seen[k.Value]; dup {
			l.Add(kn, kp, "duplicate key %q (first at line %d)", k.Value, line)
			ok = false
			continue
		}
		seen[k.Value] = kn.Line
		val, vok := l.toValue(vn, kp, depth+1, budget)
		ok = ok && vok
		m[k.Value] = val
	}
	return m, ok
}

// schema reads an inline schema (a mapping, or true/false) or a schema
// file path relative to the catalogue, and compiles it.
func (l *loader) schema(v *yaml.Node, ptr, label string) *schemas.Schema {
	n := yamlnode.Resolve(v)
	switch {
	case n.Kind == yaml.MappingNode || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool":
		val, ok := l.value(v, ptr)
		if !ok {
			return nil
		}
		raw, err := json.Marshal(val)
		if err != nil {
			l.Add(v, ptr, "%s cannot be converted to JSON: %v", label, err)
			return nil
		}
		s, err := schemas.Compile(schemaName(l.base+ptr), raw)
		if err != nil {
			l.Add(v, ptr, "%s: %v", label, err)
			return nil
		}
		return s
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		if n.Value == "" {
			l.Add(v, ptr, "%s must not be empty; give a file path or an inline schema", label)
			return nil
		}
		p := n.Value
		if !filepath.IsAbs(p) {
			p = filepath.Join(l.dir, p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			l.Add(v, ptr, "%s file %q cannot be read: %v", label, n.Value, unwrapPath(err))
			return nil
		}
		l.hash.Write(data)
		s, err := schemas.Compile(schemaName(p), data)
		if err != nil {
			l.Add(v, ptr, "%s file %q: %v", label, n.Value, err)
			return nil
		}
		return s
	}
	l.Add(v, ptr, "%s must be a mapping (an inline schema) or a string (a file path), got %s", label, yamlnode.Kind(n))
	return nil
}

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9._/-]`)

// schemaName makes a schema name that is safe inside the URL under which
// schemas.Compile registers it (a '#', '%' or space there breaks it).
func schemaName(s string) string {
	return strings.TrimLeft(unsafeNameChars.ReplaceAllString(filepath.ToSlash(s), "_"), "/")
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expand replaces ${NAME} and ${NAME:-default} in s by the variable's
// value (the default when it is unset or empty); $${ is a literal ${.
// Messages name variables but never print a value, neither of a
// variable nor of s.
func (l *loader) expand(s string, v *yaml.Node, ptr, label string) (string, bool) {
	if !strings.Contains(s, "${") {
		return s, true
	}
	var b strings.Builder
	ok := true
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				l.Add(v, ptr, "%s has a ${ without a closing }; write $${ for a literal ${", label)
				return "", false
			}
			expr := s[i+2 : i+2+end]
			i += 2 + end + 1
			name, def, hasDef := strings.Cut(expr, ":-")
			if !varName.MatchString(name) {
				l.Add(v, ptr, "%s has an invalid variable reference; want ${NAME} or ${NAME:-default} "+
					"where NAME is letters, digits and _ and does not start with a digit", label)
				ok = false
				continue
			}
			val, set := l.lookupEnv(name)
			switch {
			case set && (val != "" || !hasDef):
				b.WriteString(val)
			case hasDef:
				b.WriteString(def)
			default:
				l.Add(v, ptr, "%s references ${%s}, which is not set", label, name)
				ok = false
			}
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), ok
}

// choice reads a string that must be one of values; "" if it is not.
func (l *loader) choice(e yamlnode.Entry, label string, values ...string) string {
	s, ok := l.Str(e.Val, e.Ptr, label)
	if !ok {
		return ""
	}
	for _, v := range values {
		if s == v {
			return s
		}
	}
	l.Add(e.Val, e.Ptr, "%s must be one of %s, got %s", label, strings.Join(values, ", "), strconv.Quote(s))
	return ""
}
