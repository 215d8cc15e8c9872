// Package audit is the vocabulary of a2ad's audit trail: the outcome
// classes and reasons a record carries, which operators alert on, and the
// logger records are written with. The A2A transport and the admin
// listener both write records in it. Its tables (Fields, Outcomes,
// Reasons) are the vocabulary's one statement: docs/reference/audit.md is
// generated from them.
package audit

import "github.com/rs/zerolog"

// Outcome is the class of a call's end, in the audit trail. Policy and
// transport denials, client errors and function failures are told apart.
type Outcome string

// The outcomes; Outcomes says what each means.
const (
	OutcomeOK              Outcome = "ok"
	OutcomePolicyDenied    Outcome = "policy_denied"
	OutcomeTransportDenied Outcome = "transport_denied"
	OutcomeClientError     Outcome = "client_error"
	OutcomeFunctionError   Outcome = "function_error"
	OutcomeServerError     Outcome = "server_error"
)

// Reason is why a call ended as it did, from a fixed set: operators
// alert on these values, so they never change meaning.
type Reason string

// The reasons; Reasons gives each its outcome and says when it is used.
const (
	ReasonOK            Reason = "ok"
	ReasonCompleted     Reason = "completed"
	ReasonCanceled      Reason = "canceled"
	ReasonAccepted      Reason = "accepted"
	ReasonInputRequired Reason = "input_required"
	ReasonAuthRequired  Reason = "auth_required"
	ReasonRejected      Reason = "rejected"

	ReasonDeniedHidden     Reason = "denied_hidden"
	ReasonDeniedNotExposed Reason = "denied_not_exposed"
	ReasonDeniedTier       Reason = "denied_tier"
	ReasonDeniedUnknown    Reason = "denied_unknown"
	ReasonDeniedCatalog    Reason = "denied_catalog"
	ReasonDeniedOwner      Reason = "denied_owner"

	ReasonUnauthenticated Reason = "unauthenticated"
	ReasonAuthThrottled   Reason = "auth_throttled"
	ReasonKeyRevoked      Reason = "key_revoked"
	ReasonRateLimited     Reason = "rate_limited"
	ReasonBytesLimited    Reason = "bytes_rate_limited"
	ReasonOverCapacity    Reason = "over_capacity"
	ReasonBodyTimeout     Reason = "body_timeout"

	ReasonNotFound      Reason = "not_found"
	ReasonNotCancelable Reason = "not_cancelable"
	ReasonInvalid       Reason = "invalid_request"
	ReasonUnsupported   Reason = "unsupported"
	ReasonBusyTask      Reason = "task_busy"
	ReasonQuota         Reason = "quota_exceeded"
	ReasonTaskLimit     Reason = "task_limit"
	ReasonTaskTerminal  Reason = "task_terminal"

	ReasonInvokeError   Reason = "invoke_error"
	ReasonInvokeTimeout Reason = "invoke_timeout"
	ReasonInvalidOutput Reason = "invalid_output"
	ReasonTooLarge      Reason = "output_too_large"
	ReasonInterrupted   Reason = "interrupted"

	ReasonClientCanceled Reason = "client_canceled"

	ReasonShuttingDown  Reason = "shutting_down"
	ReasonInternalError Reason = "internal_error"
)

// Logger returns l set up for audit records, with "audit": true and no
// level filter of its own, so that --log-level never drops one. Write
// each record at info level (a record without one shows as "???" in
// console logs).
func Logger(l zerolog.Logger) *zerolog.Logger {
	a := l.Level(zerolog.TraceLevel).With().Bool("audit", true).Logger()
	return &a
}
