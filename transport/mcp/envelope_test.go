package mcp

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzReadEnvelope checks that readEnvelope reads what json.Unmarshal
// reads into an envelope, or, where that fails, nothing.
func FuzzReadEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"a\u00e9","method":"tools/call","params":{"_meta":{"progressToken":null,"x":[1]}}}`,
		`{"method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}`,
		`{"Method":"x","id":1}`, `{"method":"a","method":"b"}`, `{"id":1,"ID":2}`, `{"\u006dethod":"tools/list"}`,
		`{"method":1}`, `{"method":null,"params":null}`, `{"params":[]}`, `{"params":{"_meta":5}}`,
		`{"params":{"_meta":{"progressToken":1,"PROGRESSTOKEN":2}}}`, `{"méthod":"x","\u212aey":1}`,
		`[{"method":"x"}]`, `null`, `7`, ` { "id" : [ 1 , 2 ] } `, `{"method":"x\ud800"}`, `{"method":"a"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want envelope
		if json.Unmarshal(body, &want) != nil {
			want = envelope{}
		}
		if got := readEnvelope(body); !reflect.DeepEqual(got, want) {
			t.Fatalf("readEnvelope(%q) = %+v, want %+v", body, got, want)
		}
	})
}
