package rest

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/a2ad/a2ad/a2a"
)

// Query parameters are read as the ProtoJSON members of the request they
// stand for, by the same 1.0 decoders as the JSON-RPC params: a2ad builds
// that object from them (each value a JSON string, which the decoders
// read as a number or an enum where the field is one; "true" and
// "false" as booleans). Names are camelCase or the proto's snake_case.
// Unknown parameters are ignored, as unknown fields are in proto3.

// queryAliases are parameter names the decoders know by another name:
// a2a-go v2.2.1's REST client sends the list's timestamp filter as
// lastUpdatedAfter (the 0.3 name).
var queryAliases = map[string]string{"lastUpdatedAfter": "statusTimestampAfter"}

// boolParams are the parameters that are booleans.
var boolParams = map[string]bool{"includeArtifacts": true}

// queryParams is the JSON object of q's parameters named in known (by
// their camelCase name), with extra's members added (the ids of the
// path). A parameter given twice is -32602.
func queryParams(q url.Values, known []string, extra map[string]string) (json.RawMessage, *a2a.Error) {
	obj := make(map[string]any, len(q)+len(extra))
	var problems []a2a.Problem
	for _, name := range slices.Sorted(maps.Keys(q)) {
		vals := q[name]
		key := camel(name)
		if alias, ok := queryAliases[key]; ok {
			key = alias
		}
		if !contains(known, key) {
			continue
		}
		if _, dup := obj[key]; dup || len(vals) > 1 {
			problems = append(problems, a2a.Problem{Path: "/" + key, Message: "is given more than once"})
			continue
		}
		v := vals[0]
		if boolParams[key] && (v == "true" || v == "false") {
			obj[key] = v == "true"
			continue
		}
		obj[key] = v
	}
	if len(problems) > 0 {
		return nil, a2a.InvalidParams(problems...)
	}
	for k, v := range extra {
		obj[k] = v
	}
	b, err := json.Marshal(obj)
	if err != nil { // strings and booleans always encode
		return nil, a2a.ErrInternal
	}
	return b, nil
}

// camel is the camelCase form of a snake_case name; other names are kept.
func camel(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	var b strings.Builder
	up := false
	for _, r := range s {
		switch {
		case r == '_':
			up = true
		case up:
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
