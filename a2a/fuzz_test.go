package a2a_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
)

// FuzzParseRequest checks ParseRequest never panics, answers only -32700 or
// -32600, and returns ids and params that are valid JSON, so the answer it
// leads to is valid JSON too.
func FuzzParseRequest(f *testing.F) {
	for _, tc := range parseRequestCases {
		f.Add([]byte(tc.body))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":"\u0000\ud800","method":"\u00e9"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"id":{},"method":"m"}`))
	f.Add([]byte(`{"jsonrpc":"2\u002e0","id":1,"method":"m"}`))
	f.Add([]byte("\xef\xbb\xbf{}"))
	f.Add([]byte(strings.Repeat("[", 20000)))

	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		req, err := a2a.ParseRequest(body)
		if !bytes.Equal(body, orig) {
			t.Fatalf("ParseRequest modified its input")
		}
		if req.ID != nil && !json.Valid(req.ID) {
			t.Fatalf("ParseRequest(%q).ID = %q, not valid JSON", body, req.ID)
		}
		if req.ID != nil {
			switch req.ID[0] {
			case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			default:
				t.Fatalf("ParseRequest(%q).ID = %q, not a string, number or null", body, req.ID)
			}
		}
		if err != nil {
			if err.Code != a2a.CodeParseError && err.Code != a2a.CodeInvalidRequest {
				t.Fatalf("ParseRequest(%q) error code %d", body, err.Code)
			}
			if err.Code == a2a.CodeParseError && (req.ID != nil || json.Valid(body)) {
				t.Fatalf("ParseRequest(%q) = -32700 with id %q; body valid: %v", body, req.ID, json.Valid(body))
			}
			if out := a2a.AppendError(nil, req.ID, err); !json.Valid(out) {
				t.Fatalf("AppendError answer %q is not valid JSON", out)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("ParseRequest(%q) accepted invalid JSON", body)
		}
		if req.Params != nil && !json.Valid(req.Params) {
			t.Fatalf("ParseRequest(%q).Params = %q, not valid JSON", body, req.Params)
		}
		// The method is a string that re-encodes as JSON.
		if _, merr := json.Marshal(req.Method); merr != nil {
			t.Fatalf("method %q does not encode: %v", req.Method, merr)
		}
		if out := a2a.AppendResult(nil, req.ID, []byte(`{}`)); !json.Valid(out) {
			t.Fatalf("AppendResult answer %q is not valid JSON", out)
		}
	})
}
