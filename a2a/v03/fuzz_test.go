package v03_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v03 "github.com/a2ad/a2ad/a2a/v03"
)

// FuzzDecodeSendParams checks DecodeSendParams never panics, reports
// problems as -32602 with a located list, and that what it accepts meets
// the 0.3 rules and encodes to a message it accepts again.
func FuzzDecodeSendParams(f *testing.F) {
	for _, tc := range decodeSendParamsCases {
		f.Add([]byte(tc.Params))
	}
	f.Add([]byte(sendParams(nil, "")))
	f.Add([]byte(sendParams(map[string]string{"parts": `[{"kind":"file","file":{"uri":"https://example.com/a"}},{"kind":"data","data":{}}]`},
		`"configuration":{"blocking":false,"historyLength":0,"acceptedOutputModes":["text/plain"]},"metadata":{}`)))

	// Ids and metadata keys at and past their caps (issue 25).
	long := `"` + strings.Repeat("i", a2a.MaxIDBytes) + `"`
	f.Add([]byte(sendParams(map[string]string{"messageId": long, "contextId": long, "taskId": long, "metadata": `{` + long + `:1}`}, "")))
	f.Add([]byte(sendParams(map[string]string{"messageId": `"x` + long[1:]}, `"metadata":{"x`+long[1:]+`:1}`)))

	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := v03.DecodeSendParams(raw)
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
		wiretest.CheckAccepted(t, "DecodeSendParams", raw, p)
		// What was accepted encodes, and the encoding reads back the same.
		wiretest.CheckRoundTrip(t, &p.Message, v03.AppendMessage, v03.DecodeSendParams)
	})
}
