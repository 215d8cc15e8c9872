package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/tasks"
)

// rpcErrors maps service errors to A2A errors, in order: the first match
// wins. The typed errors, whose numbers or problems the answer carries,
// come first; anything unmatched is -32603 "Internal error".
var rpcErrors = []struct {
	err error
	rpc func(err error) *a2a.Error
}{
	{tasks.ErrInvalidInput, inputError},
	{tasks.ErrQuotaExceeded, quotaError},
	{tasks.ErrTaskLimit, taskLimitError},
	{tasks.ErrNotFound, is(a2a.ErrTaskNotFound)},
	{tasks.ErrPushConfigNotFound, is(a2a.ErrPushConfigNotFound)},
	{tasks.ErrPushUnavailable, is(a2a.ErrPushNotSupported)},
	{tasks.ErrNotCancelable, is(a2a.ErrTaskNotCancelable)},
	{tasks.ErrMessageIDReused, is(ErrMessageIDReused)},
	{tasks.ErrTaskBusy, is(a2a.ErrTaskBusy)},
	{tasks.ErrTaskTerminal, is(a2a.ErrTaskTerminal)},
	{tasks.ErrConflict, is(a2a.ErrTaskBusy)},
	{tasks.ErrBusy, is(a2a.ErrServerBusy)},
	{tasks.ErrCallerBusy, is(a2a.ErrCallerBusy)},
	{tasks.ErrClosed, is(a2a.ErrShuttingDown)},
	{tasks.ErrStoreUnavailable, is(a2a.ErrStoreUnavailable)},
}

// ErrMessageIDReused answers a message whose messageId names an earlier
// message with other content; a binding that makes the messageId of a key
// of its own (MCP's idempotency key) tells it by identity.
var ErrMessageIDReused = &a2a.Error{
	Code:    a2a.CodeInvalidParams,
	Message: "messageId reused with a different message",
	Data:    map[string]any{"errors": []any{map[string]any{"path": "/message/messageId", "message": "reused with a different message"}}},
}

// is maps an error to the fixed A2A error e.
func is(e *a2a.Error) func(error) *a2a.Error { return func(error) *a2a.Error { return e } }

// inputError is the -32602 of a *tasks.InputError: its problems, or, when
// a skill's schema refused the input, the first problem named with the
// skill.
func inputError(err error) *a2a.Error {
	var ie *tasks.InputError
	if !errors.As(err, &ie) {
		return a2a.InvalidParams()
	}
	if ie.Skill == "" {
		return a2a.InvalidParams(ie.Problems...)
	}
	list := make([]any, len(ie.Problems))
	for i, p := range ie.Problems {
		list[i] = map[string]any{"path": p.Path, "message": p.Message}
	}
	first, msg := "/", ""
	if len(ie.Problems) > 0 {
		if ie.Problems[0].Path != "" {
			first = ie.Problems[0].Path
		}
		msg = ie.Problems[0].Message
	}
	return &a2a.Error{
		Code:    a2a.CodeInvalidParams,
		Message: fmt.Sprintf("Invalid parameters: input does not match the schema of skill %s: %s: %s", ie.Skill, first, msg),
		Data:    map[string]any{"skill": ie.Skill, "errors": list},
	}
}

// quotaError is the -32055 of a *tasks.QuotaError, with its numbers.
func quotaError(err error) *a2a.Error {
	var qe *tasks.QuotaError
	if !errors.As(err, &qe) {
		return a2a.ErrInternal
	}
	return a2a.QuotaExceeded(qe.Which, qe.Used, qe.Limit)
}

// taskLimitError is the -32056 of a *tasks.TaskLimitError, with its
// numbers.
func taskLimitError(err error) *a2a.Error {
	var te *tasks.TaskLimitError
	if !errors.As(err, &te) {
		return a2a.ErrInternal
	}
	return a2a.TaskLimitExceeded(te.Messages, te.Max)
}

// wireError converts a service error for the wire by rpcErrors; nil when
// none matches. An error that is an A2A error already (a service other
// than tasks may answer so) passes as it is.
func wireError(err error) *a2a.Error {
	var ae *a2a.Error
	if errors.As(err, &ae) {
		return ae
	}
	for _, m := range rpcErrors {
		if errors.Is(err, m.err) {
			return m.rpc(err)
		}
	}
	return nil
}

// problemsIn10 is err with the problems of a *tasks.InputError located in
// the 1.0 params (v1.ProblemPath): the task service names the core, 0.3,
// members. A skill's schema problems are inside the input, the same in
// both versions.
func problemsIn10(err error) error {
	var ie *tasks.InputError
	if !errors.As(err, &ie) || ie.Skill != "" {
		return err
	}
	out := &tasks.InputError{Problems: make([]a2a.Problem, len(ie.Problems))}
	for i, p := range ie.Problems {
		out.Problems[i] = a2a.Problem{Path: v1.ProblemPath(p.Path), Message: p.Message}
	}
	return out
}

// ErrorFor returns the A2A error a caller gets for err, an error of the
// task service (a refused input's -32602, say), in the 0.3 names.
// Anything unexpected is -32603 "Internal error".
func ErrorFor(err error) *a2a.Error {
	if e := wireError(err); e != nil {
		return e
	}
	return a2a.ErrInternal
}

// logFor is the logger of the lines about cl: the core's with the
// request id of an HTTP call, built here rather than for every request
// (the lines are rare: an internal error, a stream ended early), or the
// one ctx carries (a gRPC call's, with its request id).
func (c *Core) logFor(ctx context.Context, cl *Call) *zerolog.Logger {
	if cl.reqID == "" {
		return zerolog.Ctx(ctx)
	}
	l := c.log.With().Str("req_id", cl.reqID).Logger()
	return &l
}

// Fail converts the service (or encoding) error err of cl for the wire,
// in the call's version (a 1.0 call's problems are located with 1.0's
// names), and notes it in the call's audit record. A call whose client
// canceled it (ctx is canceled, err is context.Canceled) is audited
// client_canceled and logged at debug level; anything else unexpected is
// logged once and answered with a bare "Internal error".
func (c *Core) Fail(ctx context.Context, cl *Call, err error) *a2a.Error {
	if cl.version == a2a.V10 {
		err = problemsIn10(err)
	}
	if e := wireError(err); e != nil {
		cl.NoteError(e, err)
		return e
	}
	cl.NoteError(a2a.ErrInternal, err)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// The client canceled the call or went away: its error, not
		// a2ad's, and nobody reads the answer.
		cl.NoteClientCanceled()
		c.logFor(ctx, cl).Debug().Err(err).Str("rpc_method", cl.method).Str("transport", cl.transport).Msg("call canceled by its client")
		return a2a.ErrInternal
	}
	c.logFor(ctx, cl).Error().Err(err).Str("rpc_method", cl.method).Str("transport", cl.transport).Msg("internal error")
	return a2a.ErrInternal
}
