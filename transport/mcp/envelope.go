package mcp

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/a2ad/a2ad/internal/jsonw"
)

// readEnvelope reads body's envelope: empty for a body that is not one
// JSON-RPC message (the SDK answers it). It reads what json.Unmarshal
// reads into an envelope (FuzzReadEnvelope compares the two), without
// encoding/json's reflection for the usual message: one scan of the body
// (jsonw), its members taken by name. A message whose members
// json.Unmarshal would read otherwise (a name in other case, a name
// repeated, a value of another type) is read by json.Unmarshal.
func readEnvelope(body []byte) envelope {
	var env envelope
	top, ok := jsonw.ValidMembers(body)
	if !ok || top == nil && jsonw.TypeOf(body) != jsonw.Object {
		return envelope{} // not JSON, or not an object: never a message
	}
	var method, params, meta json.RawMessage
	if fastMembers(top, []string{"method", "id", "params"}, []*json.RawMessage{&method, &env.ID, &params}) &&
		fastString(method, &env.Method) && fastObject(params) {
		pm := jsonw.ObjectMembers(params)
		if fastMembers(pm, []string{"_meta", "requestId"}, []*json.RawMessage{&meta, &env.Params.RequestID}) && fastObject(meta) &&
			fastMembers(jsonw.ObjectMembers(meta), []string{"progressToken"}, []*json.RawMessage{&env.Params.Meta.ProgressToken}) {
			env.ID = bytes.Clone(env.ID)
			env.Params.RequestID = bytes.Clone(env.Params.RequestID)
			env.Params.Meta.ProgressToken = bytes.Clone(env.Params.Meta.ProgressToken)
			return env
		}
	}
	env = envelope{}
	if json.Unmarshal(body, &env) != nil {
		return envelope{}
	}
	return env
}

// fastMembers sets each of vals to the member of ms named names[i], and
// reports whether json.Unmarshal would read them alike: no name repeated,
// none matching one of names but in another case.
func fastMembers(ms jsonw.Members, names []string, vals []*json.RawMessage) bool {
	for _, m := range ms {
		for i, n := range names {
			if m.Key == n && *vals[i] == nil {
				*vals[i] = m.Val
			} else if strings.EqualFold(m.Key, n) {
				return false
			}
		}
	}
	return true
}

// fastString sets s to raw, a JSON string, and reports whether raw was
// absent, null or a string (json.Unmarshal fails on any other).
func fastString(raw json.RawMessage, s *string) bool {
	switch {
	case raw == nil || jsonw.TypeOf(raw) == jsonw.Null:
		return true
	case jsonw.TypeOf(raw) == jsonw.String:
		*s = jsonw.Unquote(raw)
		return true
	}
	return false
}

// fastObject reports whether raw, a member decoded into a struct, is
// absent, null or an object (json.Unmarshal fails on any other).
func fastObject(raw json.RawMessage) bool {
	t := jsonw.TypeOf(raw)
	return raw == nil || t == jsonw.Null || t == jsonw.Object
}
