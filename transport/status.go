package transport

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/a2ad/a2ad/a2a"
)

// Status is how the HTTP+JSON and gRPC bindings answer an A2A error: an
// HTTP status, and the google.rpc.Code (its number and name) that the
// google.rpc.Status body and the gRPC status carry.
type Status struct {
	HTTP int
	Code int // google.rpc.Code, as gRPC's codes.Code numbers it
	Name string
}

// The google.rpc.Code values the bindings use.
var (
	statusInvalidArgument    = Status{http.StatusBadRequest, 3, "INVALID_ARGUMENT"}
	statusFailedPrecondition = Status{http.StatusBadRequest, 9, "FAILED_PRECONDITION"}
	statusNotFound           = Status{http.StatusNotFound, 5, "NOT_FOUND"}
	statusInternal           = Status{http.StatusInternalServerError, 13, "INTERNAL"}
	statusUnavailable        = Status{http.StatusServiceUnavailable, 14, "UNAVAILABLE"}
	statusExhausted          = Status{http.StatusTooManyRequests, 8, "RESOURCE_EXHAUSTED"}
	statusUnauthenticated    = Status{http.StatusUnauthorized, 16, "UNAUTHENTICATED"}
)

// errorStatuses map the A2A error codes to their statuses: the A2A ones
// as the 1.0.1 spec's table has them, a2ad's own by what they mean (a
// busy or unavailable server, a limit, a missing key). A code not here
// is INTERNAL.
var errorStatuses = map[int]Status{
	a2a.CodeParseError:                   statusInvalidArgument,
	a2a.CodeInvalidRequest:               statusInvalidArgument,
	a2a.CodeMethodNotFound:               statusNotFound,
	a2a.CodeInvalidParams:                statusInvalidArgument,
	a2a.CodeInternalError:                statusInternal,
	a2a.CodeTaskNotFound:                 statusNotFound,
	a2a.CodeTaskNotCancelable:            statusFailedPrecondition,
	a2a.CodePushNotificationNotSupported: statusFailedPrecondition,
	a2a.CodeUnsupportedOperation:         statusFailedPrecondition,
	a2a.CodeContentTypeNotSupported:      statusInvalidArgument,
	a2a.CodeInvalidAgentResponse:         statusInternal,
	a2a.CodeExtendedCardNotConfigured:    statusFailedPrecondition,
	a2a.CodeExtensionSupportRequired:     statusFailedPrecondition,
	a2a.CodeVersionNotSupported:          statusFailedPrecondition,
	a2a.CodeServerBusy:                   statusUnavailable,
	a2a.CodeShuttingDown:                 statusUnavailable,
	a2a.CodeRateLimited:                  statusExhausted,
	a2a.CodeTooManyInFlight:              statusExhausted,
	a2a.CodeUnauthenticated:              statusUnauthenticated,
	a2a.CodeQuotaExceeded:                statusExhausted,
	a2a.CodeTaskLimitExceeded:            statusFailedPrecondition,
	a2a.CodeStoreUnavailable:             statusUnavailable,
}

// StatusOf is the status that answers e.
func StatusOf(e *a2a.Error) Status {
	if s, ok := errorStatuses[e.Code]; ok {
		return s
	}
	return statusInternal
}

// SetHeaders sets the headers a refusal's answer carries over HTTP:
// WWW-Authenticate, Retry-After, and Connection: close, each where the
// refusal has one.
func (ref *Refusal) SetHeaders(h http.Header) {
	if ref.Challenge != "" {
		h.Set("WWW-Authenticate", ref.Challenge)
	}
	if ref.RetryAfter != "" {
		h.Set("Retry-After", ref.RetryAfter)
	}
	if ref.Close {
		h.Set("Connection", "close")
	}
}

// StatusOfRefusal is the status that answers a refusal: its own HTTP
// status (a server-wide cap is 503, a caller's 429), with the code that
// status stands for.
func StatusOfRefusal(ref *Refusal) Status {
	var s Status
	if ref.Err != nil {
		s = StatusOf(ref.Err)
	} else {
		s = statusInvalidArgument
	}
	switch ref.Status {
	case http.StatusServiceUnavailable:
		s = statusUnavailable
	case http.StatusTooManyRequests, http.StatusRequestEntityTooLarge:
		s = statusExhausted
	case http.StatusRequestTimeout:
		s = Status{Code: 4, Name: "DEADLINE_EXCEEDED"}
	}
	s.HTTP = ref.Status
	return s
}

// RefusalError is the A2A error a refusal is answered with: its own, or,
// for a refusal of the transport (a body too late, too large or
// unreadable), -32600 with the refusal's message.
func RefusalError(ref *Refusal) *a2a.Error {
	if ref.Err != nil {
		return ref.Err
	}
	return &a2a.Error{Code: a2a.CodeInvalidRequest, Message: ref.Message}
}

// ResumeKey is the metadata key (params.metadata over JSON-RPC and
// HTTP+JSON) a client may resume a stream with instead of the
// Last-Event-ID header: the last event id (sequence number) it saw, as a
// number or a string.
const ResumeKey = "a2ad.lastEventId"

// ResumePoint is where a resuming client left off: header (the
// Last-Event-ID header, or gRPC's last-event-id metadata), else
// meta[ResumeKey]; nil when neither is set. The error names the one that
// is not a non-negative integer; headerName is how the header is called
// in the caller's protocol.
func ResumePoint(header, headerName string, meta map[string]any) (*uint64, *a2a.Error) {
	var mn *uint64
	if v, ok := meta[ResumeKey]; ok {
		if mn = resumeValue(v); mn == nil {
			return nil, a2a.InvalidParams(a2a.Problem{Path: "/metadata/" + ResumeKey, Message: "must be a non-negative integer"})
		}
	}
	if h := strings.TrimSpace(header); h != "" {
		n, err := strconv.ParseUint(h, 10, 64)
		if err != nil {
			return nil, a2a.InvalidParams(a2a.Problem{Path: headerName, Message: "must be a non-negative integer"})
		}
		return &n, nil
	}
	return mn, nil
}

func resumeValue(v any) *uint64 {
	switch x := v.(type) {
	case float64:
		if x >= 0 && x == float64(uint64(x)) {
			n := uint64(x)
			return &n
		}
	case string:
		if n, err := strconv.ParseUint(strings.TrimSpace(x), 10, 64); err == nil {
			return &n
		}
	}
	return nil
}

// OnePage refuses a page token of a push config list: every config fits
// on one page, and a2ad never hands out a token. path names the token's
// field.
func OnePage(path, token string) *a2a.Error {
	if token == "" {
		return nil
	}
	return a2a.InvalidParams(a2a.Problem{Path: path, Message: "is not a token this server issued (every config fits on one page)"})
}
