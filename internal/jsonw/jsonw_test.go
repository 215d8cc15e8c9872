package jsonw_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/a2ad/a2ad/internal/jsonw"
)

var strs = []string{
	"", "plain", `q"b\s`, "<a&b>", "tab\tnl\nret\rbs\bff\f", "\x00\x01\x1f\x7f", "héllo ✓ 😀",
	"line\u2028para\u2029", "bad \xff utf8 \xc3", "\xe2\x80", "end\\",
}

// TestAppendString: strings are escaped byte for byte as encoding/json
// escapes them.
func TestAppendString(t *testing.T) {
	for _, s := range strs {
		want, _ := json.Marshal(s)
		if got := jsonw.AppendString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Errorf("AppendString(%q) = %s, want %s", s, got[1:], want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range strs {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := jsonw.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// TestMembers: optional members are left out when empty, and written as
// encoding/json writes them otherwise.
func TestMembers(t *testing.T) {
	var b []byte
	b = jsonw.AppendStringMember(b, `,"a":`, "")
	b = jsonw.AppendStringsMember(b, `,"b":`, nil)
	b, err := jsonw.AppendMapMember(b, `,"c":`, map[string]any{})
	if err != nil || len(b) != 0 {
		t.Fatalf("empty members wrote %q, %v", b, err)
	}
	b = jsonw.AppendStringMember(b, `{"a":`, "<x>")
	b = jsonw.AppendStringsMember(b, `,"b":`, []string{"p", `"q"`})
	if b, err = jsonw.AppendMapMember(b, `,"c":`, map[string]any{"z": 1.5, "a": []any{"&", nil, true}}); err != nil {
		t.Fatal(err)
	}
	want := `{"a":"\u003cx\u003e","b":["p","\"q\""],"c":{"a":["\u0026",null,true],"z":1.5}`
	if string(b) != want {
		t.Errorf("members = %s, want %s", b, want)
	}
	if got := string(jsonw.AppendStrings(nil, nil)); got != "[]" {
		t.Errorf("AppendStrings(nil) = %s, want []", got)
	}
}

// TestAppendCompact: a raw value is compacted and otherwise kept; invalid
// or empty JSON is an error.
func TestAppendCompact(t *testing.T) {
	got, err := jsonw.AppendCompact([]byte("["), []byte(" { \"b\" : 1e3 ,\n \"a\":\"<\" } "))
	if err != nil || string(got) != `[{"b":1e3,"a":"<"}` {
		t.Errorf("AppendCompact = %s, %v", got, err)
	}
	for _, bad := range []string{"", " ", "{", `{"a":}`} {
		if _, err := jsonw.AppendCompact(nil, []byte(bad)); err == nil {
			t.Errorf("AppendCompact(%q): no error", bad)
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	ss := []string{"0b6c7f0e6a8e4c1e9b1b2f1d3f0c9a11", "2026-11-24T09:14:43.123456789Z", "demo::echo", "completed",
		"The quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps over the lazy dog."}
	dst := make([]byte, 0, 512)
	for b.Loop() {
		dst = dst[:0]
		for _, s := range ss {
			dst = jsonw.AppendString(dst, s)
		}
	}
}
