package jsonw

import (
	"bytes"
	"encoding/json"
	"sync/atomic"
	"unicode/utf8"
)

// The scanner walks an object's members or an array's elements as
// sub-slices of JSON that is already known to be valid, without decoding
// or copying them. Request decoding uses it after one Valid over the
// whole input, instead of decoding every level into maps (which validated
// and copied each level again).

// Member is one member of a JSON object.
type Member struct {
	Key string
	Val json.RawMessage
}

// Members is an object's members, in order.
type Members []Member

// Get returns the value of key, the last one if repeated (as decoding into
// a map does), or nil.
func (ms Members) Get(key string) json.RawMessage {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Key == key {
			return ms[i].Val
		}
	}
	return nil
}

// ObjectMembers returns the members of raw, a valid JSON object, or nil
// if raw is not an object.
func ObjectMembers(raw []byte) Members {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil
	}
	out := make(Members, 0, 8)
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] != '}' {
		end := skipString(raw, i)
		key := Key(raw[i:end])
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1) // past ':'
		end = skipValue(raw, i)
		out = append(out, Member{Key: key, Val: raw[i:end]})
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return out
}

// ArrayElements returns the elements of raw, a valid JSON array, or nil
// if raw is not an array.
func ArrayElements(raw []byte) []json.RawMessage {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil
	}
	out := make([]json.RawMessage, 0, 4)
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] != ']' {
		end := skipValue(raw, i)
		out = append(out, raw[i:end])
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return out
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// Unquote decodes a valid JSON string literal, as encoding/json does
// (invalid UTF-8 becomes U+FFFD).
func Unquote(raw []byte) string {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// Key is Unquote for an object's key. Keys come from a small vocabulary
// and are read on every request, several to an object: a key without
// escapes is taken from a small cache of the keys seen last rather than
// allocated each time. The cache holds at most keyCacheSize keys of up to
// maxCachedKey bytes; a race between two writers of a slot leaves one of
// their keys, either of them right.
func Key(raw []byte) string {
	if len(raw) < 2 || len(raw) > maxCachedKey+2 || bytes.IndexByte(raw, '\\') >= 0 {
		return Unquote(raw)
	}
	k := raw[1 : len(raw)-1]
	h := uint32(2166136261) // FNV-1a
	for _, c := range k {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &keyCache[h%keyCacheSize]
	if p := slot.Load(); p != nil && *p == string(k) {
		return *p
	}
	s := Unquote(raw)
	if s == string(k) { // valid UTF-8: the key as written
		slot.Store(&s)
	}
	return s
}

const (
	keyCacheSize = 256
	maxCachedKey = 32
)

var keyCache [keyCacheSize]atomic.Pointer[string]
