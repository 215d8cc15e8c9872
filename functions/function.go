package functions

import (
	"context"
	"encoding/json"
	"time"

	"github.com/a2ad/a2ad/schemas"
)

// Catalog is a loaded, validated function catalogue. It is immutable and
// safe for concurrent use.
type Catalog struct {
	// Path is the file the catalogue was loaded from.
	Path string
	// Version identifies the catalogue's content (a hash of the file and
	// the schema files it references).
	Version string
	// Functions are in file order.
	Functions []*Function
	// Default is the id of the function that takes messages naming no
	// skill (the catalogue's default_skill), or "" for none.
	Default string

	byID map[string]*Function
}

// Lookup returns the function with the exact id.
func (c *Catalog) Lookup(id string) (*Function, bool) {
	f, ok := c.byID[id]
	return f, ok
}

// NewCatalog builds a catalogue from already validated functions; it is
// meant for tests and for code that assembles functions itself. Ids must
// be unique.
func NewCatalog(fns ...*Function) *Catalog {
	c := &Catalog{Functions: fns, byID: make(map[string]*Function, len(fns))}
	for _, f := range fns {
		c.byID[f.ID] = f
	}
	return c
}

// Function is one callable function of the catalogue.
type Function struct {
	ID          string
	Name        string
	Description string
	Tags        []string
	Examples    []string
	// Metadata is free-form; its keys are literal strings such as
	// "a2a.expose" and "a2a.tier", and its values are decoded JSON/YAML
	// (bool, string, float64 or int, []any, map[string]any).
	Metadata map[string]any
	// InputModes and OutputModes are media types; empty means the card's
	// defaults.
	InputModes  []string
	OutputModes []string
	// Input is the compiled input schema; never nil (a function declared
	// without one accepts any JSON object).
	Input *schemas.Schema
	// Output is the compiled output schema, or nil.
	Output *schemas.Schema
	// Timeout bounds one call; always positive.
	Timeout time.Duration
	// RetrySafe says a call may run again after a crash interrupted it.
	RetrySafe bool
	// MaxConcurrency caps the calls running at once; 0 means only the
	// server-wide cap applies.
	MaxConcurrency int
	// Parts says the function's output is the parts envelope (catalogue
	// "output: parts"): the artifacts and the message it answers with, of
	// any part kind, rather than one data result (see the catalogue's
	// documentation).
	Parts bool
	// Reply says how a message calling the function is answered: with
	// the task (ReplyTask, the default), a Message (ReplyMessage), or as
	// each call's parts envelope says (ReplyEither; see the catalogue's
	// documentation).
	Reply Reply
	// Backend runs the function.
	Backend Backend
}

// Reply is how a function's calls are answered (catalogue "reply").
type Reply string

// The replies.
const (
	ReplyTask    Reply = ""
	ReplyMessage Reply = "message"
	ReplyEither  Reply = "either"
)

// Backend runs calls of one function.
type Backend interface {
	// Kind is "http", "exec" or "builtin".
	Kind() string
	// Invoke calls the function with input, a JSON object, and returns
	// its result. It returns promptly once ctx is done. Errors are
	// *CallError values whose Reason is safe to show to the caller.
	Invoke(ctx context.Context, input json.RawMessage) (Result, error)
}

// Immediate is a Backend that may say its calls return at once, without
// blocking and without reading their context (neither its deadline nor
// the Call, progress or process-group hooks attached to it): a caller may
// then run them inline, with no deadline or goroutine of their own,
// timing them out only if one took longer than the function's timeout.
type Immediate interface {
	Backend
	Immediate() bool
}

// IsImmediate reports whether b is an Immediate backend that says so.
func IsImmediate(b Backend) bool {
	im, ok := b.(Immediate)
	return ok && im.Immediate()
}

// Result is what a call returned.
type Result struct {
	// Output is the JSON value the function returned. It is nil when
	// InputRequired is set.
	Output json.RawMessage
	// InputRequired, when not empty, is the question the function asks
	// before it can go on: the task waits in input-required, and the next
	// message on it calls the function again with the new input.
	InputRequired string
}

// CallError is a failed call. Reason is sanitised: it never holds internal
// URLs, environment values or stack traces, and may be shown to callers.
type CallError struct {
	Reason string
	// Err is the underlying cause, for the log only.
	Err error
}

func (e *CallError) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

func (e *CallError) Unwrap() error { return e.Err }

// The reserved keys of the backend contract: a JSON object result with
// exactly one of these keys is a signal, not an output.
const (
	// KeyInputRequired: {"a2a.input_required": {"question": "..."}}.
	KeyInputRequired = "a2a.input_required"
	// KeyError: {"a2a.error": "message"}: the call failed, and the
	// message is meant for the caller.
	KeyError = "a2a.error"
)
