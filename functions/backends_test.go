package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/functions"
	"github.com/rs/zerolog"
)

// MustCallError returns err as a *functions.CallError, failing the test if
// it is not one.
func MustCallError(tb testing.TB, err error) *functions.CallError {
	tb.Helper()
	var ce *functions.CallError
	if !errors.As(err, &ce) {
		tb.Fatalf("error = %v (%T), want a *functions.CallError", err, err)
	}
	return ce
}

// AssertReason checks that err is a *functions.CallError with the reason.
func AssertReason(tb testing.TB, err error, want string) *functions.CallError {
	tb.Helper()
	if err == nil {
		tb.Fatalf("error = nil, want reason %q", want)
	}
	ce := MustCallError(tb, err)
	if ce.Reason != want {
		tb.Fatalf("Reason = %q, want %q (error: %v)", ce.Reason, want, err)
	}
	return ce
}

// AssertOutput checks that res is the output want and asks for nothing.
func AssertOutput(tb testing.TB, res functions.Result, err error, want string) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("Invoke: %v", err)
	}
	if res.InputRequired != "" {
		tb.Fatalf("InputRequired = %q, want none", res.InputRequired)
	}
	if string(res.Output) != want {
		tb.Fatalf("Output = %s, want %s", res.Output, want)
	}
}

func TestParseResult(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	tests := []struct {
		name     string
		body     string
		output   string
		question string
		reason   string
	}{
		{name: "object", body: " {\"a\": [1, 2],\n \"b\": \"x\"}\n", output: `{"a":[1,2],"b":"x"}`},
		{name: "array", body: `[1, 2]`, output: `[1,2]`},
		{name: "string", body: `"hi"`, output: `"hi"`},
		{name: "number", body: "42\n", output: `42`},
		{name: "null", body: `null`, output: `null`},
		{name: "empty", body: ``, reason: "function returned invalid JSON"},
		{name: "space", body: " \n", reason: "function returned invalid JSON"},
		{name: "text", body: `ok`, reason: "function returned invalid JSON"},
		{name: "two values", body: `{} {}`, reason: "function returned invalid JSON"},
		{name: "truncated", body: `{"a":`, reason: "function returned invalid JSON"},
		{name: "input required", body: `{"a2a.input_required": {"question": "Which city?"}}`, question: "Which city?"},
		{name: "input required extra key", body: `{"a2a.input_required": {"question": "Which city?", "hint": "x"}}`, question: "Which city?"},
		{name: "input required empty", body: `{"a2a.input_required": {"question": ""}}`, reason: "function returned a malformed input_required signal"},
		{name: "input required blank", body: `{"a2a.input_required": {"question": " \n"}}`, reason: "function returned a malformed input_required signal"},
		{name: "input required missing", body: `{"a2a.input_required": {}}`, reason: "function returned a malformed input_required signal"},
		{name: "input required number", body: `{"a2a.input_required": {"question": 7}}`, reason: "function returned a malformed input_required signal"},
		{name: "input required string", body: `{"a2a.input_required": "Which city?"}`, reason: "function returned a malformed input_required signal"},
		{name: "input required null", body: `{"a2a.input_required": null}`, reason: "function returned a malformed input_required signal"},
		{name: "input required with output", body: `{"a2a.input_required": {"question": "q"}, "x": 1}`, output: `{"a2a.input_required":{"question":"q"},"x":1}`},
		{name: "error", body: `{"a2a.error": "no such city"}`, reason: "function reported an error: no such city"},
		{name: "error control", body: `{"a2a.error": "bad\u0000 city\n\tline\u001b[31m"}`, reason: "function reported an error: bad city  line[31m"},
		{name: "error long", body: `{"a2a.error": "` + long + `"}`, reason: "function reported an error: " + strings.Repeat("é", 256)},
		{name: "error empty", body: `{"a2a.error": ""}`, reason: "function reported an error"},
		{name: "error not string", body: `{"a2a.error": {"code": 1}}`, reason: "function returned a malformed error signal"},
		{name: "error with output", body: `{"a2a.error": "x", "y": 2}`, output: `{"a2a.error":"x","y":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := functions.ParseResult(context.Background(), []byte(tt.body))
			switch {
			case tt.reason != "":
				AssertReason(t, err, tt.reason)
			case tt.question != "":
				if err != nil {
					t.Fatalf("ParseResult(%q): %v", tt.body, err)
				}
				if res.InputRequired != tt.question || res.Output != nil {
					t.Fatalf("ParseResult(%q) = %+v, want question %q", tt.body, res, tt.question)
				}
			default:
				AssertOutput(t, res, err, tt.output)
			}
		})
	}
}

// TestInvalidJSONLogged: a result that is not JSON fails the call with the
// offset of the syntax error, and only the debug log shows an excerpt of
// it, so that its author can see what the function wrote.
func TestInvalidJSONLogged(t *testing.T) {
	const body = "hello not json\n"
	backends := map[string]functions.Backend{
		"exec": ShBackend(t, "print.sh", body),
		"http": &functions.HTTPBackend{URL: MustServe(t, Reply(http.StatusOK, "application/json", body)).URL},
	}
	for name, b := range backends {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			ctx := zerolog.New(&buf).Level(zerolog.DebugLevel).WithContext(context.Background())
			_, err := b.Invoke(ctx, json.RawMessage(`{"secret":"input-s3cret"}`))
			ce := AssertReason(t, err, "function returned invalid JSON")
			if got, want := ce.Err.Error(), "syntax error at byte offset 1 of 15"; got != want {
				t.Errorf("Err = %q, want %q", got, want)
			}
			want := `{"level":"debug","output_bytes":15,"error_offset":1,` +
				`"json_error":"invalid character 'h' looking for beginning of value",` +
				`"output_excerpt":"hello not json\\n","message":"function returned invalid JSON"}` + "\n"
			if got := buf.String(); got != want {
				t.Errorf("debug log = %s\nwant %s", got, want)
			}

			buf.Reset()
			ctx = zerolog.New(&buf).Level(zerolog.InfoLevel).WithContext(context.Background())
			_, err = b.Invoke(ctx, json.RawMessage(`{}`))
			AssertReason(t, err, "function returned invalid JSON")
			if got := buf.String(); strings.Contains(got, "hello") {
				t.Errorf("info log %q holds the output", got)
			}
		})
	}
}

// TestInvalidJSONExcerptBounded: the excerpt is the first 256 bytes,
// escaped.
func TestInvalidJSONExcerptBounded(t *testing.T) {
	var buf bytes.Buffer
	ctx := zerolog.New(&buf).Level(zerolog.DebugLevel).WithContext(context.Background())
	body := `{"a": "` + strings.Repeat("\x01", 300) + `"}`
	_, err := functions.ParseResult(ctx, []byte(body))
	ce := AssertReason(t, err, "function returned invalid JSON")
	if got, want := ce.Err.Error(), "syntax error at byte offset 8 of 309"; got != want {
		t.Errorf("Err = %q, want %q", got, want)
	}
	var entry struct {
		Excerpt string `json:"output_excerpt"`
	}
	if err := json.Unmarshal(buf.Bytes(), &entry); err != nil {
		t.Fatal(err)
	}
	if want := strconv.Quote(body[:256]); `"`+entry.Excerpt+`"` != want {
		t.Errorf("excerpt = %s, want %s", entry.Excerpt, want)
	}
}
