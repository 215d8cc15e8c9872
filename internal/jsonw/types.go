package jsonw

import (
	"bytes"
	"encoding/json"
)

// The JSON types, as TypeOf names them.
const (
	Object = "object"
	Array  = "array"
	String = "string"
	Number = "number"
	Bool   = "boolean"
	Null   = "null"
)

// TypeOf returns the type of raw, a valid JSON value, as its first byte
// tells it (leading white space is skipped).
func TypeOf(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return Number
	}
	switch b[0] {
	case '{':
		return Object
	case '[':
		return Array
	case '"':
		return String
	case 't', 'f':
		return Bool
	case 'n':
		return Null
	}
	return Number
}

// Absent reports whether raw is a member that was left out or is null.
func Absent(raw json.RawMessage) bool { return len(raw) == 0 || TypeOf(raw) == Null }

// Article returns t, a type TypeOf names, with its indefinite article:
// "an object", "a string".
func Article(t string) string {
	switch t {
	case Object, Array:
		return "an " + t
	}
	return "a " + t
}
