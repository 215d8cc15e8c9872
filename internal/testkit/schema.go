package testkit

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	yaml "go.yaml.in/yaml/v3"
)

// SortedKeys is m's keys, sorted: the properties of a JSON Schema object,
// say, to compare with the keys a loader reads.
func SortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ReadJSON reads the JSON file at path as a T.
func ReadJSON[T any](tb testing.TB, path string) T {
	tb.Helper()
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatal(err)
	}
	return v
}

// CompileSchema compiles the JSON Schema document raw, named name.
func CompileSchema(tb testing.TB, name string, raw []byte) *jsonschema.Schema {
	tb.Helper()
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource(name, bytes.NewReader(raw)); err != nil {
		tb.Fatal(err)
	}
	schema, err := comp.Compile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return schema
}

// YAMLValue reads the YAML file at path as the JSON values it stands for
// (maps, lists, strings, float64 numbers), to validate against a JSON
// Schema.
func YAMLValue(tb testing.TB, path string) any {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		tb.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(j, &out); err != nil {
		tb.Fatal(err)
	}
	return out
}
