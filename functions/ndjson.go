package functions

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/rs/zerolog"
)

// reasonMalformedProgress is the Reason for a progress line (a line whose
// only key is KeyProgress or KeyArtifact) whose value has the wrong shape.
const reasonMalformedProgress = "function wrote a malformed progress line"

// totalOutputFactor bounds all the output of a call, progress lines
// included, to this many times the cap of its result.
const totalOutputFactor = 4

// lineBufferSize is the read buffer of readOutput; longer lines are read in
// fragments.
const lineBufferSize = 64 << 10

// logKeyOutputLine is the log key of the number (from 1) of the output
// line a problem was found on.
const logKeyOutputLine = "output_line"

// progressPrefix starts every progress line, after leading spaces.
var progressPrefix = []byte(`{"a2a.`)

// outputTooLargeError is the error of readOutput for output over one of its
// caps; each backend words its Reason.
type outputTooLargeError struct {
	limit int64
}

func (e *outputTooLargeError) Error() string {
	return fmt.Sprintf("output exceeds %d bytes", e.limit)
}

// outputFailed reports whether err, from readOutput, fails the call: the
// output is too large or holds a malformed progress line. Other errors are
// those of the reader.
func outputFailed(err error) bool {
	var tl *outputTooLargeError
	var ce *CallError
	return errors.As(err, &tl) || errors.As(err, &ce)
}

// outputCallError returns the CallError for err, which outputFailed
// accepts; noun names the output in the Reason ("output" or "response").
func outputCallError(err error, noun string) error {
	var tl *outputTooLargeError
	if errors.As(err, &tl) {
		return &CallError{Reason: fmt.Sprintf("function %s exceeds %d bytes", noun, tl.limit)}
	}
	return err
}

// totalOutputCap is the cap of all the output of a call whose result is
// capped at maxResult.
func totalOutputCap(maxResult int64) int64 {
	if maxResult > math.MaxInt64/totalOutputFactor {
		return math.MaxInt64
	}
	return maxResult * totalOutputFactor
}

// readOutput reads a function's output from r to its end, line by line.
// A line holding a JSON object whose only key is KeyProgress or
// KeyArtifact is a progress line: it is reported with ReportProgress(ctx)
// as soon as it is read (unless ctx is done), and is not part of the
// result. Every other line, in order and with its line break, is the
// result, which readOutput returns.
//
// What a call leaves stored is capped at maxResult: the result and the
// artifact lines together, each line counted at its length as written.
// readOutput returns an *outputTooLargeError if they, or a single line,
// are over maxResult bytes, or all the output, notes included, is over
// totalOutputCap(maxResult);
// a *CallError with reasonMalformedProgress for a progress line whose
// value has the wrong shape (the detail goes to the log of ctx, never the
// line); and otherwise the error of r other than io.EOF, with the result
// read so far. It stops reading at its first error.
//
// It holds the result in blocks and joins them once at the end, and keeps
// one line buffer for the lines that may be progress lines: reading a
// result of N bytes takes about 2N of memory at its peak.
func readOutput(ctx context.Context, r io.Reader, maxResult int64) ([]byte, error) {
	total := totalOutputCap(maxResult)
	br := bufio.NewReaderSize(r, lineBufferSize)
	var (
		result blocks // the result lines
		line   []byte // the line being read, while it may be a progress line
		read   int64  // every byte read
		chunks int64  // the bytes of the artifact lines
		lines  int
	)
	for {
		line = line[:0]
		var (
			size     int64 // of the line being read
			isResult bool  // the line cannot be a progress line: it is in result
			err      error
		)
		for {
			var frag []byte
			frag, err = br.ReadSlice('\n')
			read += int64(len(frag))
			size += int64(len(frag))
			switch {
			case size > maxResult:
				return nil, &outputTooLargeError{limit: maxResult}
			case read > total:
				return nil, &outputTooLargeError{limit: total}
			}
			if isResult {
				_, _ = result.Write(frag)
			} else if line = appendGrow(line, frag); !mayBeProgress(line) {
				isResult = true
				_, _ = result.Write(line)
			}
			if int64(result.Len())+chunks > maxResult {
				return nil, &outputTooLargeError{limit: maxResult}
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if size > 0 {
			lines++
		}
		if !isResult && len(line) > 0 {
			// The whole line starts like a progress line.
			p, ok, perr := parseProgress(line)
			switch {
			case perr != nil:
				zerolog.Ctx(ctx).Warn().Err(perr).Int(logKeyOutputLine, lines).Msg(reasonMalformedProgress)
				return nil, &CallError{Reason: reasonMalformedProgress, Err: perr}
			case ok:
				if p.Artifact != nil {
					if chunks += int64(len(line)); int64(result.Len())+chunks > maxResult {
						return nil, &outputTooLargeError{limit: maxResult}
					}
				}
				if (p.Message != "" || p.Artifact != nil) && ctx.Err() == nil {
					ReportProgress(ctx, p)
				}
			default:
				_, _ = result.Write(line)
				if int64(result.Len())+chunks > maxResult {
					return nil, &outputTooLargeError{limit: maxResult}
				}
			}
		}
		if err == io.EOF {
			return result.Bytes(), nil
		}
		if err != nil {
			return result.Bytes(), err
		}
	}
}

// mayBeProgress reports whether line, a line or the start of one, may still
// turn out to be a progress line.
func mayBeProgress(line []byte) bool {
	line = bytes.TrimLeft(line, " \t\r")
	return bytes.HasPrefix(line, progressPrefix) || bytes.HasPrefix(progressPrefix, line)
}

// parseProgress decodes line if it is a progress line: a JSON object whose
// only key is KeyProgress or KeyArtifact. It returns ok false for any other
// line, and an error, which never holds the line's content, for a progress
// line whose value has the wrong shape. A progress line with an empty
// message yields the zero Progress.
func parseProgress(line []byte) (p Progress, ok bool, err error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(line, &obj) != nil || len(obj) != 1 {
		return Progress{}, false, nil
	}
	if v, found := obj[KeyProgress]; found {
		msg, err := parseProgressMessage(v)
		return Progress{Message: msg}, true, err
	}
	if v, found := obj[KeyArtifact]; found {
		a, err := parseProgressArtifact(v)
		if err != nil {
			return Progress{}, true, err
		}
		return Progress{Artifact: a}, true, nil
	}
	return Progress{}, false, nil
}

// parseProgressMessage decodes the value of a progress note: a string, or
// an object with an optional string "message". A blank message is "".
func parseProgressMessage(v json.RawMessage) (string, error) {
	v = bytes.TrimSpace(v)
	if s, ok := jsonString(v); ok {
		return blankToEmpty(s), nil
	}
	obj, ok := jsonObject(v)
	if !ok {
		return "", errors.New(KeyProgress + ": value must be a string or an object")
	}
	m, found := obj["message"]
	if !found {
		return "", nil
	}
	s, ok := jsonString(m)
	if !ok {
		return "", errors.New(KeyProgress + ": message must be a string")
	}
	return blankToEmpty(s), nil
}

// parseProgressArtifact decodes the value of an artifact line: an object
// with exactly one of "text" (a string) and "data" (an object), and
// optional strings "artifactId" and "name" and bools "append" and
// "lastChunk".
func parseProgressArtifact(v json.RawMessage) (*ProgressArtifact, error) {
	obj, ok := jsonObject(bytes.TrimSpace(v))
	if !ok {
		return nil, errors.New(KeyArtifact + ": value must be an object")
	}
	var a ProgressArtifact
	for _, f := range []struct {
		key string
		dst *string
	}{{"artifactId", &a.ArtifactID}, {"name", &a.Name}} {
		if raw, found := obj[f.key]; found {
			if *f.dst, ok = jsonString(raw); !ok {
				return nil, fmt.Errorf("%s: %s must be a string", KeyArtifact, f.key)
			}
		}
	}
	for _, f := range []struct {
		key string
		dst *bool
	}{{"append", &a.Append}, {"lastChunk", &a.LastChunk}} {
		if raw, found := obj[f.key]; found {
			switch string(bytes.TrimSpace(raw)) {
			case "true":
				*f.dst = true
			case "false":
			default:
				return nil, fmt.Errorf("%s: %s must be a bool", KeyArtifact, f.key)
			}
		}
	}
	text, hasText := obj["text"]
	data, hasData := obj["data"]
	switch {
	case hasText && hasData:
		return nil, errors.New(KeyArtifact + ": text and data are exclusive")
	case hasText:
		s, ok := jsonString(text)
		if !ok {
			return nil, errors.New(KeyArtifact + ": text must be a string")
		}
		a.Text = &s
	case hasData:
		if _, ok := jsonObject(data); !ok {
			return nil, errors.New(KeyArtifact + ": data must be an object")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			// Unreachable: data is valid JSON.
			return nil, errors.New(KeyArtifact + ": data must be an object")
		}
		a.Data = buf.Bytes()
	default:
		return nil, errors.New(KeyArtifact + ": text or data is required")
	}
	return &a, nil
}

// jsonString decodes v if it is a JSON string.
func jsonString(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

// jsonObject decodes v if it is a JSON object (not null).
func jsonObject(v json.RawMessage) (map[string]json.RawMessage, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '{' {
		return nil, false
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(v, &obj); err != nil {
		return nil, false
	}
	return obj, true
}

// blankToEmpty returns s, or "" if s holds only white space.
func blankToEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}
