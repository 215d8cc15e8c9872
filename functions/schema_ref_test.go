package functions

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/a2ad/a2ad/internal/testkit"
)

// catalogSchemaPath is the catalogue's JSON Schema, for editors.
const catalogSchemaPath = "../docs/reference/catalog.schema.json"

// TestCatalogSchema keeps docs/reference/catalog.schema.json the
// loader's: the same keys at every level, the same builtins and choices,
// and the shipped catalogues valid under it.
func TestCatalogSchema(t *testing.T) {
	raw, err := os.ReadFile(catalogSchemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties map[string]json.RawMessage
		Defs       struct {
			Function struct {
				Properties map[string]struct {
					Properties map[string]json.RawMessage
					Enum       []string
				}
			}
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	fn := doc.Defs.Function.Properties
	fnKeys := make([]string, 0, len(fn))
	for k := range fn {
		fnKeys = append(fnKeys, k)
	}
	slices.Sort(fnKeys)
	sorted := func(s ...string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"top-level keys", testkit.SortedKeys(doc.Properties), sorted("functions", "default_skill")},
		{"function keys", fnKeys, sorted(functionKeys...)},
		{"http keys", testkit.SortedKeys(fn["http"].Properties), sorted(httpKeys...)},
		{"exec keys", testkit.SortedKeys(fn["exec"].Properties), sorted(execKeys...)},
		{"builtins", fn["builtin"].Enum, BuiltinNames()},
		{"output", fn["output"].Enum, []string{"data", "parts"}},
		{"reply", fn["reply"].Enum, []string{"task", "message", "either"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: the schema has %q, the loader %q", c.what, c.got, c.want)
		}
	}

	schema := testkit.CompileSchema(t, "catalog.schema.json", raw)
	for _, path := range []string{"../examples/catalog.yaml", "../examples/conformance/catalog.yaml", "../examples/conformance/mcp.yaml", "../examples/plaintext/catalog.yaml"} {
		if err := schema.Validate(testkit.YAMLValue(t, path)); err != nil {
			t.Errorf("%s under the schema: %v", path, err)
		}
	}
	for _, bad := range []string{
		`{"functions": [{"id": "a", "builtin": "echo", "tiemout": "1s"}]}`,
		`{"functions": [{"id": "a", "builtin": "echo", "http": {"url": "http://x"}}]}`,
		`{"functions": [{"id": "a", "builtin": "nope"}]}`,
		`{"functions": [{"id": "a", "exec": {"argv": ["x"]}, "timeout": "soon"}]}`,
	} {
		var v any
		_ = json.Unmarshal([]byte(bad), &v)
		if schema.Validate(v) == nil {
			t.Errorf("the schema takes %s, which the loader refuses", bad)
		}
	}
}
