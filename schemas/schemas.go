package schemas

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Schema is a compiled JSON Schema. It is safe for concurrent use.
type Schema struct {
	raw      json.RawMessage
	compiled *jsonschema.Schema
	shape    *shape // the schema as a shape, if it is one: see shape
}

// Problem is one way an instance fails its schema.
type Problem struct {
	// Path is the JSON pointer of the failing value in the instance ("" is
	// the whole instance).
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Compile compiles the schema document raw. name identifies it in errors
// and in $ref resolution (a file path or a synthetic URL). Remote $refs are
// never loaded.
func Compile(name string, raw []byte) (*Schema, error) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		if _, isBool := doc.(bool); !isBool {
			return nil, errors.New("schema must be a JSON object or boolean")
		}
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("loading %q is not allowed: schemas may not reference other documents", u)
	}
	// The resource URL is derived from name but never is it: names hold
	// characters ('#', '%', spaces) that would break URL parsing and $ref
	// resolution.
	sum := sha256.Sum256([]byte(name))
	url := "mem://a2ad/" + hex.EncodeToString(sum[:8]) + ".json"
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema does not compile: %s", compileMessage(err))
	}
	compact := new(bytes.Buffer)
	if err := json.Compact(compact, raw); err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	return &Schema{raw: compact.Bytes(), compiled: s, shape: shapeOf(doc)}, nil
}

func compileMessage(err error) string {
	var se *jsonschema.SchemaError
	if errors.As(err, &se) && se.Err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(se.Err, &ve) {
			return strings.Join(messages(ve), "; ")
		}
		return se.Err.Error()
	}
	return err.Error()
}

// JSON returns the schema document, compacted.
func (s *Schema) JSON() json.RawMessage { return s.raw }

// Validate checks the JSON document instance and returns every problem,
// ordered by path; none means it is valid.
func (s *Schema) Validate(instance []byte) []Problem {
	if s.shape != nil && s.shape.accepts(instance) {
		return nil
	}
	return s.problems(instance)
}

// problems is Validate by the compiled schema.
func (s *Schema) problems(instance []byte) []Problem {
	var v any
	dec := json.NewDecoder(bytes.NewReader(instance))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return []Problem{{Path: "", Message: "is not valid JSON"}}
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Path: "", Message: err.Error()}}
	}
	var out []Problem
	seen := map[Problem]bool{}
	for _, u := range leaves(ve) {
		p := Problem{Path: u.InstanceLocation, Message: u.Message}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// leaves returns the most specific causes: the ones with no causes of
// their own, which name the real problem ("missing properties: amount")
// rather than the wrapper ("doesn't validate with ...").
func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func messages(ve *jsonschema.ValidationError) []string {
	var out []string
	for _, l := range leaves(ve) {
		loc := l.InstanceLocation
		if loc == "" {
			loc = "/"
		}
		out = append(out, loc+": "+l.Message)
	}
	return out
}
