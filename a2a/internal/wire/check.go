package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// Checker collects problems while params are read field by field. Each
// method reads one member (raw is nil when it is absent), adds a problem
// located by path when the member is wrong, and returns the value read.
type Checker struct{ problems []a2a.Problem }

// Read reads raw, params that must be a JSON object, with read, and
// returns what read made of them and the -32602 error that lists every
// problem c collected. read is a closure over c, not handed c: a Checker
// passed through a function value escapes to the heap, and decoding is
// on the path of every request.
func Read[T any](c *Checker, raw json.RawMessage, read func(params jsonw.Members) T) (T, *a2a.Error) {
	var v T
	if params := c.Root(raw); params != nil {
		v = read(params)
	}
	return v, c.Err()
}

var emptyObject = json.RawMessage("{}")

// ReadOptional is Read for params that may be left out: absent or null
// params are read as an empty object.
func ReadOptional[T any](c *Checker, raw json.RawMessage, read func(params jsonw.Members) T) (T, *a2a.Error) {
	if len(bytes.TrimSpace(raw)) == 0 || (jsonw.Valid(raw) && jsonw.TypeOf(raw) == jsonw.Null) {
		raw = emptyObject
	}
	return Read(c, raw, read)
}

// Add adds a problem. It keeps a copy of path, so that a path the
// caller builds (path+"/kind") does not escape: built on the stack, it
// costs no allocation on the way of a request without problems.
func (c *Checker) Add(path, msg string) {
	c.problems = append(c.problems, a2a.Problem{Path: strings.Clone(path), Message: msg})
}

// Err returns the -32602 error listing the problems, or nil if there are
// none.
func (c *Checker) Err() *a2a.Error {
	if len(c.problems) == 0 {
		return nil
	}
	return a2a.InvalidParams(c.problems...)
}

// Object reads raw, valid JSON, as an object's members. A missing or
// null raw gives nil without a problem when optional.
func (c *Checker) Object(path string, raw json.RawMessage, required bool) jsonw.Members {
	if jsonw.Absent(raw) {
		if required {
			c.Add(path, "is required")
		}
		return nil
	}
	if t := jsonw.TypeOf(raw); t != jsonw.Object {
		c.Add(path, "must be an object, not "+jsonw.Article(t))
		return nil
	}
	return jsonw.ObjectMembers(raw)
}

// Root reads params, which must be a JSON object: checked and split into
// members in one pass.
func (c *Checker) Root(raw json.RawMessage) jsonw.Members {
	if len(raw) == 0 {
		return c.Object("/", raw, true)
	}
	params, ok := jsonw.ValidMembers(raw)
	if !ok {
		c.Add("/", "must be an object")
		return nil
	}
	if params == nil { // valid, not an object: Object says what it is
		return c.Object("/", raw, true)
	}
	return params
}

// Str reads a string; ok is false when it is absent or not a string.
func (c *Checker) Str(path string, raw json.RawMessage, required bool) (s string, ok bool) {
	if jsonw.Absent(raw) {
		if required {
			c.Add(path, "is required")
		}
		return "", false
	}
	if t := jsonw.TypeOf(raw); t != jsonw.String {
		c.Add(path, "must be a string, not "+jsonw.Article(t))
		return "", false
	}
	return jsonw.Unquote(bytes.TrimSpace(raw)), true
}

// NonEmpty reads a string that, when present, must not be empty.
func (c *Checker) NonEmpty(path string, raw json.RawMessage, required bool) string {
	s, ok := c.Str(path, raw, required)
	if ok && s == "" {
		c.Add(path, "must not be empty")
	}
	return s
}

// ID reads an identifier the caller chose: a string of at most
// a2a.MaxIDBytes. Every id a decoder reads goes through ID, NonEmptyID or
// IDs, so that no binding stores, or looks up, a longer one.
func (c *Checker) ID(path string, raw json.RawMessage, required bool) (s string, ok bool) {
	s, ok = c.Str(path, raw, required)
	c.MaxLen(path, s, a2a.MaxIDBytes)
	return s, ok
}

// NonEmptyID is ID for an id that, when present, must not be empty.
func (c *Checker) NonEmptyID(path string, raw json.RawMessage, required bool) string {
	s := c.NonEmpty(path, raw, required)
	c.MaxLen(path, s, a2a.MaxIDBytes)
	return s
}

// IDs reads an array of ids (referenceTaskIds), each at most
// a2a.MaxIDBytes; nil when absent.
func (c *Checker) IDs(path string, raw json.RawMessage) []string {
	ids := c.Strings(path, raw)
	for i, id := range ids {
		if len(id) > a2a.MaxIDBytes {
			c.MaxLen(path+"/"+strconv.Itoa(i), id, a2a.MaxIDBytes)
		}
	}
	return ids
}

// TaskID reads the required, non-empty "id" of params that name a task.
func (c *Checker) TaskID(params jsonw.Members) string {
	return c.NonEmptyID("/id", params.Get("id"), true)
}

// TaskIDParams reads params that name one task, with their metadata:
// {id, metadata}, as both versions have them.
func (c *Checker) TaskIDParams(params jsonw.Members) a2a.TaskIDParams {
	return a2a.TaskIDParams{ID: c.TaskID(params), Metadata: c.AnyMap("/metadata", params.Get("metadata"))}
}

// Integer reads an integer (JSON number without fraction); nil when absent.
func (c *Checker) Integer(path string, raw json.RawMessage) *int {
	if jsonw.Absent(raw) {
		return nil
	}
	var n int
	if jsonw.TypeOf(raw) != jsonw.Number || json.Unmarshal(raw, &n) != nil {
		c.Add(path, "must be an integer")
		return nil
	}
	return &n
}

// NonNegInt reads an integer that must not be negative; nil when absent.
func (c *Checker) NonNegInt(path string, raw json.RawMessage) *int {
	n := c.Integer(path, raw)
	if n != nil && *n < 0 {
		c.Add(path, "must not be negative")
		return nil
	}
	return n
}

// Boolean reads a boolean; nil when absent.
func (c *Checker) Boolean(path string, raw json.RawMessage) *bool {
	if jsonw.Absent(raw) {
		return nil
	}
	if t := jsonw.TypeOf(raw); t != jsonw.Bool {
		c.Add(path, "must be a boolean, not "+jsonw.Article(t))
		return nil
	}
	b := string(raw) == "true"
	return &b
}

// AnyMap reads a free-form object (metadata); nil when absent.
func (c *Checker) AnyMap(path string, raw json.RawMessage) map[string]any {
	if jsonw.Absent(raw) {
		return nil
	}
	if t := jsonw.TypeOf(raw); t != jsonw.Object {
		c.Add(path, "must be an object, not "+jsonw.Article(t))
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		c.Add(path, "must be an object")
		return nil
	}
	for k := range m {
		if len(k) > a2a.MaxMetadataKeyBytes {
			// One problem for the object, not one per key, and the key
			// itself left out: it may be as long as the body.
			c.Add(path, metadataKeyProblem)
			return nil
		}
	}
	return m
}

// metadataKeyProblem is the problem of a metadata object with a key
// longer than a2a.MaxMetadataKeyBytes.
var metadataKeyProblem = "must have keys of at most " + strconv.Itoa(a2a.MaxMetadataKeyBytes) + " bytes"

// Strings reads an array of strings; nil when absent.
func (c *Checker) Strings(path string, raw json.RawMessage) []string {
	if jsonw.Absent(raw) {
		return nil
	}
	var s []string
	if jsonw.TypeOf(raw) != jsonw.Array || json.Unmarshal(raw, &s) != nil {
		c.Add(path, "must be an array of strings")
		return nil
	}
	return s
}

// Names reads an array of at most maxN strings, each at most maxLen
// bytes; nil when absent. A list over either cap is one problem (for the
// list, or for its first long element), so that a flood of elements
// does not make a flood of problems; the list is returned as read (the
// problem refuses the request).
func (c *Checker) Names(path string, raw json.RawMessage, maxN, maxLen int) []string {
	s := c.Strings(path, raw)
	if len(s) > maxN {
		c.Add(path, "must have at most "+strconv.Itoa(maxN)+" elements")
		return s
	}
	for i, v := range s {
		if len(v) > maxLen {
			c.MaxLen(path+"/"+strconv.Itoa(i), v, maxLen)
			break
		}
	}
	return s
}

// MaxLen adds a problem when s is longer than max bytes.
func (c *Checker) MaxLen(path, s string, max int) {
	if len(s) > max {
		c.Add(path, "must be at most "+strconv.Itoa(max)+" bytes")
	}
}

// PageRange checks a page size: 0 is the default (0 returned), anything
// else must be 1 to a2a.MaxListPageSize.
func (c *Checker) PageRange(path string, n int) int {
	if n != 0 && (n < 1 || n > a2a.MaxListPageSize) {
		c.Add(path, "must be from 1 to "+strconv.Itoa(a2a.MaxListPageSize)+", not "+strconv.Itoa(n))
		return 0
	}
	return n
}

// Timestamp reads an RFC 3339 timestamp; nil when absent.
func (c *Checker) Timestamp(path string, raw json.RawMessage) *time.Time {
	s, ok := c.Str(path, raw, false)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		c.Add(path, `must be an RFC 3339 timestamp such as "2026-01-02T15:04:05Z"`)
		return nil
	}
	return &t
}

// Base64 returns s, which must be base64 in any of the forms ProtoJSON
// reads bytes in (standard or URL-safe, padded or not), in standard
// padded form: how both versions keep a file's bytes, so that what a2ad
// stores reads back the same in either.
func (c *Checker) Base64(path, s string) string {
	for _, enc := range [...]*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if enc == base64.StdEncoding && len(s) == base64.StdEncoding.EncodedLen(len(b)) {
				return s // already canonical: keep it, no copy
			}
			return base64.StdEncoding.EncodeToString(b)
		}
	}
	c.Add(path, "must be base64")
	return ""
}
