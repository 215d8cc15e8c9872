package functions_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/functions"
)

// MustBuiltin returns the builtin called name.
func MustBuiltin(tb testing.TB, name string) *functions.BuiltinBackend {
	tb.Helper()
	b, err := functions.NewBuiltin(name)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestBuiltinNames(t *testing.T) {
	if got, want := strings.Join(functions.BuiltinNames(), ","), "ask,conformance,echo,fail,sleep"; got != want {
		t.Errorf("BuiltinNames() = %s, want %s", got, want)
	}
	if _, err := functions.NewBuiltin("nope"); err == nil {
		t.Error("NewBuiltin(nope) succeeded")
	}
}

func TestBuiltinEcho(t *testing.T) {
	input := json.RawMessage(`{"a": 1}`)
	res, err := MustBuiltin(t, "echo").Invoke(context.Background(), input)
	AssertOutput(t, res, err, `{"a": 1}`)
}

func TestBuiltinSleep(t *testing.T) {
	b := MustBuiltin(t, "sleep")
	t.Run("short", func(t *testing.T) {
		begin := time.Now()
		res, err := b.Invoke(context.Background(), json.RawMessage(`{"seconds": 0.05}`))
		AssertOutput(t, res, err, `{"slept":0.05}`)
		if d := time.Since(begin); d < 50*time.Millisecond {
			t.Errorf("slept %v, want 50ms", d)
		}
	})
	t.Run("missing", func(t *testing.T) {
		res, err := b.Invoke(context.Background(), json.RawMessage(`{}`))
		AssertOutput(t, res, err, `{"slept":0}`)
	})
	for _, input := range []string{`{"seconds": -1}`, `{"seconds": "1"}`, `{"seconds": null}`, `{"seconds": [1]}`} {
		t.Run(input, func(t *testing.T) {
			_, err := b.Invoke(context.Background(), json.RawMessage(input))
			AssertReason(t, err, "seconds must be a non-negative number")
		})
	}
	t.Run("not an object", func(t *testing.T) {
		_, err := b.Invoke(context.Background(), json.RawMessage(`[1]`))
		AssertReason(t, err, "input must be a JSON object")
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		begin := time.Now()
		_, err := b.Invoke(ctx, json.RawMessage(`{"seconds": 60}`))
		AssertReason(t, err, "call canceled")
		if d := time.Since(begin); d > 2*time.Second {
			t.Errorf("returned %v after start", d)
		}
	})
	t.Run("timed out", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := b.Invoke(ctx, json.RawMessage(`{"seconds": 1e300}`))
		AssertReason(t, err, "call timed out")
	})
}

func TestBuiltinFail(t *testing.T) {
	b := MustBuiltin(t, "fail")
	for input, want := range map[string]string{
		`{}`:                      "function reported an error: failed on purpose",
		`{"message": "oh no"}`:    "function reported an error: oh no",
		`{"message": "a\nb"}`:     "function reported an error: a b",
		`{"message": 7}`:          "function reported an error: failed on purpose",
		`{"message": "", "x": 1}`: "function reported an error: failed on purpose",
	} {
		_, err := b.Invoke(context.Background(), json.RawMessage(input))
		AssertReason(t, err, want)
	}
}

func TestBuiltinAsk(t *testing.T) {
	b := MustBuiltin(t, "ask")
	t.Run("answer", func(t *testing.T) {
		res, err := b.Invoke(context.Background(), json.RawMessage(`{"answer": "42"}`))
		AssertOutput(t, res, err, `{"answer":"42"}`)
	})
	for input, want := range map[string]string{
		`{}`:                               "What is the answer?",
		`{"answer": ""}`:                   "What is the answer?",
		`{"answer": 42}`:                   "What is the answer?",
		`{"question": "Your name?"}`:       "Your name?",
		`{"answer": "", "question": "Q?"}`: "Q?",
	} {
		t.Run(input, func(t *testing.T) {
			res, err := b.Invoke(context.Background(), json.RawMessage(input))
			if err != nil {
				t.Fatal(err)
			}
			if res.InputRequired != want || res.Output != nil {
				t.Fatalf("Invoke(%s) = %+v, want question %q", input, res, want)
			}
		})
	}
}
