package jsonw

import (
	"bytes"
	"encoding/json"
)

// Valid and AppendCompact check JSON with a scanner of their own: a loop
// over the bytes with a table for the bytes of strings, where
// encoding/json's scanner calls a function per byte. Every request's body
// and params are checked, and every data part is compacted several times
// (the stored record, the answer, the idempotency hash): encoding/json's
// scanner was the largest cost of the request side outside net/http. The
// scanner here accepts exactly what encoding/json accepts, or less: what
// it refuses is handed to encoding/json, which has the last word and
// gives the error (see FuzzValid).

// maxDepth bounds the nesting the scanner follows; deeper JSON goes to
// encoding/json, which allows 10,000 levels.
const maxDepth = 512

// Valid reports whether raw is one JSON value, as json.Valid does.
func Valid(raw []byte) bool {
	if _, ok := scanValue(raw); ok {
		return true
	}
	return json.Valid(raw)
}

// ValidMembers is Valid and, when raw is an object, ObjectMembers, in one
// pass over raw rather than one each: how requests are read, whose
// members are all that their first reading needs.
func ValidMembers(raw []byte) (Members, bool) {
	s := scanner{b: raw, members: true}
	if s.scan() {
		return s.top, true
	}
	if !json.Valid(raw) {
		return nil, false
	}
	return ObjectMembers(raw), true
}

// scanValue checks that raw is one JSON value, with white space around
// it if any, and reports whether there is white space outside its
// strings. ok false means "not sure": encoding/json decides.
func scanValue(raw []byte) (space, ok bool) {
	s := scanner{b: raw}
	ok = s.scan()
	return s.space, ok
}

// scan reads s.b as one value with white space around it if any.
func (s *scanner) scan() bool {
	s.skipSpace()
	if !s.value() {
		return false
	}
	s.skipSpace()
	return s.i == len(s.b)
}

// scanner walks JSON by hand; i is the next byte to read.
type scanner struct {
	b     []byte
	i     int
	depth int
	space bool // white space was seen outside strings
	// members: collect the members of an object at the top, in top.
	members bool
	top     Members
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.space = true
			s.i++
		default:
			return
		}
	}
}

// next is the byte at i, or 0 at the end (0 starts no token).
func (s *scanner) next() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) value() bool {
	switch c := s.next(); {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		return s.str()
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) object() bool {
	if s.depth++; s.depth > maxDepth {
		return false
	}
	s.i++ // '{'
	collect := s.members && s.depth == 1
	if collect {
		s.top = make(Members, 0, 8)
	}
	s.skipSpace()
	if s.next() == '}' {
		s.i++
		s.depth--
		return true
	}
	for {
		key := s.i
		if s.next() != '"' || !s.str() {
			return false
		}
		keyEnd := s.i
		s.skipSpace()
		if s.next() != ':' {
			return false
		}
		s.i++
		s.skipSpace()
		val := s.i
		if !s.value() {
			return false
		}
		if collect {
			s.top = append(s.top, Member{Key: Key(s.b[key:keyEnd]), Val: s.b[val:s.i]})
		}
		s.skipSpace()
		switch s.next() {
		case ',':
			s.i++
			s.skipSpace()
		case '}':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

func (s *scanner) array() bool {
	if s.depth++; s.depth > maxDepth {
		return false
	}
	s.i++ // '['
	s.skipSpace()
	if s.next() == ']' {
		s.i++
		s.depth--
		return true
	}
	for {
		if !s.value() {
			return false
		}
		s.skipSpace()
		switch s.next() {
		case ',':
			s.i++
			s.skipSpace()
		case ']':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// plain marks the bytes that stand for themselves inside a JSON string
// (encoding/json takes any byte from 0x20 but '"' and '\\', UTF-8 or
// not).
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string; i is at its opening quote.
func (s *scanner) str() bool {
	b, i := s.b, s.i+1
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i == len(b) {
			return false
		}
		switch b[i] {
		case '"':
			s.i = i + 1
			return true
		case '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return false
				}
				i += 6
			default:
				return false
			}
		default: // a control byte
			return false
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *scanner) number() bool {
	if s.next() == '-' {
		s.i++
	}
	switch c := s.next(); {
	case c == '0':
		s.i++
	case '1' <= c && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.next() == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if c := s.next(); c == 'e' || c == 'E' {
		s.i++
		if c := s.next(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits reads one digit or more; false if there is none.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

// AppendCompact appends raw, a JSON value that came from outside,
// compacted (insignificant space removed, nothing else changed), as
// json.Compact does; raw that is not valid JSON, or empty, is an error,
// as encoding/json makes an invalid json.RawMessage.
func AppendCompact(dst, raw []byte) ([]byte, error) {
	space, ok := scanValue(raw)
	switch {
	case !ok:
		return compactSlow(dst, raw)
	case !space:
		return append(dst, raw...), nil
	}
	// Drop the white space outside strings; raw is valid, so only
	// quotes and escapes need following.
	start, inStr := 0, false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			dst = append(dst, raw[start:i]...)
			start = i + 1
		}
	}
	return append(dst, raw[start:]...), nil
}

// compactSlow is AppendCompact by encoding/json, for what the scanner
// here does not take: encoding/json's error, or its result for JSON
// nested deeper than maxDepth.
func compactSlow(dst, raw []byte) ([]byte, error) {
	n := len(dst)
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	if buf.Len() == n {
		return nil, &json.UnsupportedValueError{Str: "empty raw JSON"}
	}
	return buf.Bytes(), nil
}
