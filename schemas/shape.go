package schemas

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// shape is a schema that says no more than which JSON types a value may
// have, and, for an object, which properties it must have and what their
// values (and those of other properties) must be, and for an array what
// its items must be: a schema that uses only type, properties, required,
// additionalProperties and items, and the annotations. Most input schemas
// are such, and the default one ({"type":"object"}) is.
//
// A shape checks an instance's JSON text where it stands, without
// decoding it or allocating, and only ever to say that it is valid: when
// it cannot tell (a number that may be an integer written as 1.0, a key
// with escapes), or the instance is invalid, the compiled schema decides
// and says why. So accepts must never accept what the compiled schema
// rejects; rejecting what it accepts only costs time.
type shape struct {
	types    uint8             // the types allowed, as typeBits; 0: any
	props    map[string]*shape // properties' schemas
	required []string          // at most 64
	extra    *shape            // additionalProperties as a schema; nil: anything
	noExtra  bool              // additionalProperties: false
	items    *shape            // items' schema; nil: anything
}

// The types of JSON values, as bits of shape.types.
const (
	typeNull uint8 = 1 << iota
	typeBoolean
	typeNumber
	typeInteger
	typeString
	typeArray
	typeObject
)

var typeBits = map[string]uint8{
	"null": typeNull, "boolean": typeBoolean, "number": typeNumber, "integer": typeInteger,
	"string": typeString, "array": typeArray, "object": typeObject,
}

// annotations are the keywords that do not change what validates.
var annotations = map[string]bool{
	"title": true, "description": true, "$comment": true, "examples": true,
	"default": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// shapeOf returns doc (a schema decoded with UseNumber, which compiled)
// as a shape, or nil if it uses anything else.
func shapeOf(doc any) *shape {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	sh := &shape{}
	for k, v := range m {
		if !sh.set(k, v) {
			return nil
		}
	}
	return sh
}

// set sets keyword k to v; false if sh cannot say it.
func (sh *shape) set(k string, v any) bool {
	switch k {
	case "type":
		return sh.setTypes(v)
	case "properties":
		props, ok := v.(map[string]any)
		if !ok {
			return false
		}
		sh.props = make(map[string]*shape, len(props))
		for name, p := range props {
			if sh.props[name] = shapeOf(p); sh.props[name] == nil {
				return false
			}
		}
		return true
	case "required":
		list, ok := v.([]any)
		if !ok || len(list) > 64 {
			return false
		}
		for _, r := range list {
			name, ok := r.(string)
			if !ok {
				return false
			}
			sh.required = append(sh.required, name)
		}
		return true
	case "additionalProperties":
		if b, ok := v.(bool); ok {
			sh.noExtra = !b
			return true
		}
		sh.extra = shapeOf(v)
		return sh.extra != nil
	case "items":
		sh.items = shapeOf(v)
		return sh.items != nil
	}
	return annotations[k]
}

func (sh *shape) setTypes(v any) bool {
	names := []any{v}
	if list, ok := v.([]any); ok {
		names = list
	}
	for _, n := range names {
		s, _ := n.(string)
		bit := typeBits[s]
		if bit == 0 {
			return false
		}
		sh.types |= bit
	}
	return sh.types != 0
}

// accepts reports whether the JSON text b is surely valid; see shape.
func (sh *shape) accepts(b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	rest, ok := sh.value(b)
	return ok && len(skipSpace(rest)) == 0
}

// value checks the value b starts with (b is valid JSON text from there
// on), and returns what follows it.
func (sh *shape) value(b []byte) (rest []byte, ok bool) {
	b = skipSpace(b)
	if sh == nil {
		return skipValue(b), true
	}
	switch b[0] {
	case '{':
		return sh.object(b)
	case '[':
		return sh.array(b)
	}
	rest = skipValue(b)
	if sh.types == 0 {
		return rest, true
	}
	var t uint8
	switch b[0] {
	case '"':
		t = typeString
	case 't', 'f':
		t = typeBoolean
	case 'n':
		t = typeNull
	default:
		t = typeNumber
		if !bytes.ContainsAny(b[:len(b)-len(rest)], ".eE") {
			t |= typeInteger // written as one: surely one
		}
	}
	return rest, sh.types&t != 0
}

func (sh *shape) object(b []byte) (rest []byte, ok bool) {
	if sh.types != 0 && sh.types&typeObject == 0 {
		return nil, false
	}
	var seen uint64 // the required properties present, as bits
	b = skipSpace(b[1:])
	for b[0] != '}' {
		key, after, ok := plainKey(b)
		if !ok {
			return nil, false
		}
		for i, r := range sh.required {
			if r == string(key) {
				seen |= 1 << i
			}
		}
		sub, named := sh.props[string(key)]
		switch {
		case named:
		case sh.noExtra:
			return nil, false
		default:
			sub = sh.extra
		}
		b = skipSpace(skipSpace(after)[1:]) // the colon
		if b, ok = sub.value(b); !ok {
			return nil, false
		}
		if b = skipSpace(b); b[0] == ',' {
			b = skipSpace(b[1:])
		}
	}
	return b[1:], seen == 1<<len(sh.required)-1
}

func (sh *shape) array(b []byte) (rest []byte, ok bool) {
	if sh.types != 0 && sh.types&typeArray == 0 {
		return nil, false
	}
	b = skipSpace(b[1:])
	for b[0] != ']' {
		if b, ok = sh.items.value(b); !ok {
			return nil, false
		}
		if b = skipSpace(b); b[0] == ',' {
			b = skipSpace(b[1:])
		}
	}
	return b[1:], true
}

// plainKey returns the key that b starts with, as it decodes, and what
// follows it; false if it has escapes or is not valid UTF-8 (decoding
// would change it).
func plainKey(b []byte) (key, rest []byte, ok bool) {
	end := bytes.IndexByte(b[1:], '"') + 1
	key = b[1:end]
	if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
		return nil, nil, false
	}
	return key, b[end+1:], true
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// skipValue returns what follows the value b starts with; b is valid JSON
// text from there on.
func skipValue(b []byte) []byte {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = skipString(b, i)
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth < 0 {
				return b[i:] // the end of the container the value is in
			}
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				return b[i:]
			}
		default:
			continue
		}
		if depth == 0 {
			return b[i+1:]
		}
	}
	return nil
}

// skipString returns the index of the quote that ends the string that
// opens at b[i].
func skipString(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
}
