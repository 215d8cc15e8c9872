package server

import (
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/tasks"
)

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

	ReasonShuttingDown  Reason = "shutting_down"
	ReasonInternalError Reason = "internal_error"
)

// ReasonBytesLimited: the caller's rate of request bytes (--rate-bytes) is
// spent; the body was not read.
const ReasonBytesLimited Reason = "bytes_rate_limited"

// auditCall gathers what one request's audit record says. Only the
// request's own goroutine writes it.
type auditCall struct {
	start     time.Time
	client    string // the client's address
	principal Principal
	method    string
	taskID    string
	outcome   tasks.Outcome // what the service decided: the function, the policy's decision
	denial    *Denial
	authFail  bool
	refused   int  // throttled: the refusals the record stands for; 0: no record
	revoked   bool // a stream ended by the revocation of its key
	bodyLate  bool // the body missed the read timeout or the rate floor
	rpcErr    *a2a.Error
	notOwner  bool
	state     a2a.TaskState // the task's state when the call ended
	failure   string        // the failure class of a failed task
	// stateful: the method's result says how a task ended (send, stream,
	// cancel), rather than what a read found.
	stateful bool
}

// noteTask records the task a call is about.
func (ac *auditCall) noteTask(id string) {
	if id != "" {
		ac.taskID = id
	}
}

// noteResult records the task a call answered with.
func (ac *auditCall) noteResult(t *a2a.Task) {
	if t != nil {
		ac.taskID = t.ID
		ac.noteStatus(&t.Status)
	}
}

func (ac *auditCall) noteStatus(st *a2a.TaskStatus) {
	ac.state = st.State
	ac.failure = ""
	if st.Message != nil {
		if f, ok := st.Message.Metadata[tasks.FailureKey].(string); ok {
			ac.failure = f
		}
	}
}

// noteError records the error a call answered with; err is the service's
// error it came from, if any.
func (ac *auditCall) noteError(e *a2a.Error, err error) {
	ac.rpcErr = e
	if err != nil && errors.Is(err, tasks.ErrNotOwner) {
		ac.notOwner = true
	}
}

// throttled reports whether the request was refused by the throttle of
// failed authentications.
func (ac *auditCall) throttled() bool { return ac.denial != nil && ac.denial.Scope == "auth" }

// classify gives the call's outcome and reason.
func (ac *auditCall) classify() (Outcome, Reason) {
	switch {
	case ac.authFail:
		return OutcomeTransportDenied, ReasonUnauthenticated
	case ac.throttled():
		return OutcomeTransportDenied, ReasonAuthThrottled
	case ac.revoked:
		return OutcomeTransportDenied, ReasonKeyRevoked
	case ac.denial != nil && ac.denial.Scope == "bytes":
		return OutcomeTransportDenied, ReasonBytesLimited
	case ac.denial != nil && ac.denial.RateLimited:
		return OutcomeTransportDenied, ReasonRateLimited
	case ac.denial != nil:
		return OutcomeTransportDenied, ReasonOverCapacity
	case ac.bodyLate:
		return OutcomeTransportDenied, ReasonBodyTimeout
	case ac.rpcErr != nil:
		return classifyError(ac.rpcErr, ac.notOwner)
	}
	if d := ac.outcome.Decision; d != "" && d != exposure.Exposed {
		return OutcomePolicyDenied, deniedReason(d)
	}
	if !ac.stateful || ac.state == "" {
		return OutcomeOK, ReasonOK
	}
	switch ac.state {
	case a2a.StateCompleted:
		return OutcomeOK, ReasonCompleted
	case a2a.StateCanceled:
		return OutcomeOK, ReasonCanceled
	case a2a.StateInputRequired:
		return OutcomeOK, ReasonInputRequired
	case a2a.StateAuthRequired:
		return OutcomeOK, ReasonAuthRequired
	case a2a.StateRejected:
		return OutcomeFunctionError, ReasonRejected
	case a2a.StateFailed:
		switch ac.failure {
		case tasks.FailureTimeout:
			return OutcomeFunctionError, ReasonInvokeTimeout
		case tasks.FailureOutput:
			return OutcomeFunctionError, ReasonInvalidOutput
		case tasks.FailureTooLarge:
			return OutcomeFunctionError, ReasonTooLarge
		case tasks.FailureInterrupted:
			return OutcomeServerError, ReasonInterrupted
		}
		return OutcomeFunctionError, ReasonInvokeError
	}
	return OutcomeOK, ReasonAccepted
}

func deniedReason(d exposure.Reason) Reason {
	switch d {
	case exposure.HiddenPrefix:
		return ReasonDeniedHidden
	case exposure.NotOptedIn:
		return ReasonDeniedNotExposed
	case exposure.TierMismatch:
		return ReasonDeniedTier
	case exposure.CatalogError:
		return ReasonDeniedCatalog
	}
	return ReasonDeniedUnknown
}

func classifyError(e *a2a.Error, notOwner bool) (Outcome, Reason) {
	switch e.Code {
	case a2a.CodeTaskNotFound:
		if notOwner {
			return OutcomePolicyDenied, ReasonDeniedOwner
		}
		return OutcomeClientError, ReasonNotFound
	case a2a.CodeTaskNotCancelable:
		return OutcomeClientError, ReasonNotCancelable
	case a2a.CodeParseError, a2a.CodeInvalidRequest, a2a.CodeMethodNotFound, a2a.CodeInvalidParams:
		return OutcomeClientError, ReasonInvalid
	case a2a.CodeUnsupportedOperation:
		switch e {
		case a2a.ErrTaskBusy:
			return OutcomeClientError, ReasonBusyTask
		case a2a.ErrTaskTerminal:
			return OutcomeClientError, ReasonTaskTerminal
		}
		return OutcomeClientError, ReasonUnsupported
	case a2a.CodePushNotificationNotSupported, a2a.CodeExtendedCardNotConfigured, a2a.CodeContentTypeNotSupported:
		return OutcomeClientError, ReasonUnsupported
	case a2a.CodeUnauthenticated:
		return OutcomeTransportDenied, ReasonUnauthenticated
	case a2a.CodeRateLimited:
		return OutcomeTransportDenied, ReasonRateLimited
	case a2a.CodeTooManyInFlight, a2a.CodeServerBusy:
		return OutcomeTransportDenied, ReasonOverCapacity
	case a2a.CodeShuttingDown:
		return OutcomeServerError, ReasonShuttingDown
	case a2a.CodeQuotaExceeded:
		return OutcomeClientError, ReasonQuota
	case a2a.CodeTaskLimitExceeded:
		return OutcomeClientError, ReasonTaskLimit
	}
	return OutcomeServerError, ReasonInternalError
}

// Caller-supplied strings are cut to these lengths in the audit log.
const (
	maxAuditMethod = 64
	maxAuditTaskID = 128
)

// writeAudit writes the call's one audit record and tells Observe. The
// record never holds a payload or a secret: ids, names, codes and timings
// only. Requests refused by the throttle of failed authentications are
// told to Observe one by one, but audited in summary: one record stands
// for the refusals since the previous one from that address ("refused"),
// so that a flood cannot fill the disk.
func (s *Server) writeAudit(ac *auditCall, reqID string) {
	if s.cfg.Audit == nil && s.cfg.Observe == nil {
		return
	}
	outcome, reason := ac.classify()
	if s.cfg.Observe != nil {
		s.cfg.Observe(ac.method, outcome, reason, time.Since(ac.start))
	}
	if s.cfg.Audit == nil || (ac.throttled() && ac.refused == 0) {
		return
	}
	p := ac.principal
	ev := s.cfg.Audit.Log().
		Str("client_addr", ac.client).
		Str("caller", p.Caller.ID).
		Bool("anonymous", p.Anonymous).
		Strs("tiers", p.Caller.Tiers).
		Str("rpc_method", truncate(ac.method, maxAuditMethod)).
		Str("task_id", truncate(ac.taskID, maxAuditTaskID)).
		Str("function_id", ac.outcome.FunctionID).
		Str("decision", string(ac.outcome.Decision)).
		Str("outcome", string(outcome)).
		Str("reason", string(reason))
	if ac.rpcErr != nil {
		ev = ev.Int("code", ac.rpcErr.Code)
	}
	if ac.state != "" {
		ev = ev.Str("state", string(ac.state))
	}
	if ac.refused > 0 {
		ev = ev.Int("refused", ac.refused)
	}
	ev.Float64("duration_ms", float64(time.Since(ac.start).Microseconds())/1000).
		Str("req_id", reqID).
		Msg("call")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary, so the record stays valid UTF-8.
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// AuditLogger returns l set up for audit records: every record at no
// level (so a level filter never drops one) with "audit": true.
func AuditLogger(l zerolog.Logger) *zerolog.Logger {
	a := l.Level(zerolog.TraceLevel).With().Bool("audit", true).Logger()
	return &a
}
