package functions

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/internal/yamlnode"
	"github.com/a2ad/a2ad/schemas"
	yaml "go.yaml.in/yaml/v3"
)

// DefaultTimeout bounds a call of a function whose catalogue entry sets no
// timeout.
const DefaultTimeout = 30 * time.Second

// LoadOptions tunes Load.
type LoadOptions struct {
	// LookupEnv resolves ${VAR} references; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// LoadError lists every problem of a catalogue; its Path is the
// catalogue file, as given to Load.
type LoadError = yamlnode.LoadError[Problem]

// Problem is one thing wrong with a catalogue. Messages never hold the
// value of an environment variable or of an HTTP header.
type Problem struct {
	// Line and Column are the 1-based position in the file, 0 if unknown.
	Line, Column int
	// Pointer is the JSON pointer of the offending value, e.g.
	// "/functions/2/timeout"; "" is the whole document.
	Pointer string
	// FunctionID is the id of the function the problem is in, "" when it
	// is not inside a function or the id is unknown.
	FunctionID string
	// Message says what is wrong: lower-case, no final period.
	Message string
}

// String formats the problem as `12:5: /functions/2/timeout (function
// "pricing::quote"): timeout must be positive, got "-1s"`, leaving out
// the parts that are unknown. LoadError.Error prefixes it with the path.
func (p Problem) String() string {
	return yamlnode.FormatProblem(p.Line, p.Column, p.Pointer, yamlnode.Subject("function", p.FunctionID), p.Message)
}

// Load reads and checks the catalogue file at path. It returns every
// problem found, not just the first, as a *LoadError; on success the
// catalogue holds the functions in file order, their schemas compiled,
// their ${VAR} references resolved and their relative exec paths made
// absolute.
func Load(path string, opts LoadOptions) (*Catalog, error) {
	l := &loader{Checker: yamlnode.Checker{Suggest: true}, path: path, lookupEnv: opts.LookupEnv, hash: sha256.New()}
	if l.lookupEnv == nil {
		l.lookupEnv = os.LookupEnv
	}
	fns, def := l.load()
	if err := yamlnode.Err(&l.Checker, path, toProblem); err != nil {
		return nil, err
	}
	c := NewCatalog(fns...)
	c.Path = path
	c.Default = def
	c.Version = hex.EncodeToString(l.hash.Sum(nil))[:16]
	return c, nil
}

// toProblem converts a problem the loader recorded.
func toProblem(p yamlnode.Problem) Problem {
	return Problem{Line: p.Line, Column: p.Column, Pointer: p.Pointer, FunctionID: p.ID, Message: p.Message}
}

// The keys allowed in each mapping, in the order the messages list them.
var (
	functionKeys = []string{
		"id", "name", "description", "tags", "examples", "metadata",
		"input_modes", "output_modes", "input_schema", "output_schema",
		"timeout", "retry_safe", "max_concurrency", "output", "reply", "http", "exec", "builtin",
	}
	backendKeys = []string{"http", "exec", "builtin"}
)

// loader holds the state of one Load. Its Checker's ID is the id of the
// function being checked, if known.
type loader struct {
	yamlnode.Checker
	path      string
	dir       string // absolute directory of the catalogue
	base      string // file name of the catalogue, for schema names
	lookupEnv func(string) (string, bool)
	hash      hash.Hash
	anySchema *schemas.Schema
}

// load reads the file and checks it; it returns the good functions and
// the default skill's id, and records a problem for each bad one.
func (l *loader) load() ([]*Function, string) {
	abs, err := filepath.Abs(l.path)
	if err != nil {
		l.Add(nil, "", "cannot resolve catalogue path: %v", err)
		return nil, ""
	}
	l.dir, l.base = filepath.Dir(abs), filepath.Base(abs)
	data, err := os.ReadFile(l.path)
	if err != nil {
		err = unwrapPath(err)
		l.Add(nil, "", "cannot read catalogue: %v", err)
		return nil, ""
	}
	l.hash.Write(data)

	list, top := l.TopListWith(data, "catalogue", "functions", []string{"default_skill"})
	if list == nil {
		return nil, ""
	}
	if list.Kind != yaml.SequenceNode {
		l.Add(list, "/functions", "functions must be a list, got %s", yamlnode.Kind(list))
		return nil, ""
	}

	var fns []*Function
	var tools []toolEntry
	firstLine := map[string]int{}
	for i, item := range list.Content {
		ptr := "/functions/" + strconv.Itoa(i)
		n := yamlnode.Resolve(item)
		f := l.function(ptr, n, firstLine)
		if f != nil {
			fns = append(fns, f)
			if v, _ := f.Metadata[exposure.MCP.ExposeKey()].(bool); v {
				_, idVal := yamlnode.Lookup(n, "id")
				tools = append(tools, toolEntry{f.ID, idVal, ptr + "/id"})
			}
		}
	}
	l.toolNames(tools)
	return fns, l.defaultSkill(top, firstLine)
}

// defaultSkill reads the top-level default_skill, which must be the id of
// a function of the catalogue; "" if absent.
func (l *loader) defaultSkill(top map[string]yamlnode.Entry, ids map[string]int) string {
	e, ok := top["default_skill"]
	if !ok {
		return ""
	}
	id, ok := l.Str(e.Val, e.Ptr, "default_skill")
	if !ok {
		return ""
	}
	if _, known := ids[id]; !known {
		l.Add(e.Val, e.Ptr, "default_skill %q is not the id of a function of this catalogue", id)
		return ""
	}
	return id
}

// toolEntry is a function opted into MCP, and where its id is written.
type toolEntry struct {
	id   string
	node *yaml.Node
	ptr  string
}

// toolNames records a problem for each function opted into MCP whose tool
// name collides with an earlier one's or is too long for MCP.
func (l *loader) toolNames(tools []toolEntry) {
	ids := make([]string, len(tools))
	at := make(map[string]toolEntry, len(tools))
	for i, t := range tools {
		ids[i] = t.id
		at[t.id] = t
	}
	_, problems := exposure.ToolNames(ids)
	for _, p := range problems {
		t := at[p.ID]
		l.ID = p.ID
		msg := p.String()
		if p.Other != "" {
			msg = fmt.Sprintf("%s (line %d)", msg, at[p.Other].node.Line)
		}
		l.Add(t.node, t.ptr, "%s", msg)
	}
	l.ID = ""
}

// function checks one entry of the functions list. It returns nil if the
// entry has problems.
func (l *loader) function(ptr string, n *yaml.Node, firstLine map[string]int) *Function {
	before := l.Count()
	l.ID = ""
	defer func() { l.ID = "" }()
	if n.Kind != yaml.MappingNode {
		l.Add(n, ptr, "each function must be a mapping, got %s", yamlnode.Kind(n))
		return nil
	}

	// The id comes first so that every other problem can name it.
	f := &Function{}
	if idKey, idVal := yamlnode.Lookup(n, "id"); idKey == nil {
		l.Add(n, ptr, "id is required")
	} else if id, ok := l.Str(idVal, ptr+"/id", "id"); ok {
		switch line, dup := firstLine[id]; {
		case id == "":
			l.Add(idVal, ptr+"/id", "id must not be empty")
		case dup:
			l.ID = id
			l.Add(idVal, ptr+"/id", "duplicate id %q (first defined at line %d)", id, line)
		default:
			l.ID = id
			firstLine[id] = idVal.Line
		}
		f.ID = id
	}

	kv := l.Fields(n, ptr, "in function", functionKeys)

	l.functionFields(f, kv)
	f.Backend = l.backend(n, ptr, kv)

	if l.Count() > before {
		return nil
	}
	return f
}

// functionFields reads the keys of a function other than its id and its
// backend, with their defaults, into f.
func (l *loader) functionFields(f *Function, kv map[string]yamlnode.Entry) {
	if e, ok := kv["name"]; ok {
		f.Name, _ = l.Str(e.Val, e.Ptr, "name")
	}
	if f.Name == "" {
		f.Name = strings.ReplaceAll(f.ID, "::", " ")
	}
	if e, ok := kv["description"]; ok {
		d, _ := l.Str(e.Val, e.Ptr, "description")
		f.Description = strings.TrimSpace(d)
	}
	if f.Description == "" {
		f.Description = f.Name
	}
	if e, ok := kv["tags"]; ok {
		f.Tags = l.strList(e.Val, e.Ptr, "tags", nil)
	}
	if e, ok := kv["examples"]; ok {
		f.Examples = l.strList(e.Val, e.Ptr, "examples", nil)
	}
	if e, ok := kv["metadata"]; ok {
		f.Metadata = l.metadata(e.Val, e.Ptr)
	}
	if e, ok := kv["input_modes"]; ok {
		f.InputModes = l.strList(e.Val, e.Ptr, "input_modes", checkMediaType)
	}
	if e, ok := kv["output_modes"]; ok {
		f.OutputModes = l.strList(e.Val, e.Ptr, "output_modes", checkMediaType)
	}
	if e, ok := kv["input_schema"]; ok {
		f.Input = l.schema(e.Val, e.Ptr, "input_schema")
	} else {
		f.Input = l.defaultInput()
	}
	if e, ok := kv["output_schema"]; ok {
		f.Output = l.schema(e.Val, e.Ptr, "output_schema")
	}
	f.Timeout = DefaultTimeout
	if e, ok := kv["timeout"]; ok {
		f.Timeout = l.duration(e.Val, e.Ptr, "timeout")
	}
	if e, ok := kv["retry_safe"]; ok {
		f.RetrySafe = l.Bool(e.Val, e.Ptr, "retry_safe")
	}
	if e, ok := kv["output"]; ok {
		f.Parts = l.choice(e, "output", "data", "parts") == "parts"
	}
	if e, ok := kv["reply"]; ok {
		switch l.choice(e, "reply", "task", "message", "either") {
		case "message":
			f.Reply = ReplyMessage
		case "either":
			f.Reply = ReplyEither
			if !f.Parts {
				l.Add(e.Val, e.Ptr, "reply: either needs output: parts (each call's parts envelope chooses)")
			}
		}
	}
	if e, ok := kv["max_concurrency"]; ok {
		if v, ok := l.integer(e.Val, e.Ptr, "max_concurrency"); ok {
			if v < 0 {
				l.Add(e.Val, e.Ptr, "max_concurrency must not be negative, got %d", v)
			}
			f.MaxConcurrency = int(v)
		}
	}
}

// backend checks the backend keys of a function: exactly one must be
// present, and each present one is checked.
func (l *loader) backend(n *yaml.Node, ptr string, kv map[string]yamlnode.Entry) Backend {
	var present []string
	for _, k := range backendKeys {
		if _, ok := kv[k]; ok {
			present = append(present, k)
		}
	}
	// Report a clash at the backend written last, in file order.
	sort.SliceStable(present, func(i, j int) bool {
		a, b := kv[present[i]].Key, kv[present[j]].Key
		return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
	})
	switch len(present) {
	case 0:
		l.Add(n, ptr, "exactly one of http, exec, builtin is required")
		return nil
	case 1:
	case 2:
		last := kv[present[1]].Key
		l.Add(last, ptr+"/"+present[1], "has both %s and %s; exactly one backend is allowed", present[0], present[1])
	default:
		last := kv[present[len(present)-1]].Key
		l.Add(last, ptr+"/"+present[len(present)-1], "has %s and %s; exactly one backend is allowed",
			strings.Join(present[:len(present)-1], ", "), present[len(present)-1])
	}
	var b Backend
	for _, k := range present {
		var got Backend
		switch e := kv[k]; k {
		case "http":
			if sec, ok := l.section(e, ptr+"/http", "http", httpKeys); ok {
				got = l.httpBackend(e, sec, ptr+"/http")
			}
		case "exec":
			if sec, ok := l.section(e, ptr+"/exec", "exec", execKeys); ok {
				got = l.execBackend(e, sec, ptr+"/exec")
			}
		case "builtin":
			if bb := l.builtinBackend(e, ptr+"/builtin"); bb != nil {
				got = bb
			}
		}
		if b == nil {
			b = got
		}
	}
	return b
}

// defaultInput is the schema of a function declared without one.
func (l *loader) defaultInput() *schemas.Schema {
	if l.anySchema == nil {
		s, err := schemas.Compile("default_input_schema", []byte(`{"type":"object"}`))
		if err != nil {
			panic("functions: default input schema: " + err.Error())
		}
		l.anySchema = s
	}
	return l.anySchema
}
