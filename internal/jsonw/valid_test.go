package jsonw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var validSeeds = []string{
	``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `1E+2`, `-`, `01`, `1.`, `.5`, `+1`, `1e`, `2.e3`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`, `{"a":1,}`, `[1,]`, `[,1]`, `{"a" 1}`, `{1:2}`, `{"a":1 "b":2}`,
	` { "b" : 1e3 ,` + "\n" + ` "a":"<" } `, `"\u00e9\ud83d\ude00"`, `"\u00g0"`, `"\x"`, `"\/\b\f\n\r\t\\\""`,
	"\"tab\there\"", "\"nl\nhere\"", "\"\x7f \xff \xc3\"", `[1] [2]`, `{}x`, "\ufeff{}", `["a",{"b":[null,true]}]`,
	`"unterminated`, `"esc at end\`, `{"a":"b"`, strings.Repeat("[", 600) + strings.Repeat("]", 600),
}

// FuzzValid: the scanner accepts only what encoding/json accepts (what it
// refuses encoding/json decides), it accepts all of that short of its
// depth bound, and it sees white space outside strings exactly where
// json.Compact removes some.
func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := json.Valid(raw)
		space, ok := scanValue(raw)
		if ok && !want {
			t.Fatalf("scanner accepts %q, which encoding/json refuses", raw)
		}
		if want && !ok && depth(raw) <= maxDepth {
			t.Fatalf("scanner refuses %q, valid and %d deep", raw, depth(raw))
		}
		if Valid(raw) != want {
			t.Fatalf("Valid(%q) = %v, want %v", raw, !want, want)
		}
		checkMembers(t, raw, want)
		var c bytes.Buffer
		cerr := json.Compact(&c, raw)
		got, err := AppendCompact([]byte("x"), raw)
		if (err == nil) != (cerr == nil) || err != nil && err.Error() != cerr.Error() {
			t.Fatalf("AppendCompact(%q) error %v, want %v", raw, err, cerr)
		}
		if err == nil && (string(got) != "x"+c.String()) {
			t.Fatalf("AppendCompact(%q) = %q, want x%q", raw, got, c.Bytes())
		}
		if ok && space != (c.Len() != len(raw)) {
			t.Fatalf("%q: space %v, but compacting it changes its length %d to %d", raw, space, len(raw), c.Len())
		}
	})
}

// checkMembers: ValidMembers says what json.Valid says (want) and finds
// the members ObjectMembers finds.
func checkMembers(t *testing.T, raw []byte, want bool) {
	t.Helper()
	got, ok := ValidMembers(raw)
	if ok != want {
		t.Fatalf("ValidMembers(%q) ok %v, want %v", raw, ok, want)
	}
	if !ok {
		return
	}
	ms := ObjectMembers(raw)
	if (got == nil) != (ms == nil) || len(got) != len(ms) {
		t.Fatalf("ValidMembers(%q) = %q, ObjectMembers %q", raw, got, ms)
	}
	for i := range ms {
		if got[i].Key != ms[i].Key || !bytes.Equal(got[i].Val, ms[i].Val) {
			t.Fatalf("ValidMembers(%q) member %d = %q, ObjectMembers %q", raw, i, got[i], ms[i])
		}
	}
}

// depth is how deep raw's arrays and objects nest, counting the brackets
// outside strings.
func depth(raw []byte) int {
	d, most, inStr := 0, 0, false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '[' || c == '{'):
			d++
			most = max(most, d)
		case !inStr && (c == ']' || c == '}'):
			d--
		}
	}
	return most
}

// TestValidDeep: JSON nested deeper than the scanner follows is left to
// encoding/json, which takes up to 10,000 levels.
func TestValidDeep(t *testing.T) {
	deep := []byte(strings.Repeat("[", 2000) + " 1 " + strings.Repeat("]", 2000))
	if _, ok := scanValue(deep); ok {
		t.Fatal("the scanner followed 2000 levels")
	}
	if !Valid(deep) {
		t.Fatal("Valid refused 2000 levels, which encoding/json takes")
	}
	got, err := AppendCompact(nil, deep)
	if err != nil || len(got) != 4001 {
		t.Fatalf("AppendCompact of 2000 levels: %d bytes, %v", len(got), err)
	}
	tooDeep := []byte(strings.Repeat("[", 10001) + strings.Repeat("]", 10001))
	if Valid(tooDeep) {
		t.Fatal("Valid took 10,001 levels, which encoding/json refuses")
	}
}

// TestAppendCompactNoCopy: a value without white space is appended as it
// is, into dst's room when it has some.
func TestAppendCompactNoCopy(t *testing.T) {
	dst := make([]byte, 1, 64)
	got, err := AppendCompact(dst, []byte(`{"a":[1,"x y"]}`))
	if err != nil || string(got[1:]) != `{"a":[1,"x y"]}` || &got[0] != &dst[0] {
		t.Fatalf("AppendCompact = %q, %v (same array: %v)", got, err, &got[0] == &dst[0])
	}
}

func BenchmarkValid(b *testing.B) {
	raw := []byte(`{"jsonrpc":"2.0","id":17,"method":"message/send","params":{"message":{"kind":"message","messageId":"0b6c7f0e-6a8e-4c1e-9b1b-2f1d3f0c9a11","role":"user","parts":[{"kind":"data","data":{"skill":"demo::echo","input":{"message":"hello"}}}]},"configuration":{"blocking":true}}}`)
	b.Run("jsonw", func(b *testing.B) {
		for b.Loop() {
			Valid(raw)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(raw)
		}
	})
	b.Run("compact", func(b *testing.B) {
		dst := make([]byte, 0, 512)
		for b.Loop() {
			_, _ = AppendCompact(dst, raw)
		}
	})
}

// TestValidMembers: the members of an object at the top, none of a value
// that is not an object, and those of an object too deep for the scanner.
func TestValidMembers(t *testing.T) {
	for _, s := range []string{` {"a" : [1, {"b":2}], "c\u0064":"x", "a":null} `, `{}`, `[{"a":1}]`, `"s"`, `{"a":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`} {
		checkMembers(t, []byte(s), true)
	}
	if ms, _ := ValidMembers([]byte(`{}`)); ms == nil {
		t.Error("ValidMembers({}) = nil, want no members")
	}
	if ms, _ := ValidMembers([]byte(` {"a":1,"cd":"x"}`)); len(ms) != 2 || ms[1].Key != "cd" || string(ms[1].Val) != `"x"` {
		t.Errorf("ValidMembers = %q", ms)
	}
	for _, s := range []string{``, `{`, `{"a":1,}`, `{"a":1} x`} {
		checkMembers(t, []byte(s), false)
	}
}
