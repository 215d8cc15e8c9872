package jcs_test

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/internal/jcs"
)

// TestRFC8785Examples canonicalises the examples of RFC 8785 §3.2.2 and
// §3.2.3 (testdata/README) and compares the exact bytes.
func TestRFC8785Examples(t *testing.T) {
	for _, name := range []string{"values", "sorting"} {
		in, err := os.ReadFile(filepath.Join("testdata", name+".in.json"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata", name+".out.json"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := jcs.Canonicalize(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// TestRFC8785Numbers writes each double of RFC 8785 Appendix B.
func TestRFC8785Numbers(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "numbers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		h, want, _ := strings.Cut(line, " ")
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		v := math.Float64frombits(binary.BigEndian.Uint64(b))
		got, err := jcs.AppendNumber(nil, v)
		if err != nil {
			t.Errorf("%s: %v", h, err)
			continue
		}
		if string(got) != want {
			t.Errorf("AppendNumber(%s = %v) = %s, want %s", h, v, got, want)
		}
		n++
	}
	if n != 24 {
		t.Fatalf("read %d vectors, want 24", n)
	}
}

// TestRFC8785NumberErrors: NaN and the infinities (Appendix B's
// 7fffffffffffffff and 7ff0000000000000) have no JSON form.
func TestRFC8785NumberErrors(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := jcs.AppendNumber(nil, v); err == nil {
			t.Errorf("AppendNumber(%v): no error", v)
		}
	}
}

func TestCanonicalizeRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{} {}`, "jcs: more than one JSON value"},
		{`{"a":"` + "\xff" + `"}`, "jcs: invalid UTF-8"},
		{`{"a":1e400}`, "jcs: number 1e400 is not a double"},
		{`{"a":`, "jcs: unexpected EOF"},
	} {
		_, err := jcs.Canonicalize([]byte(tc.in))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Canonicalize(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestCanonicalizeEscapes: control characters as JSON.stringify writes
// them, U+007F and beyond literal, nested structures sorted at each level.
func TestCanonicalizeEscapes(t *testing.T) {
	in := `{"b":[{"z":1,"a":"\u0000\u0008\u001f\u007f\u2028"}],"a":{"y":true,"x":null}}`
	want := `{"a":{"x":null,"y":true},"b":[{"a":"\u0000\b\u001f` + "\u007f\u2028" + `","z":1}]}`
	got, err := jcs.Canonicalize([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
