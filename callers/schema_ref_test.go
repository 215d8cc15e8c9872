package callers

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/testkit"
)

// TestKeysSchema keeps docs/reference/keys.schema.json the loader's: the
// same keys at every level, and the files a2ad keys writes (both
// versions) valid under it, while a misspelt key is not.
func TestKeysSchema(t *testing.T) {
	raw, err := os.ReadFile("../docs/reference/keys.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		Properties map[string]json.RawMessage
	}
	var doc struct {
		Properties map[string]json.RawMessage
		Defs       struct {
			Entry struct {
				Properties map[string]json.RawMessage
			}
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var rate, keyItems struct {
		Properties map[string]json.RawMessage
		Items      object
	}
	_ = json.Unmarshal(doc.Defs.Entry.Properties["rate"], &rate)
	_ = json.Unmarshal(doc.Defs.Entry.Properties["keys"], &keyItems)
	sorted := func(s ...string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"top-level keys", testkit.SortedKeys(doc.Properties), sorted("keys", "version")},
		{"entry keys", testkit.SortedKeys(doc.Defs.Entry.Properties), sorted(entryKeys...)},
		{"rate keys", testkit.SortedKeys(rate.Properties), sorted(rateKeys...)},
		{"key keys", testkit.SortedKeys(keyItems.Items.Properties), sorted(keyKeys...)},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: the schema has %q, the loader %q", c.what, c.got, c.want)
		}
	}

	schema := testkit.CompileSchema(t, "keys.schema.json", raw)
	path := filepath.Join(t.TempDir(), "keys.yaml")
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	if _, err := AppendKey(path, "acme", []string{"partner"}, now); err != nil {
		t.Fatal(err)
	}
	check := func(label string) {
		t.Helper()
		if _, err := LoadKeys(path); err != nil {
			t.Fatalf("%s: the loader refuses it: %v", label, err)
		}
		if err := schema.Validate(testkit.YAMLValue(t, path)); err != nil {
			t.Errorf("%s under the schema: %v", label, err)
		}
	}
	check("a file with one caller")
	if _, err := AppendKey(path, "acme", nil, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := RevokeKeys(path, "acme", "", now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	check("a version 2 file with a rotated and revoked caller")
	var bad any
	_ = json.Unmarshal([]byte(`{"keys": [{"id": "a", "hash": "sha256:`+string(bytes.Repeat([]byte("0"), 64))+`", "tiers": ["p"], "quota_taks": 1}]}`), &bad)
	if schema.Validate(bad) == nil {
		t.Error("the schema takes quota_taks, which the loader refuses")
	}
}
