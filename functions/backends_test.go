package functions_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/functions"
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
			res, err := functions.ParseResult([]byte(tt.body))
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
