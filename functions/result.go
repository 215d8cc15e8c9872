package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxErrorMessageBytes caps the message of an a2a.error signal (and of the
// fail builtin) once it becomes part of a Reason.
const maxErrorMessageBytes = 512

// reasonInvalidJSON is the Reason for a result that is not one JSON value.
const reasonInvalidJSON = "function returned invalid JSON"

// parseResult applies the backend contract to the body an http or exec
// backend returned. The body must be exactly one JSON value. A JSON object
// whose only key is KeyInputRequired, with the value {"question": "..."},
// asks for input; one whose only key is KeyError, with a string value,
// reports a failure. Anything else is the output, compacted.
//
// It returns a *CallError if the body is not one JSON value, if a signal is
// malformed, or if the function reported an error.
func parseResult(body []byte) (Result, error) {
	if !json.Valid(body) {
		return Result{}, &CallError{Reason: reasonInvalidJSON}
	}
	body = bytes.TrimSpace(body)
	if body[0] == '{' {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err == nil && len(obj) == 1 {
			if v, ok := obj[KeyInputRequired]; ok {
				return parseInputRequired(v)
			}
			if v, ok := obj[KeyError]; ok {
				var msg string
				if err := json.Unmarshal(v, &msg); err != nil {
					return Result{}, &CallError{Reason: "function returned a malformed error signal", Err: err}
				}
				return Result{}, reportedError(msg)
			}
		}
	}
	var out bytes.Buffer
	if err := json.Compact(&out, body); err != nil {
		// Unreachable: the body is valid JSON.
		return Result{}, &CallError{Reason: reasonInvalidJSON, Err: err}
	}
	return Result{Output: out.Bytes()}, nil
}

// parseInputRequired decodes the value of an input_required signal.
func parseInputRequired(v json.RawMessage) (Result, error) {
	var sig struct {
		Question *string `json:"question"`
	}
	if err := json.Unmarshal(v, &sig); err != nil {
		return Result{}, &CallError{Reason: "function returned a malformed input_required signal", Err: err}
	}
	if sig.Question == nil || strings.TrimSpace(*sig.Question) == "" {
		return Result{}, &CallError{
			Reason: "function returned a malformed input_required signal",
			Err:    errors.New("question must be a non-empty string"),
		}
	}
	return Result{InputRequired: *sig.Question}, nil
}

// reportedError is the CallError for a failure the function itself
// reported with msg, which is meant for the caller: it is stripped of
// control characters and truncated.
func reportedError(msg string) *CallError {
	msg = sanitizeMessage(msg, maxErrorMessageBytes)
	if msg == "" {
		return &CallError{Reason: "function reported an error"}
	}
	return &CallError{Reason: "function reported an error: " + msg}
}

// sanitizeMessage replaces tabs and line breaks with spaces, drops other
// control characters and invalid UTF-8, trims surrounding space and cuts
// the result to at most max bytes on a character boundary.
func sanitizeMessage(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			continue
		case r == '\t' || r == '\n' || r == '\r':
			r = ' '
		case unicode.IsControl(r):
			continue
		}
		if b.Len()+utf8.RuneLen(r) > max {
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}

// truncateUTF8 cuts s to at most max bytes without splitting a character.
func truncateUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// contextError is the CallError for a call stopped because ctx is done:
// "call timed out" when its deadline passed, "call canceled" otherwise.
// Err is the context's cause.
func contextError(ctx context.Context) *CallError {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &CallError{Reason: "call timed out", Err: context.Cause(ctx)}
	}
	return &CallError{Reason: "call canceled", Err: context.Cause(ctx)}
}
