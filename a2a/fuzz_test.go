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

// FuzzDecodeSendParams checks DecodeSendParams never panics, reports
// problems as -32602 with a located list, and that what it accepts meets
// the 0.3 rules and encodes to a message it accepts again.
func FuzzDecodeSendParams(f *testing.F) {
	for _, tc := range decodeSendParamsCases {
		f.Add([]byte(tc.params))
	}
	f.Add([]byte(sendParams(nil, "")))
	f.Add([]byte(sendParams(map[string]string{"parts": `[{"kind":"file","file":{"uri":"https://example.com/a"}},{"kind":"data","data":{}}]`},
		`"configuration":{"blocking":false,"historyLength":0,"acceptedOutputModes":["text/plain"]},"metadata":{}`)))

	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := a2a.DecodeSendParams(raw)
		if err != nil {
			if err.Code != a2a.CodeInvalidParams || !strings.HasPrefix(err.Message, "Invalid parameters: ") {
				t.Fatalf("DecodeSendParams(%q) error = %d %q", raw, err.Code, err.Message)
			}
			list, ok := err.Data["errors"].([]any)
			if !ok || len(list) == 0 {
				t.Fatalf("DecodeSendParams(%q) data.errors = %#v", raw, err.Data["errors"])
			}
			for _, item := range list {
				pr, _ := item.(map[string]any)
				path, _ := pr["path"].(string)
				if !strings.HasPrefix(path, "/") {
					t.Fatalf("DecodeSendParams(%q) problem path %q is not a JSON pointer", raw, path)
				}
			}
			if _, merr := json.Marshal(err); merr != nil {
				t.Fatalf("error does not encode: %v", merr)
			}
			return
		}
		m := p.Message
		if m.MessageID == "" || (m.Role != a2a.RoleUser && m.Role != a2a.RoleAgent) || len(m.Parts) == 0 {
			t.Fatalf("DecodeSendParams(%q) accepted %+v", raw, m)
		}
		for i, part := range m.Parts {
			switch part.Kind {
			case a2a.PartText:
			case a2a.PartData:
				if !json.Valid(part.Data) || part.Data[0] != '{' {
					t.Fatalf("part %d data = %q, want a JSON object", i, part.Data)
				}
			case a2a.PartFile:
				if part.File == nil {
					t.Fatalf("file part %d without file", i)
				}
			default:
				t.Fatalf("part %d kind %q", i, part.Kind)
			}
		}
		if p.HistoryLength != nil && *p.HistoryLength < 0 {
			t.Fatalf("negative historyLength %d accepted", *p.HistoryLength)
		}
		// What was accepted encodes, and the encoding is accepted again.
		mb, merr := json.Marshal(m)
		if merr != nil {
			t.Fatalf("accepted message does not encode: %v", merr)
		}
		again, aerr := a2a.DecodeSendParams(json.RawMessage(`{"message":` + string(mb) + `}`))
		if aerr != nil {
			t.Fatalf("re-decoding %s: %v %q", mb, aerr.Code, aerr.Message)
		}
		if again.Message.MessageID != m.MessageID || len(again.Message.Parts) != len(m.Parts) {
			t.Fatalf("re-decoded message %+v, want %+v", again.Message, m)
		}
	})
}
