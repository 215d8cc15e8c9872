package rest

import (
	"bytes"
	"encoding/json"
	"regexp"
)

// Bodies may name fields by their proto names (task_id) as well as by
// their JSON names (taskId), as ProtoJSON parsers accept both; the 1.0
// decoders read the JSON names only, so a body that has a snake_case key
// has its keys renamed first. Members that hold the caller's own values
// (metadata, a data part's data, an extension's params: Structs and
// Values in the proto) keep their keys as sent. When a body names a
// field both ways, the JSON name wins.

// snakeKey finds a member name with an underscore; a value such as
// "TASK_STATE_WORKING" is no member name (no colon follows it).
var snakeKey = regexp.MustCompile(`"[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*"\s*:`)

// freeForm are the members whose values are the caller's own.
var freeForm = map[string]bool{"metadata": true, "data": true, "params": true}

// protoNames is body with its proto names renamed to JSON names; body
// itself when it has none, or is not JSON (the decoder reports that).
func protoNames(body []byte) []byte {
	if !snakeKey.Match(body) {
		return body
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return body
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(camelKeys(v)) != nil {
		return body
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

// camelKeys renames the member names of v, but within freeForm members.
func camelKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			ck := camel(k)
			if _, both := x[ck]; both && ck != k {
				continue // named both ways: the JSON name wins
			}
			if freeForm[ck] {
				out[ck] = val
			} else {
				out[ck] = camelKeys(val)
			}
		}
		return out
	case []any:
		for i := range x {
			x[i] = camelKeys(x[i])
		}
	}
	return v
}
