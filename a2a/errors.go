package a2a

import "fmt"

// JSON-RPC 2.0 and A2A error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	CodeTaskNotFound                 = -32001
	CodeTaskNotCancelable            = -32002
	CodePushNotificationNotSupported = -32003
	CodeUnsupportedOperation         = -32004
	CodeContentTypeNotSupported      = -32005
	CodeInvalidAgentResponse         = -32006
	CodeExtendedCardNotConfigured    = -32007

	// a2ad's own codes, kept clear of the block A2A reserves (-32001..-32009).

	// CodeServerBusy answers a call that found the queue of calls full
	// (data.scope "server"), or its caller's share of it (data.scope
	// "caller").
	CodeServerBusy = -32050
	// CodeShuttingDown answers a call that arrived while a2ad stops.
	CodeShuttingDown = -32051
	// CodeRateLimited answers a call over the caller's rate of requests
	// or of request bytes (HTTP 429); data.retryAfterMs says when a retry
	// succeeds.
	CodeRateLimited = -32052
	// CodeTooManyInFlight answers a call over a cap on concurrent
	// requests, the caller's (HTTP 429) or the server's (HTTP 503).
	CodeTooManyInFlight = -32053
	// CodeUnauthenticated answers a request without a valid API key
	// (HTTP 401).
	CodeUnauthenticated = -32054
	// CodeQuotaExceeded answers a new task or message that would take
	// the caller past its storage quota (stored tasks or bytes).
	CodeQuotaExceeded = -32055
	// CodeTaskLimitExceeded answers a message that would take its task
	// past a per-task limit (the messages of its history).
	CodeTaskLimitExceeded = -32056
	// CodeStoreUnavailable answers a call that needs the task store while
	// it cannot be reached (HTTP 503): nothing of the call was stored.
	CodeStoreUnavailable = -32057
)

// Error is a JSON-RPC error object. Data, when set, is always a JSON object.
type Error struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("a2a error %d: %s", e.Code, e.Message) }

// WithData returns a copy of e carrying data.
func (e *Error) WithData(data map[string]any) *Error {
	c := *e
	c.Data = data
	return &c
}

// The errors a2ad answers with, each with its one message. Tests pin them.
var (
	ErrParse          = &Error{Code: CodeParseError, Message: "Invalid JSON payload"}
	ErrInvalidRequest = &Error{Code: CodeInvalidRequest, Message: "Request payload validation error"}
	ErrMethodNotFound = &Error{Code: CodeMethodNotFound, Message: "Method not found"}
	ErrInternal       = &Error{Code: CodeInternalError, Message: "Internal error"}

	ErrTaskNotFound        = &Error{Code: CodeTaskNotFound, Message: "Task not found"}
	ErrTaskNotCancelable   = &Error{Code: CodeTaskNotCancelable, Message: "Task cannot be canceled"}
	ErrPushConfigNotFound  = &Error{Code: CodeTaskNotFound, Message: "Push notification config not found"}
	ErrPushNotSupported    = &Error{Code: CodePushNotificationNotSupported, Message: "Push Notification is not supported"}
	ErrUnsupportedOp       = &Error{Code: CodeUnsupportedOperation, Message: "This operation is not supported"}
	ErrStreamingNotSupport = &Error{Code: CodeUnsupportedOperation, Message: "Streaming is not supported"}
	ErrExtendedCardNotConf = &Error{Code: CodeExtendedCardNotConfigured, Message: "Authenticated Extended Card is not configured"}
	ErrListNeedsKey        = &Error{Code: CodeUnsupportedOperation, Message: "Listing tasks needs an API key: anonymous callers share one pool of tasks"}
	ErrTaskTerminal        = &Error{Code: CodeUnsupportedOperation, Message: "Task is in a terminal state: send a message without taskId to start a new task"}
	ErrTaskBusy            = &Error{Code: CodeUnsupportedOperation, Message: "Task is still running: wait for it to settle or cancel it"}
	ErrServerBusy          = &Error{Code: CodeServerBusy, Message: "Server busy: too many calls are waiting; retry later", Data: map[string]any{"scope": "server"}}
	ErrShuttingDown        = &Error{Code: CodeShuttingDown, Message: "Server is shutting down; retry later"}
	ErrRateLimited         = &Error{Code: CodeRateLimited, Message: "Rate limit exceeded; retry after data.retryAfterMs milliseconds"}
	ErrCallerInFlight      = &Error{Code: CodeTooManyInFlight, Message: "Too many requests in flight for this caller; retry after data.retryAfterMs milliseconds"}
	ErrServerInFlight      = &Error{Code: CodeTooManyInFlight, Message: "Too many requests in flight; retry after data.retryAfterMs milliseconds"}
	ErrNoCredentials       = &Error{Code: CodeUnauthenticated, Message: "Authentication required: send an API key in the Authorization header (Bearer) or in X-API-Key"}
	ErrBadCredentials      = &Error{Code: CodeUnauthenticated, Message: "Invalid API key"}
	ErrExtendedCardAuth    = &Error{Code: CodeUnauthenticated, Message: "Authentication required: the extended card is served to callers with an API key"}
)

// The errors of conflicting credentials, of a revoked key's stream, of
// the throttle of failed authentications, and of a task store that cannot
// be reached (answered with HTTP 503).
var (
	ErrConflictingCredentials = &Error{Code: CodeUnauthenticated, Message: "Conflicting credentials: send one API key, in the Authorization header (Bearer) or in X-API-Key, once"}
	ErrKeyRevoked             = &Error{Code: CodeUnauthenticated, Message: "The API key was revoked: the stream is closed"}
	ErrAuthThrottled          = &Error{Code: CodeRateLimited, Message: "Too many failed authentications from this address; retry after data.retryAfterMs milliseconds"}
	ErrStoreUnavailable       = &Error{Code: CodeStoreUnavailable, Message: "Task store unavailable; retry later"}
)

// The errors of a caller's own share of the server: its calls running or
// waiting (-32050, as the server's full queue, with data.scope "caller"),
// and the bytes of its request bodies (-32052, as its request rate, with
// data.scope "bytes").
var (
	ErrCallerBusy       = &Error{Code: CodeServerBusy, Message: "Too many calls of this caller are running or waiting; retry later", Data: map[string]any{"scope": "caller"}}
	ErrBytesRateLimited = &Error{Code: CodeRateLimited, Message: "Request bytes rate exceeded; retry after data.retryAfterMs milliseconds"}
)

// QuotaExceeded returns the -32055 error of a caller that stores used of
// its limit of tasks or bytes (which: "tasks" or "bytes").
func QuotaExceeded(which string, used, limit int64) *Error {
	return &Error{
		Code: CodeQuotaExceeded,
		Message: fmt.Sprintf("Storage quota exceeded: %d of %d %s stored; wait for old tasks to expire or ask the operator for more",
			used, limit, which),
		Data: map[string]any{"quota": which, "used": used, "limit": limit},
	}
}

// TaskLimitExceeded returns the -32056 error of a task that holds
// messages messages in its history, at most limit.
func TaskLimitExceeded(messages, limit int) *Error {
	return &Error{
		Code:    CodeTaskLimitExceeded,
		Message: fmt.Sprintf("Task limit exceeded: the task holds %d messages (max %d); start a new task", messages, limit),
		Data:    map[string]any{"limit": "history", "messages": messages, "max": limit},
	}
}

// Problem is one thing wrong with a request, located by a JSON pointer.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// InvalidParams returns the -32602 error for problems. Its message names
// the first problem; data.errors lists them all.
func InvalidParams(problems ...Problem) *Error {
	msg := "Invalid parameters"
	if len(problems) > 0 {
		msg += ": " + problems[0].Path + ": " + problems[0].Message
		if n := len(problems) - 1; n == 1 {
			msg += " (and 1 more problem)"
		} else if n > 1 {
			msg += fmt.Sprintf(" (and %d more problems)", n)
		}
	}
	list := make([]any, len(problems))
	for i, p := range problems {
		list[i] = map[string]any{"path": p.Path, "message": p.Message}
	}
	return &Error{Code: CodeInvalidParams, Message: msg, Data: map[string]any{"errors": list}}
}

// The A2A codes that 1.0 added.
const (
	CodeExtensionSupportRequired = -32008
	CodeVersionNotSupported      = -32009
)

// ErrVersionNotSupported answers a request whose A2A-Version a2ad does not
// speak. ParseVersion returns it with the version asked for in its data.
var ErrVersionNotSupported = &Error{Code: CodeVersionNotSupported, Message: "Version not supported"}
