package functions

import (
	"context"
	"net/http"
	"strconv"
)

// Call says which task and attempt a call is, so that a backend can tell a
// retry, or a re-run after a crash, from a new call. The task service
// attaches it to the call's context (WithCall); the http backend sends it
// as headers and the exec backend as environment variables (see
// Call.Header and Call.Environ).
type Call struct {
	// IdempotencyKey is the same for every attempt of one call of a task
	// (a retry-safe call re-run after a crash or a lapsed lease keeps
	// it), and differs between the calls of a task and between tasks.
	IdempotencyKey string
	TaskID         string
	ContextID      string
	// Caller is the id of the caller that created the task ("" for the
	// anonymous caller); never its key.
	Caller string
	// Attempt counts the runs of this call: 1, then 2 for its first
	// re-run, and so on.
	Attempt int
	// FunctionID is the id of the function called. It is not sent to
	// backends (an http or exec backend is one function's); a builtin
	// that plays several functions (conformance) reads it.
	FunctionID string
}

// WithCall returns a context whose calls are c.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the call attached to ctx by WithCall; false if none.
func CallFrom(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}

type callKey struct{}

// The headers and environment variables that carry a Call. A value that
// is empty (the anonymous caller) is left out.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderTaskID         = "A2A-Task-Id"
	HeaderContextID      = "A2A-Context-Id"
	HeaderCaller         = "A2A-Caller"
	HeaderAttempt        = "A2A-Attempt"
)

// fields are c's values with their header and environment names, in the
// order the README's contract table lists them.
func (c Call) fields() [5][3]string {
	return [5][3]string{
		{HeaderIdempotencyKey, "A2AD_IDEMPOTENCY_KEY", c.IdempotencyKey},
		{HeaderTaskID, "A2AD_TASK_ID", c.TaskID},
		{HeaderContextID, "A2AD_CONTEXT_ID", c.ContextID},
		{HeaderCaller, "A2AD_CALLER", c.Caller},
		{HeaderAttempt, "A2AD_ATTEMPT", strconv.Itoa(c.Attempt)},
	}
}

// Header sets c's headers on h, replacing any the catalogue set. (The
// W3C traceparent and tracestate come from the span in the call's
// context: see traceHeader.)
func (c Call) Header(h http.Header) {
	for _, f := range c.fields() {
		if f[2] != "" && (f[0] != HeaderAttempt || c.Attempt > 0) {
			h.Set(f[0], f[2])
		}
	}
}

// Environ appends c's environment variables to env, as KEY=VALUE. They
// come after the catalogue's env, so that they win over a variable of the
// same name there.
func (c Call) Environ(env []string) []string {
	for _, f := range c.fields() {
		if f[2] != "" && (f[0] != HeaderAttempt || c.Attempt > 0) {
			env = append(env, f[1]+"="+f[2])
		}
	}
	return env
}
