// Package audit is the vocabulary of a2ad's audit trail: the outcome
// classes and reasons a record carries, which operators alert on, and the
// logger records are written with. The A2A transport and the admin
// listener both write records in it.
package audit

import "github.com/rs/zerolog"

// Outcome is the class of a call's end, in the audit trail. Policy and
// transport denials, client errors and function failures are told apart.
type Outcome string

// The outcomes.
const (
	OutcomeOK              Outcome = "ok"
	OutcomePolicyDenied    Outcome = "policy_denied"    // the exposure policy or task ownership refused it
	OutcomeTransportDenied Outcome = "transport_denied" // authentication, rate limit, in-flight cap or body timeout refused it
	OutcomeClientError     Outcome = "client_error"     // the request was wrong: bad params, unknown task...
	OutcomeFunctionError   Outcome = "function_error"   // the function failed, timed out or broke its schema
	OutcomeServerError     Outcome = "server_error"     // a2ad failed, is busy or is stopping
)

// Reason is why a call ended as it did, from a fixed set: operators
// alert on these values, so they never change meaning.
type Reason string

// The reasons.
const (
	ReasonOK            Reason = "ok"             // a read or config method succeeded
	ReasonCompleted     Reason = "completed"      // the task completed
	ReasonCanceled      Reason = "canceled"       // the task is canceled
	ReasonAccepted      Reason = "accepted"       // the task runs on (a non-blocking send)
	ReasonInputRequired Reason = "input_required" // the task waits for the client
	ReasonAuthRequired  Reason = "auth_required"
	ReasonRejected      Reason = "rejected" // the task was rejected, not by policy

	ReasonDeniedHidden     Reason = "denied_hidden"      // the function is in a reserved namespace
	ReasonDeniedNotExposed Reason = "denied_not_exposed" // the function is not opted in
	ReasonDeniedTier       Reason = "denied_tier"        // none of the caller's tiers may call it
	ReasonDeniedUnknown    Reason = "denied_unknown"     // no function has that id
	ReasonDeniedCatalog    Reason = "denied_catalog"     // the catalogue could not be read
	ReasonDeniedOwner      Reason = "denied_owner"       // the task belongs to another caller

	ReasonUnauthenticated Reason = "unauthenticated" // no key, a bad one, or conflicting ones
	ReasonAuthThrottled   Reason = "auth_throttled"  // refused unchecked: too many failed authentications from the address
	ReasonKeyRevoked      Reason = "key_revoked"     // a stream ended because its key was revoked
	ReasonRateLimited     Reason = "rate_limited"
	ReasonOverCapacity    Reason = "over_capacity" // an in-flight cap, or the call queue is full
	ReasonBodyTimeout     Reason = "body_timeout"  // the body came later than the read timeout, or slower than the rate floor

	ReasonNotFound      Reason = "not_found" // no such task (or push config)
	ReasonNotCancelable Reason = "not_cancelable"
	ReasonInvalid       Reason = "invalid_request" // parse, envelope, method or params error
	ReasonUnsupported   Reason = "unsupported"     // an operation a2ad does not offer here
	ReasonBusyTask      Reason = "task_busy"       // a message to a task still running
	ReasonQuota         Reason = "quota_exceeded"  // the caller's storage quota is used up
	ReasonTaskLimit     Reason = "task_limit"      // the task holds as many messages as it may
	ReasonTaskTerminal  Reason = "task_terminal"   // a message to (or a subscription of) a finished task

	ReasonInvokeError   Reason = "invoke_error"
	ReasonInvokeTimeout Reason = "invoke_timeout"
	ReasonInvalidOutput Reason = "invalid_output"
	ReasonTooLarge      Reason = "output_too_large"
	ReasonInterrupted   Reason = "interrupted"

	// ReasonClientCanceled: the client went away (canceled the call or
	// closed its connection) before the answer; nothing a2ad did wrong.
	ReasonClientCanceled Reason = "client_canceled"

	ReasonShuttingDown  Reason = "shutting_down"
	ReasonInternalError Reason = "internal_error"
)

// ReasonBytesLimited: the caller's rate of request bytes (--rate-bytes) is
// spent; the body was not read.
const ReasonBytesLimited Reason = "bytes_rate_limited"

// Logger returns l set up for audit records, with "audit": true and no
// level filter of its own, so that --log-level never drops one. Write
// each record at info level (a record without one shows as "???" in
// console logs).
func Logger(l zerolog.Logger) *zerolog.Logger {
	a := l.Level(zerolog.TraceLevel).With().Bool("audit", true).Logger()
	return &a
}
