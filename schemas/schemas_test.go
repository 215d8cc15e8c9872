package schemas_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/schemas"
)

func TestCompileAndValidate(t *testing.T) {
	s, err := schemas.Compile("catalog.yaml#/functions/0/input schema %", []byte(`{
		"type": "object",
		"required": ["sku"],
		"properties": {
			"sku": {"type": "string"},
			"qty": {"$ref": "#/$defs/positive"},
			"tags": {"type": "array", "items": {"type": "string"}}
		},
		"$defs": {"positive": {"type": "integer", "minimum": 1}}
	}`))
	if err != nil {
		t.Fatalf("names with '#', '%%' and spaces, and internal $refs, must compile: %v", err)
	}
	if got := string(s.JSON()); !strings.HasPrefix(got, `{"type":"object"`) {
		t.Fatalf("JSON() is not the compacted document: %s", got)
	}
	tests := []struct {
		in   string
		want string
	}{
		{`{"sku":"a","qty":2,"tags":["x"]}`, `[]`},
		{`{"qty":0,"tags":["x",1]}`, `[{ missing properties: 'sku'} {/qty must be >= 1 but found 0} {/tags/1 expected string, but got number}]`},
		{`[]`, `[{ expected object, but got array}]`},
		{`{`, `[{ is not valid JSON}]`},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(s.Validate([]byte(tt.in))); got != tt.want && !(tt.want == "[]" && got == "[]") {
			t.Errorf("Validate(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`{`, "schema is not valid JSON"},
		{`[1]`, "schema must be a JSON object or boolean"},
		{`{"type": 5}`, "schema does not compile"},
		{`{"$ref": "http://example.com/s.json"}`, "schema does not compile"},
	}
	for _, tt := range tests {
		_, err := schemas.Compile("x.json", []byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%s) = %v, want an error containing %q", tt.doc, err, tt.want)
		}
	}
	if _, err := schemas.Compile("x.json", []byte(`true`)); err != nil {
		t.Errorf("a boolean schema must compile: %v", err)
	}
}

// FuzzValidate: validation of any instance must not panic, and must agree
// with itself.
func FuzzValidate(f *testing.F) {
	s, err := schemas.Compile("f.json", []byte(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"number","maximum":3}}},"required":["a"]}`))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{`{"a":[1,2]}`, `{"a":[4]}`, `{}`, `[]`, `"x"`, `{"a":[1e400]}`, `{`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		first := fmt.Sprint(s.Validate(in))
		if again := fmt.Sprint(s.Validate(in)); again != first {
			t.Fatalf("Validate is not deterministic: %s then %s", first, again)
		}
	})
}
