package v1_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

// checkDecodeErrorV1 checks a decoder's error is a located -32602 whose
// 1.0 answer is valid JSON with one field violation per problem.
func checkDecodeErrorV1(t *testing.T, raw []byte, err *a2a.Error) {
	t.Helper()
	if err.Code != a2a.CodeInvalidParams || !strings.HasPrefix(err.Message, "Invalid parameters: ") {
		t.Fatalf("decoding %q: error = %d %q", raw, err.Code, err.Message)
	}
	list := wiretest.Problems(t, err)
	if len(list) == 0 {
		t.Fatalf("decoding %q: no problems listed", raw)
	}
	for _, p := range list {
		if !strings.HasPrefix(p.Path, "/") || p.Message == "" {
			t.Fatalf("decoding %q: problem %+v is not located", raw, p)
		}
	}
	out := v1.AppendError(nil, json.RawMessage(`1`), err)
	checkErrorV1Shape(t, out)
	var env struct {
		Error struct {
			Data []struct {
				FieldViolations []struct{ Field, Description string }
			}
		}
	}
	if jerr := json.Unmarshal(out, &env); jerr != nil || len(env.Error.Data) != 2 || len(env.Error.Data[1].FieldViolations) != len(list) {
		t.Fatalf("decoding %q: 1.0 answer %s does not list the %d problems", raw, out, len(list))
	}
}

// FuzzDecodeSendParamsV1 checks DecodeSendParamsV1 never panics, reports
// problems as located -32602 errors, and that what it accepts meets the
// core rules, reads back the same through the 1.0 codec, and is accepted
// by the 0.3 codec too (the task store keeps the 0.3 form).
func FuzzDecodeSendParamsV1(f *testing.F) {
	for _, tc := range decodeSendParamsV1Cases {
		f.Add([]byte(tc.Params))
	}
	for _, m := range roundTripMessages() {
		b, _ := v1.AppendMessage(nil, &m)
		f.Add([]byte(`{"message":` + string(b) + `,"configuration":{"historyLength":"4","returnImmediately":false,` +
			`"taskPushNotificationConfig":{"url":"https://x","authentication":{"scheme":"Bearer"}}}}`))
	}
	f.Add([]byte(withPartsV1(`[{"raw":"-_8"},{"url":"u","filename":"f","mediaType":"m"},{"data":{ "a" : 1 }}]`)))
	// Ids and metadata keys at and past their caps (issue 25).
	long := `"` + strings.Repeat("i", a2a.MaxIDBytes) + `"`
	f.Add([]byte(wiretest.SendParams10(map[string]string{"messageId": long, "contextId": long, "referenceTaskIds": `[` + long + `]`}, "")))
	f.Add([]byte(wiretest.SendParams10(map[string]string{"taskId": `"x` + long[1:]}, `"metadata":{"x`+long[1:]+`:1}`)))

	f.Fuzz(func(t *testing.T, raw []byte) {
		orig := bytes.Clone(raw)
		p, err := v1.DecodeSendParams(raw)
		if !bytes.Equal(raw, orig) {
			t.Fatal("DecodeSendParamsV1 modified its input")
		}
		if err != nil {
			checkDecodeErrorV1(t, raw, err)
			return
		}
		wiretest.CheckAccepted(t, "DecodeSendParamsV1", raw, p)
		m := p.Message
		// 1.0 → core → 1.0 → core is stable.
		mb := wiretest.CheckRoundTrip(t, &m, v1.AppendMessage, v1.DecodeSendParams)
		// The 0.3 codec accepts it and gives the same core message.
		b03, merr := v03.AppendMessage(nil, &m)
		if merr != nil {
			t.Fatalf("accepted message does not encode in 0.3: %v", merr)
		}
		via03, aerr := v03.DecodeSendParams(json.RawMessage(`{"message":` + string(b03) + `}`))
		if aerr != nil {
			t.Fatalf("0.3 codec refuses %s: %q", b03, aerr.Message)
		}
		if mb3, _ := v1.AppendMessage(nil, &via03.Message); !bytes.Equal(mb, mb3) {
			t.Fatalf("0.3 round trip changed the message:\n%s\n%s", mb, mb3)
		}
	})
}

// FuzzDecodeParamsV1 runs the other 1.0 decoders over the same input:
// none panics, modifies its input or answers anything but a located
// -32602, and what they accept is well formed.
func FuzzDecodeParamsV1(f *testing.F) {
	for _, s := range []string{"", "null", "{}", "[]", `{"id":"t1","historyLength":"3"}`, `{"id":"","metadata":[]}`,
		`{"taskId":"t","id":"c","url":"https://x","token":"t","authentication":{"scheme":"Bearer","credentials":"c"}}`,
		`{"taskId":"t","pageSize":1e400,"pageToken":"p"}`, `{"tenant":1}`, `{"id":"t","historyLength":-0.0}`, `{"a":{"b":[1,{"c":"\u00e9"}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		orig := bytes.Clone(raw)
		defer func() {
			if !bytes.Equal(raw, orig) {
				t.Fatal("a decoder modified its input")
			}
		}()
		if q, err := v1.DecodeTaskQuery(raw); err != nil {
			checkDecodeErrorV1(t, raw, err)
		} else if q.ID == "" || (q.HistoryLength != nil && *q.HistoryLength < 0) {
			t.Fatalf("DecodeTaskQueryV1(%q) accepted %+v", raw, q)
		}
		if p, err := v1.DecodeTaskIDParams(raw); err != nil {
			checkDecodeErrorV1(t, raw, err)
		} else if p.ID == "" {
			t.Fatalf("DecodeTaskIDParamsV1(%q) accepted an empty id", raw)
		}
		if p, err := v1.DecodePushCreate(raw); err != nil {
			checkDecodeErrorV1(t, raw, err)
		} else {
			if p.TaskID == "" || p.Config.URL == "" {
				t.Fatalf("DecodePushCreateV1(%q) accepted %+v", raw, p)
			}
			if a := p.Config.Authentication; a != nil && (len(a.Schemes) != 1 || a.Schemes[0] == "") {
				t.Fatalf("DecodePushCreateV1(%q) accepted authentication %+v", raw, a)
			}
			// It reads back the same.
			c := a2a.TaskPushConfig{TaskID: p.TaskID, PushNotificationConfig: p.Config}
			b, _ := v1.AppendPushConfig(nil, &c)
			again, aerr := v1.DecodePushCreate(b)
			if aerr != nil || !reflect.DeepEqual(again, p) {
				t.Fatalf("push config round trip of %s = %+v, %v; want %+v", b, again, aerr, p)
			}
		}
		if p, err := v1.DecodePushRef(raw); err != nil {
			checkDecodeErrorV1(t, raw, err)
		} else if p.TaskID == "" || p.ConfigID == "" {
			t.Fatalf("DecodePushRefV1(%q) accepted %+v", raw, p)
		}
		if p, err := v1.DecodePushList(raw); err != nil {
			checkDecodeErrorV1(t, raw, err)
		} else if p.TaskID == "" || p.PageSize < 0 {
			t.Fatalf("DecodePushListV1(%q) accepted %+v", raw, p)
		}
		if err := v1.DecodeNoParams(raw); err != nil {
			checkDecodeErrorV1(t, raw, err)
		}
	})
}
