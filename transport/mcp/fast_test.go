package mcp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport/mcp"
)

// echoOutcomes answers a send by its input's message: "fail" fails,
// "busy" is refused, a number fails the schema, "wait" waits for input,
// "html" answers text that JSON may escape, "file" an image and data;
// any other completes with the input as data. The key "reused" names a
// call with other arguments.
func echoOutcomes(p a2a.SendParams) (*a2a.Task, error) {
	if p.Message.MessageID == "mcp:reused" {
		return nil, tasks.ErrMessageIDReused
	}
	var in struct {
		Input struct {
			Message any `json:"message"`
		} `json:"input"`
	}
	_ = json.Unmarshal(p.Message.Parts[0].Data, &in)
	done := a2a.TaskStatus{State: a2a.StateCompleted}
	switch m := in.Input.Message.(type) {
	case float64:
		return nil, &tasks.InputError{Skill: "demo::echo", Problems: []a2a.Problem{{Path: "/message", Message: "got number, want string"}}}
	case string:
		switch m {
		case "fail":
			return &a2a.Task{ID: "t-fail", Status: a2a.TaskStatus{State: a2a.StateFailed,
				Message: &a2a.Message{Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("backend said no")}}}}, nil
		case "busy":
			return nil, tasks.ErrCallerBusy
		case "wait":
			return &a2a.Task{ID: "t-wait", Status: a2a.TaskStatus{State: a2a.StateInputRequired,
				Message: &a2a.Message{Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("Approve?")}}}}, nil
		case "html":
			return &a2a.Task{ID: "t-html", Status: done, Artifacts: []a2a.Artifact{{ArtifactID: "a",
				Parts: []a2a.Part{a2a.TextPart("<b>&amp;</b> \u2028 é")}}}}, nil
		case "file":
			return &a2a.Task{ID: "t-file", Status: done, Artifacts: []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{
				{Kind: a2a.PartFile, File: &a2a.FileContent{MimeType: "image/png", Bytes: "iVBORw0KGgo="}},
				a2a.DataPart(json.RawMessage(`{"ok":true}`))}}}}, nil
		case "spaced", "spaced html":
			data := " { \"a\" : [1, 2.50, \"x\\ty\u00e9\"] ,\n\"b\":{ } } "
			if m == "spaced html" {
				data = strings.Replace(data, "x", "<x>&\u2028\\u2029", 1)
			}
			return &a2a.Task{ID: "t-" + m, Status: done, Artifacts: []a2a.Artifact{{ArtifactID: "a",
				Parts: []a2a.Part{a2a.TextPart("\x01\x7f\xff\b\f\"\\"), a2a.DataPart(json.RawMessage(data))}}}}, nil
		}
	}
	return &a2a.Task{ID: "t-echo", Status: done, Artifacts: []a2a.Artifact{{ArtifactID: "a",
		Parts: []a2a.Part{a2a.DataPart(p.Message.Parts[0].Data)}}}}, nil
}

// TestFastPathSameAnswers sends each request to a server with the fast
// path and to one without (the SDK alone): the status, the headers, the
// body and the audit record are the same, byte for byte.
func TestFastPathSameAnswers(t *testing.T) {
	fast := newFixture(t, nil)
	slow := newFixtureWith(t, nil, func(c *mcp.Config) { c.SDKOnly = true })
	fast.fake.SendFn, slow.fake.SendFn = echoOutcomes, echoOutcomes
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params + `}`
	}
	list := func(params string) string {
		return `{"jsonrpc":"2.0","id":"l","method":"tools/list","params":` + params + `}`
	}
	// toSDK are the requests the fast path leaves to the SDK.
	toSDK := map[string]bool{
		"other meta":           true,
		"progress":             true,
		"name a number":        true,
		"params null":          true,
		"params an array":      true,
		"params missing":       true,
		"null id":              true,
		"no id":                true,
		"jsonrpc 1.0":          true,
		"no jsonrpc":           true,
		"trailing bytes":       true,
		"batch":                true,
		"list meta":            true,
		"list cursor a number": true,
		"2026-07-28":           true,
		"no version":           true,
		"JSON alone accepted":  true,
		"charset":              true,
		"text/plain":           true,
		"Last-Event-ID":        true,
	}
	for _, tc := range append([]sameCase{
		{"echo", "partner-key", call(`{"name":"demo.echo","arguments":{"message":"hi"}}`), nil},
		{"html text", "partner-key", call(`{"name":"demo.echo","arguments":{"message":"html"}}`), nil},
		{"spaced data", "partner-key", call(`{"name":"demo.echo","arguments":{"message":"spaced"}}`), nil},
		{"spaced html data", "partner-key", call(`{"name":"demo.echo","arguments":{"message":"spaced html"}}`), nil},
		{"html arguments", "partner-key", call(`{"name":"demo.echo","arguments":{"message":"<i>&\u2028</i>"}}`), nil},
		{"escaped string id", "partner-key", `{"jsonrpc":"2.0","id":"q\"\u2028\u00e9","method":"tools/call","params":{"name":"demo.echo"}}`, nil},
		{"image and data", "partner-key", call(`{"name":"demo.echo","arguments":{"message":"file"}}`), nil},
		{"function failed", "partner-key", call(`{"name":"demo.echo","arguments":{"message":"fail"}}`), nil},
		{"input required", "partner-key", call(`{"name":"demo.echo","arguments":{"message":"wait"}}`), nil},
		{"caller busy", "partner-key", call(`{"name":"demo.echo","arguments":{"message":"busy"}}`), nil},
		{"schema", "partner-key", call(`{"name":"demo.echo","arguments":{"message":1}}`), nil},
		{"hidden tool", "partner-key", call(`{"name":"pricing.quote","arguments":{}}`), nil},
		{"unknown tool", "partner-key", call(`{"name":"no.such","arguments":{}}`), nil},
		{"long name", "partner-key", call(`{"name":"` + strings.Repeat("x", 300) + `"}`), nil},
		{"no arguments", "partner-key", call(`{"name":"demo.echo"}`), nil},
		{"null arguments", "partner-key", call(`{"name":"demo.echo","arguments":null}`), nil},
		{"array arguments", "partner-key", call(`{"name":"demo.echo","arguments":[1]}`), nil},
		{"string arguments", "partner-key", call(`{"name":"demo.echo","arguments":"x"}`), nil},
		{"key", "partner-key", call(`{"name":"demo.echo","_meta":{"io.a2ad/idempotency-key":"k1"}}`), nil},
		{"key reused", "partner-key", call(`{"name":"demo.echo","_meta":{"io.a2ad/idempotency-key":"reused"}}`), nil},
		{"bad key", "partner-key", call(`{"name":"demo.echo","_meta":{"io.a2ad/idempotency-key":7}}`), nil},
		{"empty key", "partner-key", call(`{"name":"demo.echo","_meta":{"io.a2ad/idempotency-key":""}}`), nil},
		{"other meta", "partner-key", call(`{"name":"demo.echo","_meta":{"x":1}}`), nil},
		{"progress", "partner-key", call(`{"name":"demo.echo","_meta":{"progressToken":"p"}}`), nil},
		{"name a number", "partner-key", call(`{"name":7}`), nil},
		{"name in capitals", "partner-key", call(`{"Name":"demo.echo"}`), nil},
		{"unknown field", "partner-key", call(`{"name":"demo.echo","extra":[1,2]}`), nil},
		{"params null", "partner-key", call(`null`), nil},
		{"params an array", "partner-key", call(`[]`), nil},
		{"params missing", "partner-key", `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, nil},
		{"string id", "partner-key", `{"jsonrpc":"2.0","id":"a<b","method":"tools/call","params":{"name":"demo.echo"}}`, nil},
		{"null id", "partner-key", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"demo.echo"}}`, nil},
		{"no id", "partner-key", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"demo.echo"}}`, nil},
		{"float id", "partner-key", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"demo.echo"}}`, nil},
		{"jsonrpc 1.0", "partner-key", `{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"demo.echo"}}`, nil},
		{"no jsonrpc", "partner-key", `{"id":7,"method":"tools/call","params":{"name":"demo.echo"}}`, nil},
		{"spaces first", "partner-key", " \n" + call(`{"name":"demo.echo"}`), nil},
		{"trailing bytes", "partner-key", call(`{"name":"demo.echo"}`) + ` {}`, nil},
		{"batch", "partner-key", `[` + call(`{"name":"demo.echo"}`) + `]`, nil},
		{"list", "partner-key", list(`{}`), nil},
		{"list internal", "internal-key", list(`{}`), nil},
		{"list no params", "partner-key", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil},
		{"list null params", "partner-key", list(`null`), nil},
		{"list bad cursor", "partner-key", list(`{"cursor":"nope"}`), nil},
		{"list cursor", "partner-key", list(`{"cursor":"ZGVtby5lY2hv"}`), nil},
		{"list meta", "partner-key", list(`{"_meta":{"progressToken":1}}`), nil},
		{"list cursor a number", "partner-key", list(`{"cursor":1}`), nil},
		{"2025-06-18", "partner-key", call(`{"name":"demo.echo"}`), []string{"Mcp-Protocol-Version", "2025-06-18"}},
		{"2024-11-05", "partner-key", call(`{"name":"demo.echo"}`), []string{"Mcp-Protocol-Version", "2024-11-05"}},
		{"2026-07-28", "partner-key", call(`{"name":"demo.echo"}`), []string{"Mcp-Protocol-Version", "2026-07-28"}},
		{"no version", "partner-key", call(`{"name":"demo.echo"}`), []string{"Mcp-Protocol-Version", ""}},
		{"JSON alone accepted", "partner-key", call(`{"name":"demo.echo"}`), []string{"Accept", "application/json"}},
		{"any accepted", "partner-key", call(`{"name":"demo.echo"}`), []string{"Accept", "*/*"}},
		{"charset", "partner-key", call(`{"name":"demo.echo"}`), []string{"Content-Type", "application/json; charset=utf-8"}},
		{"text/plain", "partner-key", call(`{"name":"demo.echo"}`), []string{"Content-Type", "text/plain"}},
		{"Last-Event-ID", "partner-key", call(`{"name":"demo.echo"}`), []string{"Last-Event-ID", "x_1"}},
	}, modernCases()...) {
		before := mcp.FastAnswers(fast.h)
		fs, fh, fb := fast.post(t, tc.key, tc.body, tc.hdr...)
		if got, want := mcp.FastAnswers(fast.h)-before == 1, !toSDK[tc.name] && !modernToSDK[tc.name]; got != want && !modernEither[tc.name] {
			t.Errorf("%s: answered by the fast path: %v, want %v", tc.name, got, want)
		}
		ss, sh, sb := slow.post(t, tc.key, tc.body, tc.hdr...)
		if fs != ss || string(fb) != string(sb) {
			t.Errorf("%s: fast path HTTP %d %s\nSDK HTTP %d %s", tc.name, fs, fb, ss, sb)
		}
		if diff := cmp.Diff(answerHeaders(sh), answerHeaders(fh)); diff != "" {
			t.Errorf("%s: headers (-SDK +fast):\n%s", tc.name, diff)
		}
	}
	// JSON's corners, whichever path answers them.
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"na\u006de":"demo.echo"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","name":"pricing.quote"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo"},"params":{"name":"no.such"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"demo.echo"}}`,
		`{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{"name":"demo.echo"}}`,
		`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"demo.echo"}}`,
		`{"jsonrpc":"2.0","id":99999999999999999999,"method":"tools/call","params":{"name":"demo.echo"}}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"demo.echo"}}`,
		`{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"demo.echo"}}`,
		`{"jsonrpc":"2.0","id":"\ud800","method":"tools/call","params":{"name":"demo.echo"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"tools/call\",\"params\":{\"name\":\"demo.\xffecho\"}}",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"\u0000<>&"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","arguments":{"a":1,"a":2}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":1.0e400}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"hi"},}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","_meta":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","_meta":[]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","inputResponses":{"k":{}},"requestState":"s"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","arguments":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"` + strings.Repeat("{", 1200) + `"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"Cursor":"ZGVtby5lY2hv"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"x"}`,
	} {
		fs, fh, fb := fast.post(t, "partner-key", body)
		ss, sh, sb := slow.post(t, "partner-key", body)
		if fs != ss || string(fb) != string(sb) || !cmp.Equal(answerHeaders(sh), answerHeaders(fh)) {
			t.Errorf("%q: fast path HTTP %d %s\nSDK HTTP %d %s", body, fs, fb, ss, sb)
		}
	}
	if diff := cmp.Diff(auditRecords(t, slow.audit.String()), auditRecords(t, fast.audit.String())); diff != "" {
		t.Errorf("audit records (-SDK +fast):\n%s", diff)
	}
}

// sameCase is a request TestFastPathSameAnswers sends to both paths: as
// the caller of key, body, with the headers hdr (name, value, ...) set
// over the usual ones.
type sameCase struct {
	name, key, body string
	hdr             []string
}

// answerHeaders are an answer's headers but those of the moment.
func answerHeaders(h http.Header) http.Header {
	h = h.Clone()
	h.Del("Date")
	h.Del("X-Request-Id")
	return h
}

// auditRecords are the audit records in log, without their times and
// request ids.
func auditRecords(tb testing.TB, log string) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for line := range strings.Lines(log) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			tb.Fatalf("audit record %q: %v", line, err)
		}
		for _, k := range []string{"time", "duration_ms", "request_id"} {
			delete(rec, k)
		}
		out = append(out, rec)
	}
	return out
}

// BenchmarkToolsCall serves a2abench's tools/call of demo.echo, on the
// fast path and through the SDK alone, with a fake task service: the
// binding's own cost a call; in revision 2025-11-25, and in 2026-07-28
// as the Go SDK's client sends it (its _meta triple, Mcp-Method and
// Mcp-Name).
func BenchmarkToolsCall(b *testing.B) {
	old := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"hello"}}}`
	modern := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"hello"},` +
		triple(`"io.modelcontextprotocol/clientInfo":{"name":"a2abench","version":"v0.0.1"}`) + `}}`
	for _, bc := range []struct {
		name, body string
		sdkOnly    bool
		hdr        []string
	}{
		{"fast", old, false, []string{"Mcp-Protocol-Version", "2025-11-25"}},
		{"sdk", old, true, []string{"Mcp-Protocol-Version", "2025-11-25"}},
		{"fast26", modern, false, modern26("tools/call", "demo.echo")},
		{"sdk26", modern, true, modern26("tools/call", "demo.echo")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFixtureWith(b, nil, func(c *mcp.Config) { c.SDKOnly = bc.sdkOnly })
			f.fake.SendFn = echoOutcomes
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(bc.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("X-API-Key", "partner-key")
				for i := 0; i+1 < len(bc.hdr); i += 2 {
					req.Header.Set(bc.hdr[i], bc.hdr[i+1])
				}
				rec := httptest.NewRecorder()
				f.h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"t-echo"`) {
					b.Fatalf("HTTP %d %s", rec.Code, rec.Body)
				}
			}
			if fast := mcp.FastAnswers(f.h) > 0; fast == bc.sdkOnly {
				b.Fatalf("answered by the fast path: %v, want %v", fast, !bc.sdkOnly)
			}
		})
	}
}
