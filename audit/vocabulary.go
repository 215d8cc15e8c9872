package audit

// The audit trail's vocabulary as one table: the fields a record carries,
// the outcomes, and each reason with its outcome and when it is used.
// docs/reference/audit.md is generated from these tables, and a test of
// cmd/a2ad fails when code writes a field or declares a reason that they
// lack, or pairs a reason with another outcome than its own.

// Record is a kind of audit record, named by its "message".
type Record string

// The kinds of records.
const (
	// RecordCall is the record of an A2A or MCP call, over any binding.
	RecordCall Record = "call"
	// RecordOperator is the record of an operator's action on the admin
	// listener (a task's cancel, a dead letter's retry or delete).
	RecordOperator Record = "operator action"
)

// Field is a field an audit record can carry.
type Field struct {
	Name string
	// Records are the kinds of records that carry it; none: every record.
	Records []Record
	// Optional: the field is left out when it has no value.
	Optional bool
	Meaning  string
}

// Fields are the fields of audit records: those of every record, then
// those of a call's record, then those of an operator action's alone.
// Read them, never change them.
var Fields = []Field{
	{Name: "level", Meaning: "always `info`: `--log-level` never drops a record"},
	{Name: "service", Meaning: "`a2ad`"},
	{Name: "audit", Meaning: "`true`: tells the records from the operational log's lines when they share its output"},
	{Name: "time", Meaning: "when the record was written (RFC 3339)"},
	{Name: "message", Meaning: "the kind of record: `call` or `operator action`"},

	{Name: "transport", Records: calls, Meaning: "the binding the call came over: `jsonrpc`, `rest`, `grpc` or `mcp`"},
	{Name: "client_addr", Records: calls, Meaning: "the client's address (behind `--trusted-proxies`, the one they forwarded)"},
	{Name: "caller", Records: calls, Meaning: "the caller's id; empty for an anonymous caller"},
	{Name: "anonymous", Records: calls, Meaning: "true for a call without credentials, served with the anonymous view"},
	{Name: "tiers", Records: calls, Meaning: "the caller's tiers"},
	{Name: "rpc_method", Records: calls, Meaning: "the method as the caller named it (over `rest` and `grpc` the 1.0 method name, or the verb and path of a request that names no operation), cut to 64 bytes"},
	{Name: "task_id", Records: both, Meaning: "the task the call was about or answered with, cut to 128 bytes (empty for none); the task an operator action was about"},
	{Name: "function_id", Records: calls, Meaning: "the function a send named, as the policy was asked about it; empty for none, or for an id that names no function"},
	{Name: "decision", Records: calls, Meaning: "the exposure policy's decision on that function: `exposed`, `hidden_prefix`, `not_opted_in`, `tier_mismatch`, `unknown_function` or `catalog_error`; empty when it was not asked"},
	{Name: "outcome", Records: both, Meaning: "the class of the end: one of the outcomes below"},
	{Name: "reason", Records: both, Meaning: "why it ended so: one of the reasons below, each of one outcome"},
	{Name: "key_id", Records: calls, Optional: true, Meaning: "the id of the key the caller presented"},
	{Name: "auth", Records: calls, Optional: true, Meaning: "`oidc` for a caller with an OpenID Connect token"},
	{Name: "code", Records: calls, Optional: true, Meaning: "the JSON-RPC error code of the error the call was answered with, over any binding (see errors.md)"},
	{Name: "state", Records: calls, Optional: true, Meaning: "the task's state when the call ended"},
	{Name: "refused", Records: calls, Optional: true, Meaning: "a summary's count: the refusals this record stands for, since the previous record for that caller (its address without one) and reason"},
	{Name: "duration_ms", Records: calls, Meaning: "how long the call took, in milliseconds (to the microsecond)"},
	{Name: "req_id", Records: calls, Meaning: "the request's id, which its answer carries (the `X-Request-Id` header, gRPC's `x-request-id` metadata) and the operational log's lines about it too"},

	{Name: "operator", Records: operator, Meaning: "`true`"},
	{Name: "action", Records: operator, Meaning: "`tasks/cancel`, `dead-letters/retry` or `dead-letters/delete`"},
	{Name: "dead_letter_id", Records: operator, Meaning: "the dead letter retried or deleted"},
	{Name: "task_caller", Records: operator, Meaning: "the caller the canceled task belongs to"},
	{Name: "remote_addr", Records: operator, Meaning: "the address the operator's request came from"},
}

var (
	calls    = []Record{RecordCall}
	operator = []Record{RecordOperator}
	both     = []Record{RecordCall, RecordOperator}
)

// OutcomeInfo is an outcome and what it means.
type OutcomeInfo struct {
	Outcome Outcome
	Meaning string
}

// Outcomes are the outcomes, in the order of their reasons. Read them,
// never change them.
var Outcomes = []OutcomeInfo{
	{OutcomeOK, "the call did what it asked (a task may still run, or wait for the client)"},
	{OutcomePolicyDenied, "the exposure policy or task ownership refused it"},
	{OutcomeTransportDenied, "authentication, a rate limit, an in-flight cap or the body timeout refused it"},
	{OutcomeClientError, "the request was wrong (bad params, an unknown task...) or its client went away"},
	{OutcomeFunctionError, "the function failed, timed out, broke its output schema or rejected the task"},
	{OutcomeServerError, "a2ad failed, or was stopping"},
}

// ReasonInfo is a reason, the outcome it belongs to, and when it is used.
type ReasonInfo struct {
	Reason  Reason
	Outcome Outcome
	When    string
}

// Reasons are every reason a record may carry, each with its one
// outcome, grouped by outcome. Read them, never change them.
var Reasons = []ReasonInfo{
	{ReasonOK, OutcomeOK, "a read or config method succeeded; an operator's dead-letter action was done"},
	{ReasonCompleted, OutcomeOK, "the task completed"},
	{ReasonCanceled, OutcomeOK, "the task is canceled (by its caller, or by the operator)"},
	{ReasonAccepted, OutcomeOK, "the task runs on (a non-blocking send)"},
	{ReasonInputRequired, OutcomeOK, "the task waits for the client's answer"},
	{ReasonAuthRequired, OutcomeOK, "the task waits for the client's authorization"},

	{ReasonDeniedHidden, OutcomePolicyDenied, "the function is in a reserved namespace"},
	{ReasonDeniedNotExposed, OutcomePolicyDenied, "the function is not opted in"},
	{ReasonDeniedTier, OutcomePolicyDenied, "none of the caller's tiers may call the function"},
	{ReasonDeniedUnknown, OutcomePolicyDenied, "no function has that id"},
	{ReasonDeniedCatalog, OutcomePolicyDenied, "the catalogue could not be read"},
	{ReasonDeniedOwner, OutcomePolicyDenied, "the task belongs to another caller (the caller saw -32001, task not found)"},

	{ReasonUnauthenticated, OutcomeTransportDenied, "no key, a bad one, or conflicting ones"},
	{ReasonAuthThrottled, OutcomeTransportDenied, "refused unchecked: too many failed authentications from the address; in summary per address (`refused`), the first at once, then at most one record every 10 s"},
	{ReasonKeyRevoked, OutcomeTransportDenied, "a stream ended because a reload revoked its key"},
	{ReasonBytesLimited, OutcomeTransportDenied, "the caller's budget of request bytes (`--rate-bytes`) is in debt: the body was not read; in summary (`refused`)"},
	{ReasonRateLimited, OutcomeTransportDenied, "the caller's rate bucket is empty; in summary (`refused`)"},
	{ReasonOverCapacity, OutcomeTransportDenied, "an in-flight cap, a full call queue or the caller's `--max-calls-per-caller`; in summary (`refused`)"},
	{ReasonBodyTimeout, OutcomeTransportDenied, "the body came later than `--read-timeout`, or slower than `--min-body-rate`; in summary over gRPC (`refused`)"},

	{ReasonNotFound, OutcomeClientError, "no such task (or push config, or dead letter); -32001"},
	{ReasonNotCancelable, OutcomeClientError, "the task cannot be canceled (it has ended); -32002"},
	{ReasonInvalid, OutcomeClientError, "a parse, envelope, method or params error; -32700, -32600, -32601, -32602"},
	{ReasonUnsupported, OutcomeClientError, "an operation, version, extension or content type a2ad does not offer here; -32003, -32004, -32005, -32007, -32008, -32009"},
	{ReasonBusyTask, OutcomeClientError, "a message to a task still running; -32004"},
	{ReasonTaskTerminal, OutcomeClientError, "a message to (or a subscription of) a finished task; -32004"},
	{ReasonQuota, OutcomeClientError, "the caller's storage quota is used up (-32055), or a task failed because its output would pass it"},
	{ReasonTaskLimit, OutcomeClientError, "the task holds as many messages as it may; -32056"},
	{ReasonClientCanceled, OutcomeClientError, "the client canceled the call or went away before its answer (a gRPC cancel, a closed connection): nothing a2ad did wrong, logged at debug level"},

	{ReasonInvokeError, OutcomeFunctionError, "the function failed"},
	{ReasonInvokeTimeout, OutcomeFunctionError, "the function ran past its timeout"},
	{ReasonInvalidOutput, OutcomeFunctionError, "the function's output broke its output schema"},
	{ReasonTooLarge, OutcomeFunctionError, "the function returned more than `--max-task-artifact-bytes`"},
	{ReasonRejected, OutcomeFunctionError, "the task was rejected, not by the policy"},

	{ReasonInterrupted, OutcomeServerError, "a restart cut the call short"},
	{ReasonShuttingDown, OutcomeServerError, "a2ad is stopping; -32051"},
	{ReasonInternalError, OutcomeServerError, "a2ad failed (a bug, or its store unavailable); -32603, -32057"},
}

// OutcomeOf returns the outcome r belongs to; "" for a reason not in
// Reasons.
func OutcomeOf(r Reason) Outcome {
	for _, ri := range Reasons {
		if ri.Reason == r {
			return ri.Outcome
		}
	}
	return ""
}
