package transporttest

import "github.com/a2ad/a2ad/a2a"

// ErrorCase is how one A2A error goes on the wire of each binding: the
// JSON-RPC code is Err's; HTTP+JSON answers with HTTP and Status (the
// google.rpc.Code name), gRPC with GRPC (its number); the ErrorInfo of
// every binding carries Reason and Domain.
type ErrorCase struct {
	Err            *a2a.Error
	HTTP, GRPC     int
	Status         string
	Reason, Domain string
}

// The ErrorInfo domains.
const (
	DomainA2A  = "a2a-protocol.org"
	DomainA2AD = "github.com/a2ad/a2ad"
)

// ErrorCases are the errors a task service may answer, written out from
// the A2A 1.0.1 spec's mapping table (§5.4, §10.6, §11.6: code, gRPC
// status, HTTP status, ErrorInfo reason) for the A2A ones, and from
// README's error table for a2ad's own (-32050..-32057, a2ad's domain).
// The tests of each binding answer a GetTask with each and pin the wire;
// they are written here once, independently of transport's map, so a
// change to that map shows as a test failure.
var ErrorCases = []ErrorCase{
	{a2a.ErrTaskNotFound, 404, 5, "NOT_FOUND", "TASK_NOT_FOUND", DomainA2A},
	{a2a.ErrTaskNotCancelable, 400, 9, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE", DomainA2A},
	{a2a.ErrPushNotSupported, 400, 9, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED", DomainA2A},
	{a2a.ErrUnsupportedOp, 400, 9, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION", DomainA2A},
	{&a2a.Error{Code: a2a.CodeContentTypeNotSupported, Message: "Incompatible content types"}, 400, 3, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED", DomainA2A},
	{&a2a.Error{Code: a2a.CodeInvalidAgentResponse, Message: "Invalid agent response"}, 500, 13, "INTERNAL", "INVALID_AGENT_RESPONSE", DomainA2A},
	{a2a.ErrExtendedCardNotConf, 400, 9, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED", DomainA2A},
	{&a2a.Error{Code: a2a.CodeExtensionSupportRequired, Message: "Extension support required"}, 400, 9, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED", DomainA2A},
	// v1.0.1's FAILED_PRECONDITION, where v1.0.0 had UNIMPLEMENTED.
	{a2a.ErrVersionNotSupported, 400, 9, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED", DomainA2A},
	{a2a.InvalidParams(), 400, 3, "INVALID_ARGUMENT", "INVALID_PARAMS", DomainA2AD},
	{a2a.ErrInternal, 500, 13, "INTERNAL", "INTERNAL_ERROR", DomainA2AD},

	{a2a.ErrServerBusy, 503, 14, "UNAVAILABLE", "SERVER_BUSY", DomainA2AD},
	{a2a.ErrShuttingDown, 503, 14, "UNAVAILABLE", "SHUTTING_DOWN", DomainA2AD},
	{a2a.ErrRateLimited, 429, 8, "RESOURCE_EXHAUSTED", "RATE_LIMITED", DomainA2AD},
	{a2a.ErrCallerInFlight, 429, 8, "RESOURCE_EXHAUSTED", "TOO_MANY_IN_FLIGHT", DomainA2AD},
	{a2a.ErrBadCredentials, 401, 16, "UNAUTHENTICATED", "UNAUTHENTICATED", DomainA2AD},
	{a2a.QuotaExceeded("tasks", 10, 10), 429, 8, "RESOURCE_EXHAUSTED", "STORAGE_QUOTA_EXCEEDED", DomainA2AD},
	{a2a.TaskLimitExceeded(100, 100), 400, 9, "FAILED_PRECONDITION", "TASK_LIMIT_EXCEEDED", DomainA2AD},
	{a2a.ErrStoreUnavailable, 503, 14, "UNAVAILABLE", "STORE_UNAVAILABLE", DomainA2AD},
}
