// Package jsonw reads and writes JSON by hand, for a2ad's wire codecs and
// record encodings, where encoding/json's reflection was measured to cost
// several times the work. It appends JSON to byte slices without
// reflection: the pieces that hand-written encoders share (strings
// escaped as encoding/json escapes them, arrays of strings, raw values
// compacted, optional object members). The encoders that use it write
// fixed field orders, so that what they write is deterministic. And it
// scans JSON already known to be valid (ObjectMembers, ArrayElements,
// Unquote, TypeOf) without decoding or copying it, as request decoding
// does after one Valid.
//
// It knows nothing of A2A; package a2a/internal/wire builds the codecs'
// shared parts on it.
package jsonw

import (
	"encoding/json"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as encoding/json does
// (HTML-safe, U+2028 and U+2029 escaped, invalid UTF-8 replaced).
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		for i < len(s) && safe[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			dst = appendEscapedByte(append(dst, s[start:i]...), b)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// safe marks the ASCII bytes that AppendString copies as they are: one
// look-up a byte instead of six comparisons, on the path of every string
// a task's record and answer hold.
var safe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendEscapedByte appends the escape of an ASCII byte that may not
// stand for itself in a JSON string.
func appendEscapedByte(dst []byte, b byte) []byte {
	switch b {
	case '"', '\\':
		return append(dst, '\\', b)
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
}

// AppendStrings appends ss as a JSON array of strings ([] when empty).
func AppendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return append(dst, ']')
}

// AppendStringMember appends prefix, which names an object member (such
// as `,"name":`), and s, unless s is empty: an omitempty string.
func AppendStringMember(dst []byte, prefix, s string) []byte {
	if s == "" {
		return dst
	}
	return AppendString(append(dst, prefix...), s)
}

// AppendStringsMember appends prefix and ss as an array, unless ss is
// empty: an omitempty list of strings.
func AppendStringsMember(dst []byte, prefix string, ss []string) []byte {
	if len(ss) == 0 {
		return dst
	}
	return AppendStrings(append(dst, prefix...), ss)
}

// AppendMapMember appends prefix and m as encoding/json writes a
// map[string]any (keys sorted, strings escaped as AppendString does),
// unless m is empty. It is for free-form maps, such as metadata, that are
// rare enough for reflection.
func AppendMapMember(dst []byte, prefix string, m map[string]any) ([]byte, error) {
	if len(m) == 0 {
		return dst, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(append(dst, prefix...), b...), nil
}

// CloseWithMap appends the optional member of map m, as AppendMapMember
// does, then the brace that closes the object: the usual end of an
// object whose last member is free-form metadata.
func CloseWithMap(dst []byte, prefix string, m map[string]any) ([]byte, error) {
	dst, err := AppendMapMember(dst, prefix, m)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}
