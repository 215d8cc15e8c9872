package yamlnode

import (
	"bytes"
	"fmt"
	"io"
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/a2ad/a2ad/internal/suggest"
)

// LoadError lists every problem of a file; P is the loader's own problem
// type, whose String method formats one problem (see FormatProblem).
type LoadError[P fmt.Stringer] struct {
	// Path is the file, as given to the loader.
	Path     string
	Problems []P
}

// Error returns one line per problem, each prefixed with the file path.
func (e *LoadError[P]) Error() string { return JoinProblems(e.Path, e.Problems) }

// Problem is one problem as a Checker records it; a loader converts it to
// its own problem type, which names ID after what it identifies.
type Problem struct {
	Line, Column int
	Pointer      string
	ID           string
	Message      string
}

// Subject names what a problem is in for FormatProblem: `function "x"`
// for kind "function" and id "x", or "" when id is unknown.
func Subject(kind, id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf("%s %q", kind, id)
}

// Checker records the problems of one file as a loader reads it, so that
// the loader reports every problem at its position, not just the first.
type Checker struct {
	// ID is the id of the entry being read (a function, a caller), ""
	// when unknown; the problems recorded meanwhile carry it.
	ID string
	// Suggest makes an unknown key's problem name the allowed key it
	// is likely a typo of.
	Suggest  bool
	problems []Problem
}

// Add records a problem at node n (nil if there is no position) whose
// JSON pointer is ptr.
func (c *Checker) Add(n *yaml.Node, ptr, format string, args ...any) {
	p := Problem{Pointer: ptr, ID: c.ID, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	c.problems = append(c.problems, p)
}

// addSyntax records a YAML syntax error, with its line when the parser
// gave one.
func (c *Checker) addSyntax(err error) {
	line, msg := SyntaxError(err)
	c.problems = append(c.problems, Problem{Line: line, Message: msg})
}

// Count returns how many problems have been recorded, so that a reader
// can tell whether a part it read had any.
func (c *Checker) Count() int { return len(c.problems) }

// Err returns nil if no problem was recorded, else a *LoadError for path
// with the problems in file order, each converted by conv.
func Err[P fmt.Stringer](c *Checker, path string, conv func(Problem) P) *LoadError[P] {
	if len(c.problems) == 0 {
		return nil
	}
	sorted := slices.Clone(c.problems)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	out := make([]P, len(sorted))
	for i, p := range sorted {
		out[i] = conv(p)
	}
	return &LoadError[P]{Path: path, Problems: out}
}

// TopList reads data as one YAML document that must be a mapping holding
// the single key key, and returns that key's value, resolved. It returns
// nil if there is no such value, having recorded why. what names the file
// in messages ("catalogue", "keys file").
func (c *Checker) TopList(data []byte, what, key string) *yaml.Node {
	list, _ := c.TopListWith(data, what, key, nil)
	return list
}

// TopListWith is TopList for a mapping that may also hold the keys in
// optional, which it returns with their entries.
func (c *Checker) TopListWith(data []byte, what, key string, optional []string) (*yaml.Node, map[string]Entry) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		c.addSyntax(err)
		return nil, nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		c.Add(&extra, "", "a %s must be a single YAML document; found another one", what)
	case err != io.EOF:
		c.addSyntax(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		c.Add(nil, "", "%s is empty; want a mapping with a %s list", what, key)
		return nil, nil
	}
	root := Resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		c.Add(root, "", "the %s must be a mapping with a %s list, got %s", what, key, Kind(root))
		return nil, nil
	}
	top := c.Fields(root, "", "at top level", append([]string{key}, optional...))
	e, ok := top[key]
	if !ok {
		c.Add(root, "", "%s is required", key)
		return nil, top
	}
	return Resolve(e.Val), top
}

// EscapePointer escapes one JSON pointer reference token (RFC 6901).
func EscapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// Entry is one key of a mapping with its value.
type Entry struct {
	// Key is the key as written, where problems about it are reported;
	// Name is its text.
	Key  *yaml.Node
	Name string
	Val  *yaml.Node
	// Ptr is the JSON pointer of the value.
	Ptr string
}

// Entries yields the entries of mapping n (at pointer ptr) whose keys are
// scalars, in file order; a key of another kind is recorded as a problem
// ("<keys> must be strings, got a list") and skipped.
func (c *Checker) Entries(n *yaml.Node, ptr, keys string) iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, v := n.Content[i], n.Content[i+1]
			k := Resolve(kn)
			if k.Kind != yaml.ScalarNode {
				c.Add(kn, ptr, "%s must be strings, got %s", keys, Kind(k))
				continue
			}
			if !yield(Entry{Key: kn, Name: k.Value, Val: v, Ptr: ptr + "/" + EscapePointer(k.Value)}) {
				return
			}
		}
	}
}

// Fields reads the mapping n whose keys must be among allowed, reporting
// unknown, duplicate, merge (<<) and non-string keys. where completes the
// unknown-key message ("in function"). The result maps each good key to
// its entry.
func (c *Checker) Fields(n *yaml.Node, ptr, where string, allowed []string) map[string]Entry {
	out := map[string]Entry{}
	seen := map[string]*yaml.Node{}
	for e := range c.Entries(n, ptr, "keys") {
		if Resolve(e.Key).ShortTag() == "!!merge" {
			c.Add(e.Key, e.Ptr, "merge keys (<<) are not supported")
			continue
		}
		if first, dup := seen[e.Name]; dup {
			c.Add(e.Key, e.Ptr, "duplicate key %q (first at line %d)", e.Name, first.Line)
			continue
		}
		seen[e.Name] = e.Key
		if !slices.Contains(allowed, e.Name) {
			hint := ""
			if c.Suggest {
				if s := suggest.Closest(e.Name, allowed); s != "" {
					hint = " (did you mean " + strconv.Quote(s) + "?)"
				}
			}
			c.Add(e.Key, e.Ptr, "unknown key %q %s%s; allowed: %s", e.Name, where, hint, strings.Join(allowed, ", "))
			continue
		}
		out[e.Name] = e
	}
	return out
}

// Str reads a string. It never prints the value.
func (c *Checker) Str(v *yaml.Node, ptr, label string) (string, bool) {
	n := Resolve(v)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return n.Value, true
	}
	hint := ""
	if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		hint = "; quote it to make it a string"
	}
	c.Add(v, ptr, "%s must be a string, got %s%s", label, Kind(v), hint)
	return "", false
}

// Bool reads true or false.
func (c *Checker) Bool(v *yaml.Node, ptr, label string) bool {
	var b bool
	if n := Resolve(v); n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" && n.Decode(&b) == nil {
		return b
	}
	c.Add(v, ptr, "%s must be true or false, got %s", label, Kind(v))
	return false
}
