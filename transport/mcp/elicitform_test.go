package mcp

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFormSchema: a tool's input schema as a flat form: primitives kept
// with the keywords MCP allows, others left out, the call's values as
// defaults where they fit, none required (the arguments hold the rest).
func TestFormSchema(t *testing.T) {
	for _, tc := range []struct{ schema, input, want string }{
		{`{"type":"object"}`, `{}`, `{"type":"object","properties":{}}`},
		{`{"type":"object","properties":{"sku":{"type":"string","minLength":1,"pattern":"^W"},"quantity":{"type":"integer","minimum":1},
			"approved":{"type":"boolean","description":"Approve."},"when":{"type":"string","format":"date"},"re":{"type":"string","format":"regex"},
			"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},"free":{"type":"array","items":{"type":"string"}},
			"nested":{"type":"object"},"any":{}},"required":["sku","quantity","nested"],"additionalProperties":false}`,
			`{"sku":"W-1","quantity":5000,"approved":"yes","tags":["a"],"nested":{"x":1}}`,
			`{"type":"object","properties":{"sku":{"type":"string","minLength":1,"default":"W-1"},"quantity":{"type":"integer","minimum":1,"default":5000},
			"approved":{"type":"boolean","description":"Approve."},"when":{"type":"string","format":"date"},"re":{"type":"string"},
			"tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"default":["a"]}}}`},
		{`{"type":"object","properties":{"n":{"type":"integer","default":2}}}`, `{"n":1.5}`,
			`{"type":"object","properties":{"n":{"type":"integer","default":2}}}`},
	} {
		got := formSchema(json.RawMessage(tc.schema), json.RawMessage(tc.input))
		if !sameJSON(t, got, tc.want) {
			t.Errorf("formSchema(%s, %s) = %s\nwant %s", tc.schema, tc.input, got, tc.want)
		}
	}
}

func sameJSON(tb testing.TB, got json.RawMessage, want string) bool {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatal(err)
	}
	return cmp.Equal(g, w)
}
