package schemas_test

import (
	"fmt"
	"testing"

	"github.com/a2ad/a2ad/schemas"
)

// shapeSchemas are schemas checked as shapes first, and one that is not.
var shapeSchemas = map[string]string{
	"default": `{"type":"object"}`,
	"echo":    `{"type":"object","properties":{"message":{"type":"string","description":"Text to send back."}}}`,
	"nested": `{"type":"object","required":["n","tags"],"additionalProperties":false,"properties":{
		"n":{"type":"integer"},"x":{"type":["number","null"]},"b":{"type":"boolean"},
		"tags":{"type":"array","items":{"type":"string"}},
		"m":{"additionalProperties":{"type":"object","required":["k"]}}}}`,
	"any":     `{"title":"anything"}`,
	"minimum": `{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}`,
}

// TestShapeAcceptsOnlyValid: what a shape accepts, the compiled schema
// accepts too, and a shape accepts the usual valid instances (else it
// would only cost time); the schemas that are not shapes are left to the
// compiled schema, and Validate answers as it does.
func TestShapeAcceptsOnlyValid(t *testing.T) {
	tests := []struct {
		schema, in string
		accepted   bool // by the shape
	}{
		{"default", `{}`, true},
		{"default", ` {"a": [1, {"b": "}"}], "c": "\"{"} `, true},
		{"default", `[]`, false},
		{"default", `{} {}`, false},
		{"default", `{"a":1`, false},
		{"echo", `{"message":"hello"}`, true},
		{"echo", `{"message":"hello","other":[1,2,{}]}`, true},
		{"echo", `{"message":1}`, false},
		{"echo", `{"mess\u0061ge":1}`, false},
		{"echo", `{"message":"a","message":2}`, false},
		{"echo", `{"message":2,"message":"a"}`, false}, // the last one counts, but the shape checks each
		{"nested", `{"n":-3,"tags":[],"x":null,"b":false}`, true},
		{"nested", `{"n":3,"tags":["a","b"],"x":1.5e3,"m":{"p":{"k":0},"q":{"k":{}}}}`, true},
		{"nested", `{"n":3.0,"tags":[]}`, false}, // an integer, but the shape cannot tell
		{"nested", `{"n":3e2,"tags":[]}`, false},
		{"nested", `{"n":3}`, false},
		{"nested", `{"n":3,"tags":[1]}`, false},
		{"nested", `{"n":3,"tags":[],"y":1}`, false},
		{"nested", `{"n":3,"tags":[],"m":{"p":{}}}`, false},
		{"nested", `{"n":"3","tags":[]}`, false},
		{"nested", `{"n":3,"tags":[],"x":"1"}`, false},
		{"nested", `{"n":3,"tags":[],"\u00e9":1}`, false},
		{"any", `1`, true},
		{"any", `"x"`, true},
		{"any", `nul`, false},
	}
	for _, tt := range tests {
		s := mustCompile(t, shapeSchemas[tt.schema])
		shaped, accepted := s.Shaped([]byte(tt.in))
		if !shaped || accepted != tt.accepted {
			t.Errorf("%s: shape of %s = %v, %v; want true, %v", tt.schema, tt.in, shaped, accepted, tt.accepted)
		}
		want := fmt.Sprint(s.Problems([]byte(tt.in)))
		if accepted && want != "[]" {
			t.Errorf("%s: the shape accepts %s, the compiled schema does not: %s", tt.schema, tt.in, want)
		}
		if got := fmt.Sprint(s.Validate([]byte(tt.in))); got != want {
			t.Errorf("%s: Validate(%s) = %s, want %s", tt.schema, tt.in, got, want)
		}
	}
	for _, notShape := range []string{"minimum"} {
		if shaped, _ := mustCompile(t, shapeSchemas[notShape]).Shaped([]byte(`{}`)); shaped {
			t.Errorf("%s is checked as a shape", notShape)
		}
	}
}

// FuzzShape: a shape never accepts what the compiled schema rejects.
func FuzzShape(f *testing.F) {
	var list []*schemas.Schema
	for _, name := range []string{"default", "echo", "nested", "any"} {
		list = append(list, mustCompile(f, shapeSchemas[name]))
	}
	for _, seed := range []string{`{"message":"hi"}`, `{"n":1,"tags":["a"],"m":{"a":{"k":1}}}`, `[1,"a",{}]`, `{"n":1.0}`, `{`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for i, s := range list {
			if _, accepted := s.Shaped(in); accepted {
				if p := s.Problems(in); len(p) > 0 {
					t.Fatalf("schema %d: the shape accepts %q, the compiled schema does not: %v", i, in, p)
				}
			}
		}
	})
}

func mustCompile(tb testing.TB, doc string) *schemas.Schema {
	tb.Helper()
	s, err := schemas.Compile("shape.json", []byte(doc))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
