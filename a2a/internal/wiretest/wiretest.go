// Package wiretest holds what the tests of the codecs (a2a/v03, a2a/v1
// and the wire they share) need in common: checks of a -32602 error's
// problems, and builders of send params around a message.
package wiretest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

// Problems returns the problems listed in e's data.errors, failing the
// test if they are not in the documented shape.
func Problems(tb testing.TB, e *a2a.Error) []a2a.Problem {
	tb.Helper()
	list, ok := e.Data["errors"].([]any)
	if !ok {
		tb.Fatalf("error data.errors = %#v, want a list", e.Data["errors"])
	}
	if len(e.Data) != 1 {
		tb.Errorf("error data = %#v, want only errors", e.Data)
	}
	out := make([]a2a.Problem, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok || len(m) != 2 {
			tb.Fatalf("data.errors entry = %#v, want {path, message}", item)
		}
		path, _ := m["path"].(string)
		msg, _ := m["message"].(string)
		out = append(out, a2a.Problem{Path: path, Message: msg})
	}
	return out
}

// CheckInvalidParams checks e is -32602 listing want, in order, with the
// message naming the first problem and counting the others.
func CheckInvalidParams(tb testing.TB, e *a2a.Error, want ...a2a.Problem) {
	tb.Helper()
	if e == nil {
		tb.Fatalf("error = nil, want -32602 with %v", want)
	}
	if e.Code != a2a.CodeInvalidParams {
		tb.Errorf("error code = %d, want -32602", e.Code)
	}
	wantMsg := "Invalid parameters: " + want[0].Path + ": " + want[0].Message
	switch n := len(want) - 1; {
	case n == 1:
		wantMsg += " (and 1 more problem)"
	case n > 1:
		wantMsg += fmt.Sprintf(" (and %d more problems)", n)
	}
	if e.Message != wantMsg {
		tb.Errorf("error message = %q, want %q", e.Message, wantMsg)
	}
	if got := Problems(tb, e); !reflect.DeepEqual(got, want) {
		tb.Errorf("problems = %+v\nwant %+v", got, want)
	}
}

// Refusals are params a decoder must refuse ("" means no params at all),
// each with the problems it must name, in order. (A slice of an unnamed
// struct, so that the cases can be written without field names.)
type Refusals = []struct {
	Params string
	Want   []a2a.Problem
}

// NamedRefusals are Refusals with a name for each subtest.
type NamedRefusals = []struct {
	Name   string
	Params string
	Want   []a2a.Problem
}

// CheckRefusals decodes each case's params in a subtest named for them
// and checks the error with CheckInvalidParams.
func CheckRefusals[T any](t *testing.T, decode func(json.RawMessage) (T, *a2a.Error), cases Refusals) {
	t.Helper()
	named := make(NamedRefusals, len(cases))
	for i, tc := range cases {
		named[i].Name, named[i].Params, named[i].Want = tc.Params, tc.Params, tc.Want
	}
	CheckNamedRefusals(t, decode, named)
}

// CheckNamedRefusals is CheckRefusals with the subtests named by the cases.
func CheckNamedRefusals[T any](t *testing.T, decode func(json.RawMessage) (T, *a2a.Error), cases NamedRefusals) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := decode(RawOrNil(tc.Params))
			CheckInvalidParams(t, err, tc.Want...)
		})
	}
}

// Prob is a problem.
func Prob(path, msg string) a2a.Problem { return a2a.Problem{Path: path, Message: msg} }

// SendParams03 builds message/send params around a 0.3 message whose
// fields are given as JSON fragments; a fragment of "" leaves the field
// out. rest, when not empty, holds the params' other members.
func SendParams03(fields map[string]string, rest string) string {
	return sendParams(map[string]string{
		"kind":      `"message"`,
		"messageId": `"m1"`,
		"role":      `"user"`,
		"parts":     `[{"kind":"text","text":"hi"}]`,
	}, []string{"kind", "messageId", "role", "parts", "contextId", "taskId", "metadata"}, fields, rest)
}

// SendParams10 is SendParams03 for SendMessage, around a 1.0 message.
func SendParams10(fields map[string]string, rest string) string {
	return sendParams(map[string]string{
		"messageId": `"m1"`,
		"role":      `"ROLE_USER"`,
		"parts":     `[{"text":"hi"}]`,
	}, []string{"messageId", "contextId", "taskId", "role", "parts", "metadata", "extensions", "referenceTaskIds"}, fields, rest)
}

// sendParams writes the message's members in order: base, with fields
// over it.
func sendParams(base map[string]string, order []string, fields map[string]string, rest string) string {
	for k, v := range fields {
		base[k] = v
	}
	var b strings.Builder
	b.WriteString(`{"message":{`)
	first := true
	for _, k := range order {
		v, ok := base[k]
		if !ok || v == "" {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%q:%s", k, v)
	}
	b.WriteString("}")
	if rest != "" {
		b.WriteString("," + rest)
	}
	b.WriteString("}")
	return b.String()
}

// IntP returns a pointer to n.
func IntP(n int) *int { return &n }

// TimeP returns a pointer to the time s, RFC 3339.
func TimeP(tb testing.TB, s string) *time.Time {
	tb.Helper()
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		tb.Fatal(err)
	}
	return &t
}

// TimeProblem is the problem of a timestamp that is not RFC 3339.
const TimeProblem = `must be an RFC 3339 timestamp such as "2026-01-02T15:04:05Z"`

// CheckListParams checks decode reads params as want.
func CheckListParams(tb testing.TB, name string, decode func(json.RawMessage) (a2a.ListTasksParams, *a2a.Error), params string, want a2a.ListTasksParams) {
	tb.Helper()
	got, err := decode(json.RawMessage(params))
	if err != nil {
		tb.Errorf("%s(%s): %v", name, params, err)
	} else if !listParamsEqual(got, want) {
		tb.Errorf("%s(%s) = %+v, want %+v", name, params, got, want)
	}
}

// listParamsEqual reports whether a and b are the same list params,
// their timestamps compared as instants.
func listParamsEqual(a, b a2a.ListTasksParams) bool {
	ta, tb := a.StatusTimestampAfter, b.StatusTimestampAfter
	a.StatusTimestampAfter, b.StatusTimestampAfter = nil, nil
	if (ta == nil) != (tb == nil) || (ta != nil && !ta.Equal(*tb)) {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// CheckAccepted checks what a decoder of send params accepted meets the
// core rules: a message id, a role, parts of the three kinds (data a JSON
// object, a file exactly one of bytes, standard padded base64, and uri),
// no negative history length, and no id or metadata key past its cap
// (a2a.MaxIDBytes, a2a.MaxMetadataKeyBytes).
func CheckAccepted(tb testing.TB, decoder string, raw []byte, p a2a.SendParams) {
	tb.Helper()
	m := p.Message
	if m.MessageID == "" || (m.Role != a2a.RoleUser && m.Role != a2a.RoleAgent) || len(m.Parts) == 0 {
		tb.Fatalf("%s(%q) accepted %+v", decoder, raw, m)
	}
	for i, part := range m.Parts {
		switch part.Kind {
		case a2a.PartText:
		case a2a.PartData:
			if !json.Valid(part.Data) || part.Data[0] != '{' {
				tb.Fatalf("part %d data = %q, want a JSON object", i, part.Data)
			}
		case a2a.PartFile:
			f := part.File
			if f == nil || (f.Bytes == "") == (f.URI == "") {
				tb.Fatalf("file part %d = %+v, want exactly one of bytes and uri", i, f)
			}
			if f.Bytes != "" {
				b, derr := base64.StdEncoding.DecodeString(f.Bytes)
				if derr != nil || base64.StdEncoding.EncodeToString(b) != f.Bytes {
					tb.Fatalf("file part %d bytes %q are not standard padded base64", i, f.Bytes)
				}
			}
		default:
			tb.Fatalf("part %d kind %q", i, part.Kind)
		}
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		tb.Fatalf("negative historyLength %d accepted", *p.HistoryLength)
	}
	// Every id a caller chooses, and every metadata key, within its cap.
	ids := append([]string{m.MessageID, m.ContextID, m.TaskID}, m.ReferenceTaskIDs...)
	if p.PushConfig != nil {
		ids = append(ids, p.PushConfig.ID)
	}
	for _, id := range ids {
		if len(id) > a2a.MaxIDBytes {
			tb.Fatalf("%s(%q) accepted an id of %d bytes", decoder, raw, len(id))
		}
	}
	metas := []map[string]any{m.Metadata, p.Metadata}
	for _, part := range m.Parts {
		metas = append(metas, part.Metadata)
	}
	for _, meta := range metas {
		for k := range meta {
			if len(k) > a2a.MaxMetadataKeyBytes {
				tb.Fatalf("%s(%q) accepted a metadata key of %d bytes", decoder, raw, len(k))
			}
		}
	}
}

// BenchDecodeSend benchmarks what every message costs to read: the
// JSON-RPC envelope of body, then its params by decode.
func BenchDecodeSend(b *testing.B, body []byte, decode func(json.RawMessage) (a2a.SendParams, *a2a.Error)) {
	b.ReportAllocs()
	for b.Loop() {
		req, err := a2a.ParseRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := decode(req.Params); err != nil {
			b.Fatal(err)
		}
	}
}

// CheckRoundTrip checks m, a message a decoder accepted, encodes, and that
// its encoding decodes to a message that encodes the same; it returns the
// encoding.
func CheckRoundTrip(tb testing.TB, m *a2a.Message, encode func([]byte, *a2a.Message) ([]byte, error), decode func(json.RawMessage) (a2a.SendParams, *a2a.Error)) []byte {
	tb.Helper()
	mb, err := encode(nil, m)
	if err != nil {
		tb.Fatalf("accepted message does not encode: %v", err)
	}
	again, aerr := decode(json.RawMessage(`{"message":` + string(mb) + `}`))
	if aerr != nil {
		tb.Fatalf("re-decoding %s: %v %q", mb, aerr.Code, aerr.Message)
	}
	if mb2, _ := encode(nil, &again.Message); !bytes.Equal(mb, mb2) {
		tb.Fatalf("round trip changed the message:\n%s\n%s", mb, mb2)
	}
	return mb
}

// RawOrNil returns s as params, or nil (no params at all) for "".
func RawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// BenchTask is the completed echo task the encoder benchmarks write: its
// history is the message of body, a request read by decode.
func BenchTask(tb testing.TB, body []byte, decode func(json.RawMessage) (a2a.SendParams, *a2a.Error)) a2a.Task {
	tb.Helper()
	req, rerr := a2a.ParseRequest(body)
	if rerr != nil {
		tb.Fatal(rerr)
	}
	p, err := decode(req.Params)
	if err != nil {
		tb.Fatal(err)
	}
	return a2a.Task{
		ID: "0196f3a2-7b1c-7d2e-8f3a-4b5c6d7e8f90", ContextID: "0196f3a2-7b1c-7d2e-8f3a-4b5c6d7e8f91",
		Status:    a2a.TaskStatus{State: a2a.StateCompleted, Timestamp: "2026-11-22T15:00:00.000Z"},
		History:   []a2a.Message{p.Message},
		Artifacts: []a2a.Artifact{{ArtifactID: "a", Name: "demo::echo", Parts: []a2a.Part{a2a.DataPart([]byte(`{"message":"hello"}`))}}},
	}
}

// BenchEncodeTask benchmarks the encoding of BenchTask's task by encode,
// as every response and store write does it.
func BenchEncodeTask(b *testing.B, body []byte, decode func(json.RawMessage) (a2a.SendParams, *a2a.Error), encode func([]byte, *a2a.Task) ([]byte, error)) {
	task := BenchTask(b, body, decode)
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = encode(buf[:0], &task); err != nil {
			b.Fatal(err)
		}
	}
}
