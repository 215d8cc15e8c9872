package tasks

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
)

// resolveByMap is resolveCall's first rule as it was written first, by
// decoding the data part into a map: what resolveCall must agree with.
func resolveByMap(msg *a2a.Message) (call, *InputError) {
	for i, p := range msg.Parts {
		if p.Kind != a2a.PartData {
			continue
		}
		var d map[string]json.RawMessage
		if err := json.Unmarshal(p.Data, &d); err != nil {
			continue
		}
		idKey, inKey := "skill", "input"
		if _, ok := d[idKey]; !ok {
			idKey, inKey = "function_id", "payload"
			if _, ok := d[idKey]; !ok {
				continue
			}
		}
		path := "/message/parts/" + strconv.Itoa(i) + "/data/"
		var id string
		if err := json.Unmarshal(d[idKey], &id); err != nil || firstNonSpace(d[idKey]) != '"' {
			return call{}, invalid(path+idKey, "must be a string")
		}
		if id == "" {
			return call{}, invalid(path+idKey, "must not be empty")
		}
		input := d[inKey]
		if len(input) == 0 || string(input) == "null" {
			input = json.RawMessage("{}")
		}
		return call{FunctionID: id, Input: input, Named: true}, nil
	}
	return call{}, nil
}

var resolveSeeds = []string{
	`{"skill":"demo::echo","input":{"message":"hello"}}`,
	` { "skill" : "a::b" , "input" : [ 1 , {"x": "y"} ] } `,
	`{"function_id":"text::count","payload":{"x":1}}`,
	`{"skill":"a::b","function_id":"c::d","payload":1}`,
	`{"sk\u0069ll":"a::\u0062","input":null}`,
	`{"skill":"a::b","skill":"c::d","input":1,"input":2}`,
	`{"skill":1}`, `{"skill":null}`, `{"skill":""}`, `{"function_id":["x"]}`,
	`{"skill":"\ud800x"}`, "{\"skill\":\"a\xffb\"}", "{\"sk\xffill\":\"a\"}",
	`null`, `[{"skill":"a::b"}]`, `"skill"`, `{"skill":"a::b"`, `{"other":1}`,
}

// TestResolveCallAsDecoded: the function and input a data part names
// are what decoding it into a map finds, for keys and ids with escapes,
// repeated keys, values that are no string, and data that is no object.
func TestResolveCallAsDecoded(t *testing.T) {
	for _, data := range resolveSeeds {
		checkResolve(t, []byte(data))
	}
}

func FuzzResolveCall(f *testing.F) {
	for _, data := range resolveSeeds {
		f.Add([]byte(data))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkResolve(t, data) })
}

func checkResolve(t *testing.T, data []byte) {
	t.Helper()
	// A part that names nothing leaves it to the next one.
	msg := &a2a.Message{Parts: []a2a.Part{a2a.DataPart(data), a2a.DataPart([]byte(`{"skill":"x::y"}`))}}
	want, wantErr := resolveByMap(msg)
	got, gotErr := resolveCall(msg)
	if diff := cmp.Diff(want, got); diff != "" || (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Errorf("resolveCall(%q) = %+v, %v; want %+v, %v", data, got, gotErr, want, wantErr)
	}
}
