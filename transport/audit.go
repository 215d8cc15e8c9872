package transport

import (
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/tasks"
)

// Call is one call's passage through the core: who made it, over which
// binding, and what its one audit record says. Begin makes it, End
// writes its record. Only the call's own goroutine touches it.
type Call struct {
	start     time.Time
	transport string      // the binding: "jsonrpc", "rest", "grpc" or "mcp"
	version   a2a.Version // the method's protocol: the names its problems are located with
	client    string      // the client's address
	principal Principal
	method    string
	taskID    string
	outcome   tasks.Outcome // what the service decided: the function, the policy's decision
	denial    *Denial
	authFail  bool
	refused   int  // throttled: the refusals the record stands for; 0: no record
	revoked   bool // a stream ended by the revocation of its key
	// summarised: a refusal audited in summary (see Core.summarise)
	// although no limit refused it: one the gRPC server ended itself.
	summarised bool
	bodyLate   bool // the body missed the read timeout or the rate floor
	gone       bool // the client canceled the call before its answer
	rpcErr     *a2a.Error
	notOwner   bool
	state      a2a.TaskState // the task's state when the call ended
	failure    string        // the failure class of a failed task
	// stateful: the method's result says how a task ended (send, stream,
	// cancel), rather than what a read found.
	stateful bool
	span     trace.Span // nil unless traced (see Core.Trace)
	// reqID is the request id of an HTTP call (its X-Request-Id), for
	// the log lines about it; "" for gRPC, whose context carries a
	// logger with it (see Core.logFor).
	reqID string
	// answered gives back the bytes of the call's answer (holdAnswer);
	// End calls it. Nil: none held.
	answered func()
}

// Begin starts the call of a client at clientAddr over the binding named
// transport ("jsonrpc", "rest", "grpc").
func (c *Core) Begin(transport, clientAddr string) *Call {
	return &Call{start: time.Now(), transport: transport, client: clientAddr}
}

// SetMethod names the method the call is to (as the caller named it, for
// the audit record) and its protocol version; stateful says its answer
// tells how a task ended (send, stream, cancel) rather than what a read
// found.
func (ac *Call) SetMethod(name string, v a2a.Version, stateful bool) {
	ac.method = name
	ac.version = v
	ac.stateful = stateful
}

// Principal is who made the call, once Authenticate has run.
func (ac *Call) Principal() Principal { return ac.principal }

// Caller is the task service's view of who made the call.
func (ac *Call) Caller() tasks.Caller { return ac.principal.Caller }

// ServeOver makes the call's caller reach functions over proto: the
// policy decides its calls for that protocol (the MCP binding's calls are
// MCP's). Call it after Authenticate.
func (ac *Call) ServeOver(proto exposure.Protocol) { ac.principal.Caller.Protocol = proto }

// NoteDenied records that the policy refused the function a binding
// asked it about before sending anything (reason, not Exposed): the call
// is audited policy_denied, as a send the service refuses is. id is not
// recorded for an unknown function: it is whatever the caller sent.
func (ac *Call) NoteDenied(id string, reason exposure.Reason) {
	if reason == exposure.UnknownFunction || len(id) > maxAuditTaskID {
		id = ""
	}
	ac.outcome = tasks.Outcome{FunctionID: id, Decision: reason}
}

// Err is the error the call is answered with so far; nil for none.
func (ac *Call) Err() *a2a.Error { return ac.rpcErr }

// NoteTask records the task a call is about.
func (ac *Call) NoteTask(id string) {
	if id != "" {
		ac.taskID = id
	}
}

// NoteResult records the task a call answered with.
func (ac *Call) NoteResult(t *a2a.Task) {
	if t != nil {
		ac.taskID = t.ID
		ac.NoteStatus(&t.Status)
	}
}

// NoteStatus records the status of the call's task as it was answered.
func (ac *Call) NoteStatus(st *a2a.TaskStatus) {
	ac.state = st.State
	ac.failure = ""
	if st.Message != nil {
		if f, ok := st.Message.Metadata[tasks.FailureKey].(string); ok {
			ac.failure = f
		}
	}
}

// NoteError records the error a call answered with; err is the service's
// error it came from, if any.
func (ac *Call) NoteError(e *a2a.Error, err error) {
	ac.rpcErr = e
	if err != nil && errors.Is(err, tasks.ErrNotOwner) {
		ac.notOwner = true
	}
}

// NoteBodyLate records that the request's body (a gRPC call's message)
// missed the read timeout: the call is audited body_timeout.
func (ac *Call) NoteBodyLate() { ac.bodyLate = true }

// NoteClientCanceled records that the client canceled the call (or went
// away) before its answer: the call is audited client_canceled.
func (ac *Call) NoteClientCanceled() { ac.gone = true }

// ClientGone reports whether the client canceled the call before its
// answer (see NoteClientCanceled).
func (ac *Call) ClientGone() bool { return ac.gone }

// NoteSummarised marks a call that a binding refused before its handler
// (gRPC: an unknown method, a message over the cap, not protobuf or too
// late): a client may repeat it at will, so it is audited in summary, as
// a limit's refusals are.
func (ac *Call) NoteSummarised() { ac.summarised = true }

// throttled reports whether the request was refused by the throttle of
// failed authentications.
func (ac *Call) throttled() bool { return ac.denial != nil && ac.denial.Scope == "auth" }

// classify gives the call's outcome and reason.
func (ac *Call) classify() (audit.Outcome, audit.Reason) {
	if r := ac.transportDenial(); r != "" {
		return audit.OutcomeTransportDenied, r
	}
	if ac.gone {
		return audit.OutcomeClientError, audit.ReasonClientCanceled
	}
	if ac.rpcErr != nil {
		return classifyError(ac.rpcErr, ac.notOwner)
	}
	if d := ac.outcome.Decision; d != "" && d != exposure.Exposed {
		return audit.OutcomePolicyDenied, deniedReason(d)
	}
	if !ac.stateful || ac.state == "" {
		return audit.OutcomeOK, audit.ReasonOK
	}
	if ac.state == a2a.StateFailed {
		if v, ok := failureVerdicts[ac.failure]; ok {
			return v.outcome, v.reason
		}
		return audit.OutcomeFunctionError, audit.ReasonInvokeError
	}
	if v, ok := stateVerdicts[ac.state]; ok {
		return v.outcome, v.reason
	}
	return audit.OutcomeOK, audit.ReasonAccepted
}

// transportDenial is the reason the transport refused the call, or ""
// if it did not.
func (ac *Call) transportDenial() audit.Reason {
	switch {
	case ac.authFail:
		return audit.ReasonUnauthenticated
	case ac.throttled():
		return audit.ReasonAuthThrottled
	case ac.revoked:
		return audit.ReasonKeyRevoked
	case ac.denial != nil && ac.denial.Scope == "bytes":
		return audit.ReasonBytesLimited
	case ac.denial != nil && ac.denial.RateLimited:
		return audit.ReasonRateLimited
	case ac.denial != nil:
		return audit.ReasonOverCapacity
	case ac.bodyLate:
		return audit.ReasonBodyTimeout
	}
	return ""
}

// verdict is an audit record's outcome and reason.
type verdict struct {
	outcome audit.Outcome
	reason  audit.Reason
}

// stateVerdicts classify a stateful call by the state its task is in
// (failed aside); a state not here (a task still running) was accepted.
var stateVerdicts = map[a2a.TaskState]verdict{
	a2a.StateCompleted:     {audit.OutcomeOK, audit.ReasonCompleted},
	a2a.StateCanceled:      {audit.OutcomeOK, audit.ReasonCanceled},
	a2a.StateInputRequired: {audit.OutcomeOK, audit.ReasonInputRequired},
	a2a.StateAuthRequired:  {audit.OutcomeOK, audit.ReasonAuthRequired},
	a2a.StateRejected:      {audit.OutcomeFunctionError, audit.ReasonRejected},
}

// failureVerdicts classify a failed task by its failure class; any other
// class is the function's error.
var failureVerdicts = map[string]verdict{
	tasks.FailureTimeout:     {audit.OutcomeFunctionError, audit.ReasonInvokeTimeout},
	tasks.FailureOutput:      {audit.OutcomeFunctionError, audit.ReasonInvalidOutput},
	tasks.FailureTooLarge:    {audit.OutcomeFunctionError, audit.ReasonTooLarge},
	tasks.FailureQuota:       {audit.OutcomeClientError, audit.ReasonQuota}, // the caller's quota, not the function's fault
	tasks.FailureInterrupted: {audit.OutcomeServerError, audit.ReasonInterrupted},
}

// deniedReasons name the policy's refusals; any other is unknown.
var deniedReasons = map[exposure.Reason]audit.Reason{
	exposure.HiddenPrefix: audit.ReasonDeniedHidden,
	exposure.NotOptedIn:   audit.ReasonDeniedNotExposed,
	exposure.TierMismatch: audit.ReasonDeniedTier,
	exposure.CatalogError: audit.ReasonDeniedCatalog,
}

func deniedReason(d exposure.Reason) audit.Reason {
	if r, ok := deniedReasons[d]; ok {
		return r
	}
	return audit.ReasonDeniedUnknown
}

func classifyError(e *a2a.Error, notOwner bool) (audit.Outcome, audit.Reason) {
	switch e.Code {
	case a2a.CodeTaskNotFound:
		if notOwner {
			return audit.OutcomePolicyDenied, audit.ReasonDeniedOwner
		}
		return audit.OutcomeClientError, audit.ReasonNotFound
	case a2a.CodeTaskNotCancelable:
		return audit.OutcomeClientError, audit.ReasonNotCancelable
	case a2a.CodeParseError, a2a.CodeInvalidRequest, a2a.CodeMethodNotFound, a2a.CodeInvalidParams:
		return audit.OutcomeClientError, audit.ReasonInvalid
	case a2a.CodeUnsupportedOperation:
		switch e {
		case a2a.ErrTaskBusy:
			return audit.OutcomeClientError, audit.ReasonBusyTask
		case a2a.ErrTaskTerminal:
			return audit.OutcomeClientError, audit.ReasonTaskTerminal
		}
		return audit.OutcomeClientError, audit.ReasonUnsupported
	case a2a.CodePushNotificationNotSupported, a2a.CodeExtendedCardNotConfigured, a2a.CodeContentTypeNotSupported,
		a2a.CodeVersionNotSupported, a2a.CodeExtensionSupportRequired:
		// What the client asked for (a version, an extension) is not
		// offered here: its error, not the server's.
		return audit.OutcomeClientError, audit.ReasonUnsupported
	case a2a.CodeUnauthenticated:
		return audit.OutcomeTransportDenied, audit.ReasonUnauthenticated
	case a2a.CodeRateLimited:
		return audit.OutcomeTransportDenied, audit.ReasonRateLimited
	case a2a.CodeTooManyInFlight, a2a.CodeServerBusy:
		return audit.OutcomeTransportDenied, audit.ReasonOverCapacity
	case a2a.CodeShuttingDown:
		return audit.OutcomeServerError, audit.ReasonShuttingDown
	case a2a.CodeQuotaExceeded:
		return audit.OutcomeClientError, audit.ReasonQuota
	case a2a.CodeTaskLimitExceeded:
		return audit.OutcomeClientError, audit.ReasonTaskLimit
	}
	return audit.OutcomeServerError, audit.ReasonInternalError
}

// Caller-supplied strings are cut to these lengths in the audit log.
const (
	maxAuditMethod = 64
	maxAuditTaskID = 128
)

// End writes the call's one audit record and tells Observe; reqID is the
// request's id, for the record. The record never holds a payload or a secret: ids, names, codes and timings
// only. Requests refused by the throttle of failed authentications, by a
// caller's limits or the server's cap, or by the gRPC server before a
// handler, are told to Observe one by one, but audited in summary: one
// record stands for the refusals since the previous one from that address
// or caller ("refused"; see Config.Refusals), so that a flood cannot fill
// the disk.
func (c *Core) End(ac *Call, reqID string) {
	if ac.answered != nil {
		ac.answered()
		ac.answered = nil
	}
	if c.cfg.Audit == nil && c.cfg.Observe == nil && ac.span == nil {
		return
	}
	outcome, reason := ac.classify()
	ac.endSpan(outcome, reason)
	d := time.Since(ac.start) // one reading for the metrics and the record
	if c.cfg.Observe != nil {
		c.cfg.Observe(ac.transport, ac.method, outcome, reason, d)
	}
	if c.cfg.Audit == nil || (ac.throttled() && ac.refused == 0) || !c.summarise(ac, reason) {
		return
	}
	p := ac.principal
	ev := c.cfg.Audit.Info().
		Str("transport", ac.transport).
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
	switch {
	case p.KeyID != "":
		ev = ev.Str("key_id", p.KeyID)
	case p.Token:
		ev = ev.Str("auth", "oidc")
	}
	if ac.rpcErr != nil {
		ev = ev.Int("code", ac.rpcErr.Code)
	}
	if ac.state != "" {
		ev = ev.Str("state", string(ac.state))
	}
	if ac.refused > 0 {
		ev = ev.Int("refused", ac.refused)
	}
	ev.Float64("duration_ms", float64(d.Microseconds())/1000).
		Str("req_id", reqID).
		Msg("call")
}

// summarise counts a refusal a caller can repeat at will (a limit's
// other than the auth throttle, which counts its own; one NoteSummarised
// marks; or the service's refusal for a limit, such as -32050 for a full
// call queue or the caller's --max-calls-per-caller) into its caller's
// summary, keyed by the reason and the caller (its limit key, or its
// address when it has none), and reports whether a record is due now:
// the first of a window is, standing for the refusals since the last one
// ("refused"). Any other call: true.
func (c *Core) summarise(ac *Call, reason audit.Reason) bool {
	if c.cfg.Refusals == nil || ac.throttled() || (ac.denial == nil && !ac.summarised && !limitReason(reason)) {
		return true
	}
	who := ac.principal.LimitKey
	if who == "" {
		who = "addr " + ac.client
	}
	ac.refused = c.cfg.Refusals.Refused(string(reason) + " " + who)
	return ac.refused > 0
}

// limitReason reports whether reason is a limit's refusal, which a
// caller can repeat at will: audited in summary whoever refused it.
func limitReason(reason audit.Reason) bool {
	switch reason {
	case audit.ReasonOverCapacity, audit.ReasonRateLimited, audit.ReasonBytesLimited:
		return true
	}
	return false
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
