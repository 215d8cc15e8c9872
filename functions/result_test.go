package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/a2ad/a2ad/functions"
)

var compactSeeds = []string{
	`{}`, ` [ 1 , 2 ] `, `"a b"`, `{"a" : "x \" y", "b":[ true, null ,1.5e3 ]}`,
	`"back\\slash \\" quote"`, "{\n\t\"k\":\r\n \"tab\\tin string\"}", `"\u00e9 é 日本"`, `{"a":{"b":{"c":[]}}}`,
}

// FuzzCompactInPlace: compacting in place writes what json.Compact writes.
func FuzzCompactInPlace(f *testing.F) {
	for _, s := range compactSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, in); err != nil {
			t.Fatal(err)
		}
		got := functions.CompactInPlace(append([]byte(nil), in...))
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("compactInPlace(%q) = %q, want %q", in, got, want.Bytes())
		}
	})
}

// TestParseResultSignalsOnly: only an object whose single key is a
// signal's is one, however its key is written; any other object whose
// first key is a signal's is output.
func TestParseResultSignalsOnly(t *testing.T) {
	for _, tc := range []struct {
		body, output, reason string
	}{
		{body: ` { "a2a.error" : "gone" } `, reason: "function reported an error: gone"},
		{body: `{"a2a\u002eerror":"gone"}`, reason: "function reported an error: gone"},
		{body: `{"\u0061\u0032\u0061\u002e\u0065\u0072\u0072\u006f\u0072":"gone"}`, reason: "function reported an error: gone"},
		{body: `{"a2a.error":"gone","more":1}`, output: `{"a2a.error":"gone","more":1}`},
		{body: `{"more":1,"a2a.error":"gone"}`, output: `{"more":1,"a2a.error":"gone"}`},
		{body: `{"a2a.errors":"x"}`, output: `{"a2a.errors":"x"}`},
		{body: "{\n  \"a2a.input_required\": {\"question\": \"Which?\"}\n}"},
	} {
		res, err := functions.ParseResult(context.Background(), []byte(tc.body))
		switch {
		case tc.reason != "":
			AssertReason(t, err, tc.reason)
		case tc.output != "":
			AssertOutput(t, res, err, tc.output)
		default:
			if err != nil || res.InputRequired != "Which?" {
				t.Errorf("ParseResult(%q) = %+v, %v; want a question", tc.body, res, err)
			}
		}
	}
}
