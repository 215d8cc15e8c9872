package a2a_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
)

// checkDecodeErrorV1 checks a decoder's error is a located -32602 whose
// 1.0 answer is valid JSON with one field violation per problem.
func checkDecodeErrorV1(t *testing.T, raw []byte, err *a2a.Error) {
	t.Helper()
	if err.Code != a2a.CodeInvalidParams || !strings.HasPrefix(err.Message, "Invalid parameters: ") {
		t.Fatalf("decoding %q: error = %d %q", raw, err.Code, err.Message)
	}
	list := problems(t, err)
	if len(list) == 0 {
		t.Fatalf("decoding %q: no problems listed", raw)
	}
	for _, p := range list {
		if !strings.HasPrefix(p.Path, "/") || p.Message == "" {
			t.Fatalf("decoding %q: problem %+v is not located", raw, p)
		}
	}
	out := a2a.AppendErrorV1(nil, json.RawMessage(`1`), err)
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
		f.Add([]byte(tc.params))
	}
	for _, m := range roundTripMessages() {
		b, _ := m.AppendJSONV1(nil)
		f.Add([]byte(`{"message":` + string(b) + `,"configuration":{"historyLength":"4","returnImmediately":false,` +
			`"taskPushNotificationConfig":{"url":"https://x","authentication":{"scheme":"Bearer"}}}}`))
	}
	f.Add([]byte(withPartsV1(`[{"raw":"-_8"},{"url":"u","filename":"f","mediaType":"m"},{"data":{ "a" : 1 }}]`)))

	f.Fuzz(func(t *testing.T, raw []byte) {
		orig := bytes.Clone(raw)
		p, err := a2a.DecodeSendParamsV1(raw)
		if !bytes.Equal(raw, orig) {
			t.Fatal("DecodeSendParamsV1 modified its input")
		}
		if err != nil {
			checkDecodeErrorV1(t, raw, err)
			return
		}
		m := p.Message
		if m.MessageID == "" || (m.Role != a2a.RoleUser && m.Role != a2a.RoleAgent) || len(m.Parts) == 0 {
			t.Fatalf("DecodeSendParamsV1(%q) accepted %+v", raw, m)
		}
		for i, part := range m.Parts {
			switch part.Kind {
			case a2a.PartText:
			case a2a.PartData:
				if !json.Valid(part.Data) || part.Data[0] != '{' {
					t.Fatalf("part %d data = %q, want a JSON object", i, part.Data)
				}
			case a2a.PartFile:
				f := part.File
				if f == nil || (f.Bytes == "") == (f.URI == "") {
					t.Fatalf("file part %d = %+v, want exactly one of bytes and uri", i, f)
				}
				if f.Bytes != "" {
					b, derr := base64.StdEncoding.DecodeString(f.Bytes)
					if derr != nil || base64.StdEncoding.EncodeToString(b) != f.Bytes {
						t.Fatalf("file part %d bytes %q are not standard padded base64", i, f.Bytes)
					}
				}
			default:
				t.Fatalf("part %d kind %q", i, part.Kind)
			}
		}
		if p.HistoryLength != nil && *p.HistoryLength < 0 {
			t.Fatalf("negative historyLength %d accepted", *p.HistoryLength)
		}
		// 1.0 → core → 1.0 → core is stable.
		mb, merr := m.AppendJSONV1(nil)
		if merr != nil {
			t.Fatalf("accepted message does not encode: %v", merr)
		}
		again, aerr := a2a.DecodeSendParamsV1(json.RawMessage(`{"message":` + string(mb) + `}`))
		if aerr != nil {
			t.Fatalf("re-decoding %s: %v %q", mb, aerr.Code, aerr.Message)
		}
		if mb2, _ := again.Message.AppendJSONV1(nil); !bytes.Equal(mb, mb2) {
			t.Fatalf("1.0 round trip changed the message:\n%s\n%s", mb, mb2)
		}
		// The 0.3 codec accepts it and gives the same core message.
		b03, merr := m.AppendJSON(nil)
		if merr != nil {
			t.Fatalf("accepted message does not encode in 0.3: %v", merr)
		}
		via03, aerr := a2a.DecodeSendParams(json.RawMessage(`{"message":` + string(b03) + `}`))
		if aerr != nil {
			t.Fatalf("0.3 codec refuses %s: %q", b03, aerr.Message)
		}
		if mb3, _ := via03.Message.AppendJSONV1(nil); !bytes.Equal(mb, mb3) {
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
		if q, err := a2a.DecodeTaskQueryV1(raw); err != nil {
			checkDecodeErrorV1(t, raw, err)
		} else if q.ID == "" || (q.HistoryLength != nil && *q.HistoryLength < 0) {
			t.Fatalf("DecodeTaskQueryV1(%q) accepted %+v", raw, q)
		}
		if p, err := a2a.DecodeTaskIDParamsV1(raw); err != nil {
			checkDecodeErrorV1(t, raw, err)
		} else if p.ID == "" {
			t.Fatalf("DecodeTaskIDParamsV1(%q) accepted an empty id", raw)
		}
		if p, err := a2a.DecodePushCreateV1(raw); err != nil {
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
			b, _ := c.AppendJSONV1(nil)
			again, aerr := a2a.DecodePushCreateV1(b)
			if aerr != nil || !reflect.DeepEqual(again, p) {
				t.Fatalf("push config round trip of %s = %+v, %v; want %+v", b, again, aerr, p)
			}
		}
		if p, err := a2a.DecodePushRefV1(raw); err != nil {
			checkDecodeErrorV1(t, raw, err)
		} else if p.TaskID == "" || p.ConfigID == "" {
			t.Fatalf("DecodePushRefV1(%q) accepted %+v", raw, p)
		}
		if p, err := a2a.DecodePushListV1(raw); err != nil {
			checkDecodeErrorV1(t, raw, err)
		} else if p.TaskID == "" || p.PageSize < 0 {
			t.Fatalf("DecodePushListV1(%q) accepted %+v", raw, p)
		}
		if err := a2a.DecodeNoParamsV1(raw); err != nil {
			checkDecodeErrorV1(t, raw, err)
		}
	})
}

// FuzzParseVersion checks ParseVersion never panics, accepts only what
// names 0.3 or 1.0, and bounds what it echoes.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"", "0.3", "1.0", "1.0.1", " 1.0 ", "1.1", "v1.0", "1.0.", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := a2a.ParseVersion(s)
		if err != nil {
			if err.Code != a2a.CodeVersionNotSupported || len(err.Data["version"].(string)) > 32 {
				t.Fatalf("ParseVersion(%q) error = %+v", s, err)
			}
			if !json.Valid(a2a.AppendErrorV1(nil, nil, err)) {
				t.Fatalf("ParseVersion(%q): the error does not encode", s)
			}
			return
		}
		trimmed := strings.TrimSpace(s)
		if trimmed != "" && !strings.HasPrefix(trimmed, v.String()) {
			t.Fatalf("ParseVersion(%q) = %v", s, v)
		}
	})
}
