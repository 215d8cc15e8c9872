package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rs/zerolog"
)

// maxErrorMessageBytes caps the message of an a2a.error signal (and of the
// fail builtin) once it becomes part of a Reason.
const maxErrorMessageBytes = 512

// reasonInvalidJSON is the Reason for a result that is not one JSON value.
const reasonInvalidJSON = "function returned invalid JSON"

// maxExcerptBytes caps the excerpt of an invalid result that is logged at
// debug level.
const maxExcerptBytes = 256

// The log keys of an invalid result, at debug level.
const (
	logKeyOutputBytes   = "output_bytes"
	logKeyOutputExcerpt = "output_excerpt"
	logKeyErrorOffset   = "error_offset"
	logKeyJSONError     = "json_error"
)

// parseResult applies the backend contract to the body an http or exec
// backend returned. The body must be exactly one JSON value. A JSON object
// whose only key is KeyInputRequired, with the value {"question": "..."},
// asks for input; one whose only key is KeyError, with a string value,
// reports a failure. Anything else is the output, compacted in place: the
// output shares body's memory, and body must not be used afterwards.
//
// It returns a *CallError if the body is not one JSON value, if a signal is
// malformed, or if the function reported an error. For a body that is not
// JSON, its Err gives the byte offset of the syntax error, and the log of
// ctx gets, at debug level only (outputs may be private), an excerpt of the
// body: what a function author needs to see what went wrong.
func parseResult(ctx context.Context, body []byte) (Result, error) {
	if !json.Valid(body) {
		return Result{}, invalidJSON(ctx, body)
	}
	body = bytes.TrimSpace(body)
	if mayBeSignal(body) {
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
	return Result{Output: compactInPlace(body)}, nil
}

// invalidJSON is the CallError for body, which is not one JSON value; it
// logs an excerpt of body at debug level on the log of ctx.
func invalidJSON(ctx context.Context, body []byte) *CallError {
	var v json.RawMessage
	err := json.Unmarshal(body, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		// Unreachable: json.Valid said no.
		return &CallError{Reason: reasonInvalidJSON, Err: err}
	}
	// The syntax error's text quotes a byte of the body: it stays at
	// debug level with the excerpt. The excerpt is escaped as Go escapes
	// a string (without the quotes), so that every byte shows, control
	// characters and invalid UTF-8 included.
	excerpt := strconv.Quote(string(body[:min(len(body), maxExcerptBytes)]))
	zerolog.Ctx(ctx).Debug().Int(logKeyOutputBytes, len(body)).Int64(logKeyErrorOffset, se.Offset).
		Str(logKeyJSONError, se.Error()).Str(logKeyOutputExcerpt, excerpt[1:len(excerpt)-1]).
		Msg(reasonInvalidJSON)
	return &CallError{Reason: reasonInvalidJSON, Err: fmt.Errorf("syntax error at byte offset %d of %d", se.Offset, len(body))}
}

// mayBeSignal reports whether body, valid JSON without surrounding space,
// is an object whose first key is KeyInputRequired or KeyError: a signal
// has a single key, so no other object can be one, and only these are
// decoded whole.
func mayBeSignal(body []byte) bool {
	if len(body) == 0 || body[0] != '{' {
		return false
	}
	rest := bytes.TrimLeft(body[1:], " \t\r\n")
	if len(rest) == 0 || rest[0] != '"' {
		return false // {}
	}
	// The first key, quoted; escapes (\u0061 for a...) make it longer,
	// at most 6 bytes a character.
	end := 1
	for end < len(rest) && rest[end] != '"' {
		if rest[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(rest) || end > 6*len(KeyInputRequired)+1 {
		return false
	}
	var key string
	if err := json.Unmarshal(rest[:end+1], &key); err != nil {
		return false
	}
	return key == KeyInputRequired || key == KeyError
}

// compactInPlace removes the insignificant space from b, valid JSON, as
// json.Compact does, writing over b; it returns the compacted prefix of b.
func compactInPlace(b []byte) []byte {
	w := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		case c == '"':
			inString = true
		}
		b[w] = c
		w++
	}
	return b[:w]
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
