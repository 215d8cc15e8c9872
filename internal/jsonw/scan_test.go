package jsonw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzObjectMembers: for any valid JSON object, the scanner finds the same
// members as encoding/json (the last of a repeated key), with the same
// values.
func FuzzObjectMembers(f *testing.F) {
	for _, s := range []string{`{}`, ` { "a" : 1 , "b":[1,{"c":"}"}], "d":"x\"y" } `, `{"a":1,"a":2}`,
		`{"k\u00e9y":true,"e":null,"n":-1.5e3,"s":"\\"}`, `{"nested":{"x":[[],{}]},"t":"\t"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want map[string]json.RawMessage
		if !json.Valid(raw) || json.Unmarshal(raw, &want) != nil || want == nil {
			return
		}
		got := ObjectMembers(raw)
		seen := map[string]bool{}
		for _, m := range got {
			seen[m.Key] = true
		}
		if len(seen) != len(want) {
			t.Fatalf("%s: %d distinct keys, want %d", raw, len(seen), len(want))
		}
		for k, v := range want {
			g := got.Get(k)
			var a, b bytes.Buffer
			if json.Compact(&a, g) != nil || json.Compact(&b, v) != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("%s: key %q = %s, want %s", raw, k, g, v)
			}
		}
	})
}

func FuzzArrayElements(f *testing.F) {
	for _, s := range []string{`[]`, ` [ 1 , "a,b" , [2,3], {"x":"]"} ] `, `[null,true,false]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want []json.RawMessage
		if !json.Valid(raw) || json.Unmarshal(raw, &want) != nil || want == nil {
			return
		}
		got := ArrayElements(raw)
		if len(got) != len(want) {
			t.Fatalf("%s: %d elements, want %d", raw, len(got), len(want))
		}
		for i := range want {
			var a, b bytes.Buffer
			if json.Compact(&a, got[i]) != nil || json.Compact(&b, want[i]) != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("%s: element %d = %s, want %s", raw, i, got[i], want[i])
			}
		}
	})
}

// TestKey: Key reads a key as Unquote does, escaped, invalid or long,
// and a key seen before costs no allocation.
func TestKey(t *testing.T) {
	for _, k := range []string{`""`, `"id"`, `"messageId"`, `"k\u00e9y"`, `"a\"b"`, "\"bad \xff\"", `"` + strings.Repeat("x", 40) + `"`} {
		for range 2 { // a miss, then a hit
			if got, want := Key([]byte(k)), Unquote([]byte(k)); got != want {
				t.Errorf("Key(%s) = %q, want %q", k, got, want)
			}
		}
	}
	raw := []byte(`"configuration"`)
	Key(raw)
	if n := testing.AllocsPerRun(100, func() { Key(raw) }); n != 0 {
		t.Errorf("Key of a key seen before: %v allocations", n)
	}
}
