package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"
)

// BuiltinBackend runs a function shipped in the binary.
type BuiltinBackend struct {
	Name string
	fn   func(ctx context.Context, input json.RawMessage) (Result, error)
}

// Kind returns "builtin".
func (b *BuiltinBackend) Kind() string { return "builtin" }

// Invoke runs the builtin.
func (b *BuiltinBackend) Invoke(ctx context.Context, input json.RawMessage) (Result, error) {
	return b.fn(ctx, input)
}

// Immediate reports whether the builtin returns at once without reading
// its context: echo, fail and ask do; sleep waits, and reports progress.
func (b *BuiltinBackend) Immediate() bool {
	switch b.Name {
	case "echo", "fail", "ask":
		return true
	}
	return false
}

// builtins are the functions shipped in the binary:
//
//   - echo returns its input unchanged.
//
//   - sleep waits {"seconds": n} (0 if missing) and returns {"slept": n};
//     after each full second of waiting it reports the progress note
//     "slept <s> of <n> seconds". Its reasons are "seconds must be a
//     non-negative number", "call canceled" and "call timed out".
//
//   - fail always fails with the reason "function reported an error: " and
//     the input's "message" ("failed on purpose" if missing).
//
//   - ask returns {"answer": a} if the input has a non-empty string
//     "answer"; otherwise it asks the input's "question", or "What is the
//     answer?".
//
//   - conformance plays the A2A TCK's scenarios: a fixture for running
//     the TCK, see conformance.go.
//
// Each fails with "input must be a JSON object" if it needs fields from an
// input that is not one.
var builtins = map[string]func(ctx context.Context, input json.RawMessage) (Result, error){
	"echo":        builtinEcho,
	"sleep":       builtinSleep,
	"fail":        builtinFail,
	"ask":         builtinAsk,
	"conformance": builtinConformance,
}

// NewBuiltin returns the builtin called name.
func NewBuiltin(name string) (*BuiltinBackend, error) {
	fn, ok := builtins[name]
	if !ok {
		return nil, fmt.Errorf("unknown builtin %q (known: %v)", name, BuiltinNames())
	}
	return &BuiltinBackend{Name: name, fn: fn}, nil
}

// BuiltinNames lists the builtins, sorted.
func BuiltinNames() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func builtinEcho(_ context.Context, input json.RawMessage) (Result, error) {
	return Result{Output: input}, nil
}

func builtinSleep(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Seconds json.RawMessage `json:"seconds"`
	}
	if err := decodeObject(input, &in); err != nil {
		return Result{}, err
	}
	var seconds float64
	if in.Seconds != nil {
		if err := json.Unmarshal(in.Seconds, &seconds); err != nil || string(in.Seconds) == "null" || seconds < 0 {
			return Result{}, &CallError{Reason: "seconds must be a non-negative number", Err: err}
		}
	}
	if ctx.Err() != nil {
		return Result{}, contextError(ctx)
	}
	// Past a billion seconds, forever will do.
	d := time.Duration(math.MaxInt64)
	if seconds < 1e9 {
		d = time.Duration(seconds * float64(time.Second))
	}
	// The number as the result will show it.
	total, err := json.Marshal(seconds)
	if err != nil {
		return Result{}, &CallError{Reason: "function failed", Err: err}
	}
	begin := time.Now()
	t := time.NewTimer(min(d, time.Second))
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-t.C:
		case <-ctx.Done():
			return Result{}, contextError(ctx)
		}
		if time.Duration(n)*time.Second >= d {
			break
		}
		if ctx.Err() != nil {
			return Result{}, contextError(ctx)
		}
		ReportProgress(ctx, Progress{Message: fmt.Sprintf("slept %d of %s seconds", n, total)})
		t.Reset(time.Until(begin.Add(min(d, time.Duration(n+1)*time.Second))))
	}
	out, err := json.Marshal(map[string]float64{"slept": seconds})
	if err != nil {
		return Result{}, &CallError{Reason: "function failed", Err: err}
	}
	return Result{Output: out}, nil
}

func builtinFail(_ context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Message any `json:"message"`
	}
	if err := decodeObject(input, &in); err != nil {
		return Result{}, err
	}
	msg, _ := in.Message.(string)
	if msg == "" {
		msg = "failed on purpose"
	}
	return Result{}, reportedError(msg)
}

func builtinAsk(_ context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Answer   any `json:"answer"`
		Question any `json:"question"`
	}
	if err := decodeObject(input, &in); err != nil {
		return Result{}, err
	}
	if answer, _ := in.Answer.(string); answer != "" {
		out, err := json.Marshal(map[string]string{"answer": answer})
		if err != nil {
			return Result{}, &CallError{Reason: "function failed", Err: err}
		}
		return Result{Output: out}, nil
	}
	if q, _ := in.Question.(string); q != "" {
		return Result{InputRequired: q}, nil
	}
	return Result{InputRequired: "What is the answer?"}, nil
}

// decodeObject decodes input, which must be a JSON object, into v. Empty
// input counts as {}.
func decodeObject(input json.RawMessage, v any) error {
	if len(input) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(input, &obj); err != nil || obj == nil {
		return &CallError{Reason: "input must be a JSON object", Err: err}
	}
	if err := json.Unmarshal(input, v); err != nil {
		return &CallError{Reason: "input must be a JSON object", Err: err}
	}
	return nil
}
