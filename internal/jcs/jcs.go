package jcs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonicalize returns the canonical form of the JSON document data. It
// returns an error when data is not one JSON value, holds a string that
// is not valid UTF-8, or a number that is not a finite double.
func Canonicalize(data []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("jcs: %w", err)
	}
	if len(bytes.TrimSpace(data[d.InputOffset():])) > 0 {
		return nil, errors.New("jcs: more than one JSON value")
	}
	if !utf8.Valid(data) {
		return nil, errors.New("jcs: invalid UTF-8")
	}
	return Append(nil, v)
}

// Append appends the canonical form of v to dst. v is what encoding/json
// decodes into an any: nil, bool, float64 or json.Number, string, []any
// and map[string]any.
func Append(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case float64:
		return AppendNumber(dst, v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, fmt.Errorf("jcs: number %s is not a double: %w", v, err)
		}
		return AppendNumber(dst, f)
	case string:
		return AppendString(dst, v), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = Append(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(AppendString(dst, k), ':')
			var err error
			if dst, err = Append(dst, v[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	default:
		return nil, fmt.Errorf("jcs: %T is not a JSON value", v)
	}
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785
// §3.2.3), which differs from Go's byte order for characters beyond
// U+FFFF against those in U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}

// AppendNumber appends f as ECMAScript's Number.prototype.toString
// writes it (RFC 8785 §3.2.2.3): the shortest digits that round-trip,
// plain notation for exponents -7 < e < 21, else d.ddde±x. NaN and the
// infinities have no JSON form and are an error; -0 is "0".
func AppendNumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("jcs: %v is not a JSON number", f)
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// The shortest round-tripping digits and the decimal exponent n,
	// with value = 0.digits × 10^n (ECMA-262 Number::toString's k and n).
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±x
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n, k := x+1, len(digits)
	switch {
	case k <= n && n <= 21: // an integer: digits then n-k zeros
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21: // a point inside the digits
		dst = append(dst, digits[:n]...)
		dst = append(append(dst, '.'), digits[n:]...)
	case -6 < n && n <= 0: // 0.000ddd
		dst = append(dst, "0."...)
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default: // exponent notation
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(append(dst, '.'), digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst, nil
}

// AppendString appends s as a JSON string the way RFC 8785 §3.2.2.2 (and
// JSON.stringify) writes it: only '"', '\\' and the control characters
// below U+0020 are escaped, those with a short form (\b \t \n \f \r) by
// it, the others as \u00xx in lower case; everything else is literal
// UTF-8.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
