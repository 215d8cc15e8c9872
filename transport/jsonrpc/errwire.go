package jsonrpc

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/tasks"
)

// httpStatus is the HTTP status of an answer carrying rpcErr (nil for a
// result): 200, as JSON-RPC has it, but for a task store that cannot be
// reached or a server draining for shutdown, 503 with Retry-After, so that
// a load balancer or client retries it as it would any unavailable server
// (a balancer, elsewhere).
func httpStatus(c echo.Context, rpcErr *a2a.Error) int {
	if rpcErr != nil && (rpcErr.Code == a2a.CodeStoreUnavailable || rpcErr.Code == a2a.CodeShuttingDown) {
		c.Response().Header().Set("Retry-After", "1")
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
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

// rpcErrors maps service errors to JSON-RPC errors, in order: the first
// match wins. The typed errors, whose numbers or problems the answer
// carries, come first; anything unmatched is -32603 "Internal error".
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
	{tasks.ErrMessageIDReused, is(errMessageIDReused)},
	{tasks.ErrTaskBusy, is(a2a.ErrTaskBusy)},
	{tasks.ErrTaskTerminal, is(a2a.ErrTaskTerminal)},
	{tasks.ErrConflict, is(a2a.ErrTaskBusy)},
	{tasks.ErrBusy, is(a2a.ErrServerBusy)},
	{tasks.ErrCallerBusy, is(a2a.ErrCallerBusy)},
	{tasks.ErrClosed, is(a2a.ErrShuttingDown)},
	{tasks.ErrStoreUnavailable, is(a2a.ErrStoreUnavailable)},
}

var errMessageIDReused = &a2a.Error{
	Code:    a2a.CodeInvalidParams,
	Message: "messageId reused with a different message",
	Data:    map[string]any{"errors": []any{map[string]any{"path": "/message/messageId", "message": "reused with a different message"}}},
}

// is maps an error to the fixed JSON-RPC error e.
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

// wireError converts a service error for the wire by rpcErrors; nil when
// none matches. An error that is a JSON-RPC error already (a service
// other than tasks may answer so) passes as it is.
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

// ErrorFor returns the JSON-RPC error a caller gets for err, an error of
// the task service (a refused input's -32602, say): what a2ad call shows.
// Anything unexpected is -32603 "Internal error".
func ErrorFor(err error) *a2a.Error {
	if e := wireError(err); e != nil {
		return e
	}
	return a2a.ErrInternal
}
