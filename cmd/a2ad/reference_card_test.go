package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/testkit"
)

// jsonSchema2020 is the meta-schema of JSON Schema 2020-12: a skill's
// input schema is a document it validates.
const jsonSchema2020 = "https://json-schema.org/draft/2020-12/schema"

// cardExtensionSchema is docs/reference/card-extension.schema.json: the
// JSON Schema of the params of the card extension agentcard.SchemaExtensionURI,
// inferred from the Go type the card is built with
// (agentcard.SkillInputSchemas), each value a JSON Schema.
func cardExtensionSchema(tb testing.TB) []byte {
	tb.Helper()
	s, err := jsonschema.For[agentcard.SkillInputSchemas](&jsonschema.ForOptions{
		TypeSchemas: map[reflect.Type]*jsonschema.Schema{
			reflect.TypeFor[json.RawMessage](): {Ref: jsonSchema2020, Description: "The skill's input JSON Schema (2020-12)."},
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	s.Schema = jsonSchema2020
	s.ID = "https://github.com/a2ad/a2ad/docs/reference/card-extension.schema.json"
	s.Title = "a2ad's skill input schemas (the params of the card extension " + agentcard.SchemaExtensionURI + ")"
	s.Description = "The params of the extension " + agentcard.SchemaExtensionURI + " in the agent card's " +
		"capabilities.extensions: each skill's input JSON Schema, by skill id (the card's skills[].id), for the skills " +
		"the card lists that have one. Generated from agentcard.SkillInputSchemas by go generate ./cmd/a2ad."
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return append(b, '\n')
}

// TestReferenceCardExtension: the params of a card built from the
// example catalogue are valid under the generated schema, and params
// whose value is not a JSON Schema are not.
func TestReferenceCardExtension(t *testing.T) {
	schema := testkit.CompileSchema(t, "card-extension.schema.json", cardExtensionSchema(t))
	cat, err := functions.Load(filepath.Join(repoRoot, "examples", "catalog.yaml"), functions.LoadOptions{
		LookupEnv: func(string) (string, bool) { return "set", true },
	})
	if err != nil {
		t.Fatal(err)
	}
	card, err := agentcard.Build(cat, agentcard.Options{
		BaseURL: "https://agents.example.com", Policy: exposure.Policy{ExposeAll: true}, CallerTiers: []string{"partner", "internal"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Capabilities struct {
			Extensions []struct {
				URI    string         `json:"uri"`
				Params map[string]any `json:"params"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(card.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	var params map[string]any
	for _, e := range doc.Capabilities.Extensions {
		if e.URI == agentcard.SchemaExtensionURI {
			params = e.Params
		}
	}
	if len(params) < 2 {
		t.Fatalf("the card's schema extension has %d params, want the example catalogue's skills", len(params))
	}
	if err := schema.Validate(params); err != nil {
		t.Errorf("the card's params under the schema: %v", err)
	}
	for _, bad := range []string{`{"demo::echo": 42}`, `{"demo::echo": {"type": "strnig"}}`, `["demo::echo"]`} {
		var v any
		_ = json.Unmarshal([]byte(bad), &v)
		if schema.Validate(v) == nil {
			t.Errorf("the schema takes %s, which is no skill's input schema", bad)
		}
	}
}
