package mcp

import (
	"encoding/json"
	"math"
)

// formSchema is schema, a tool's input schema, as a form-mode
// elicitation's requestedSchema, which MCP restricts to a flat object of
// primitive properties: each property of schema that is a string, a number
// or integer, a boolean, or an array of enumerated strings is asked for,
// with the keywords MCP allows for its kind (title, description, bounds,
// format, enum, oneOf/anyOf titles); other properties (objects, free
// arrays, no type) are left out, and keep the call's values. No property
// is required: the answer goes over the call's arguments (mergeInput), so
// what it leaves out keeps the call's value, and the function's input
// schema checks the whole. Each property's default is input's value for
// it when the value fits its kind, so a form shows the call as it was and
// the user changes what the question asks. A schema without properties
// gives an empty form.
func formSchema(schema, input json.RawMessage) json.RawMessage {
	var in struct {
		Properties map[string]map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &in)
	var values map[string]json.RawMessage
	_ = json.Unmarshal(input, &values)
	props := map[string]map[string]json.RawMessage{}
	for name, p := range in.Properties {
		if out := formProperty(p, values[name]); out != nil {
			props[name] = out
		}
	}
	b, err := json.Marshal(struct {
		Type       string                                `json:"type"`
		Properties map[string]map[string]json.RawMessage `json:"properties"`
	}{"object", props})
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return b
}

// formKeywords are the keywords a form property of each kind keeps.
var formKeywords = map[string][]string{
	"string":  {"title", "description", "minLength", "maxLength", "format", "enum", "oneOf"},
	"number":  {"title", "description", "minimum", "maximum"},
	"integer": {"title", "description", "minimum", "maximum"},
	"boolean": {"title", "description"},
	"array":   {"title", "description", "minItems", "maxItems", "items"},
}

// formFormats are the string formats a form may name.
var formFormats = map[string]bool{`"email"`: true, `"uri"`: true, `"date"`: true, `"date-time"`: true}

// formProperty is p, a property's schema, as a form property, with value
// (the call's, or nil) as its default when it fits; nil when the property
// is not one a form can ask for.
func formProperty(p map[string]json.RawMessage, value json.RawMessage) map[string]json.RawMessage {
	var kind string
	if json.Unmarshal(p["type"], &kind) != nil {
		return nil
	}
	keys, ok := formKeywords[kind]
	if !ok || (kind == "array" && !enumItems(p["items"])) {
		return nil
	}
	out := map[string]json.RawMessage{"type": p["type"]}
	for _, k := range keys {
		if v, ok := p[k]; ok && (k != "format" || formFormats[string(v)]) {
			out[k] = v
		}
	}
	if fits(kind, value) {
		out["default"] = value
	} else if d, ok := p["default"]; ok && fits(kind, d) {
		out["default"] = d
	}
	return out
}

// enumItems reports whether items, an array's, enumerates strings (enum,
// or anyOf consts with titles): a multi-select a form can show.
func enumItems(items json.RawMessage) bool {
	var it struct {
		Type  string `json:"type"`
		Enum  []any  `json:"enum"`
		AnyOf []struct {
			Const *string `json:"const"`
		} `json:"anyOf"`
	}
	if json.Unmarshal(items, &it) != nil {
		return false
	}
	if len(it.Enum) > 0 {
		for _, v := range it.Enum {
			if _, ok := v.(string); !ok {
				return false
			}
		}
		return true
	}
	for _, c := range it.AnyOf {
		if c.Const == nil {
			return false
		}
	}
	return len(it.AnyOf) > 0
}

// fits reports whether v, a JSON value (nil for none), is one of kind.
func fits(kind string, v json.RawMessage) bool {
	if len(v) == 0 {
		return false
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return false
	}
	switch x := x.(type) {
	case string:
		return kind == "string"
	case bool:
		return kind == "boolean"
	case float64:
		return kind == "number" || (kind == "integer" && x == math.Trunc(x))
	case []any:
		for _, e := range x {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return kind == "array"
	}
	return false
}
