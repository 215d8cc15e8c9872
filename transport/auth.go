package transport

import (
	"net/http"
	"strconv"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// Principal is who sent a request, as the authenticator found it.
type Principal struct {
	Caller tasks.Caller
	// Anonymous is true for a request without credentials, served because
	// the operator allows anonymous callers.
	Anonymous bool
	// SharedOwner is true when the caller's tasks are a pool it shares
	// with callers it cannot be told apart from (anonymous callers on a
	// server with keys): it may not list tasks.
	SharedOwner bool
	// LimitKey names the caller's rate bucket and in-flight count.
	LimitKey string
	// PerSecond and Burst are the caller's own rate; zero means the
	// defaults.
	PerSecond float64
	Burst     int
	// KeyHash is the SHA-256 of the key the caller presented; zero for an
	// anonymous caller. Config.Revoked reads it.
	KeyHash [32]byte
	// KeyID names that key in the audit trail; "" without one.
	KeyID string
	// Token is true for a caller identified by a token (OpenID Connect),
	// not a key.
	Token bool
	// BytesPerSecond is the caller's rate of request bytes, for
	// Config.Bytes; 0 means no limit.
	BytesPerSecond int64
}

// AuthResult says whether a request's credentials identify a principal.
type AuthResult int

// The authentication results.
const (
	// Authenticated: the principal is valid (possibly the anonymous
	// one).
	Authenticated AuthResult = iota
	// NoCredentials: the request has none and anonymous access is off.
	NoCredentials
	// BadCredentials: the request presents a key that is unknown,
	// revoked or disabled, or a credential a2ad does not take.
	BadCredentials
	// ConflictingCredentials: the request presents more than one
	// credential, and they are not one and the same key.
	ConflictingCredentials
)

// Authenticator identifies the principal of a request from its headers.
// clientAddr is the client's address (see ClientAddr), for anonymous
// callers' limits and for logs.
type Authenticator interface {
	Authenticate(r *http.Request, clientAddr string) (Principal, AuthResult)
}

// AuthThrottle limits failed authentications per client address.
type AuthThrottle interface {
	// Check reports whether a request from addr may authenticate. When
	// it may not, it returns when to retry, and how many refusals (this
	// one included) a record written now stands for: 0 when none is due,
	// the refusal being counted into a later one.
	Check(addr string) (retryAfter time.Duration, report int, ok bool)
	// Fail records a failed authentication from addr.
	Fail(addr string)
}

// Denial says why a request is not admitted now, and when to retry.
type Denial struct {
	// Scope is "caller" for a caller's own limit, "server" for a
	// server-wide cap, "auth" for the throttle of failed authentications,
	// "bytes" for a caller's rate of request bytes.
	Scope string
	// RateLimited is true for an empty token bucket (of requests or
	// bytes), false for an in-flight cap.
	RateLimited bool
	RetryAfter  time.Duration
}

// Admitter applies rate limits and in-flight caps. Admit takes what one
// request needs; release gives it back when the request ends.
type Admitter interface {
	Admit(p Principal) (release func(), d *Denial)
}

// ByteMeter limits the bytes of each caller's request bodies: a budget
// that refills at the caller's rate and may go into debt. Both methods
// must be quick; they run on every request.
type ByteMeter interface {
	// TakeBytes charges n bytes (the declared length of p's request body,
	// 0 when it is not known) to p's budget and returns nil; or, while p's
	// budget is in debt, charges nothing and says when to retry.
	TakeBytes(p Principal, n int64) *Denial
	// ChargeBytes charges n more bytes to p's budget once the body is
	// read, or gives back -n: what was read less what TakeBytes charged.
	ChargeBytes(p Principal, n int64)
}

// The challenges sent with 401 answers (RFC 6750). X-API-Key works too;
// the card's securitySchemes say so.
const (
	challengeMissing     = `Bearer realm="a2ad"`
	challengeInvalid     = `Bearer realm="a2ad", error="invalid_token"`
	challengeConflicting = `Bearer realm="a2ad", error="invalid_request"`
)

// Refusal is a call the core refuses before it reaches its method: how a
// binding answers it. Over HTTP: Status, with the headers set when their
// fields are; over gRPC, the status code that Err (or Status) maps to.
type Refusal struct {
	// Status is the HTTP status of the answer.
	Status int
	// Err is the A2A error the answer carries; nil for a refusal of the
	// transport itself (an unreadable, late or oversized body), which is
	// answered with Message alone.
	Err     *a2a.Error
	Message string
	// Challenge is the WWW-Authenticate header of a 401.
	Challenge string
	// RetryAfter is the Retry-After header, in whole seconds; "" for none.
	RetryAfter string
	// Close: the connection must close (what is left of the body cannot
	// be told from a next request).
	Close bool
}

// requestIDHeader is the response header the HTTP bindings give a
// request's id in (set by the JSON-RPC server's front middleware, which
// every route of the main listener goes through).
const requestIDHeader = "X-Request-Id"

// OpenHTTP begins a call of an HTTP binding (JSON-RPC, HTTP+JSON): the
// call, the request carrying the trace context of its headers (r itself
// when tracing is off), and the refusal of its credentials, if any. A
// refused request's body is left unread (LeaveBody).
func (c *Core) OpenHTTP(binding string, w http.ResponseWriter, r *http.Request) (*Call, *http.Request, *Refusal) {
	cl := c.Begin(binding, c.ClientAddr(r))
	cl.reqID = w.Header().Get(requestIDHeader)
	r = c.TraceRequest(cl, r)
	if ref := c.Authenticate(cl, r); ref != nil {
		LeaveBody(w, r)
		return cl, r, ref
	}
	return cl, r, nil
}

// Authenticate finds the principal of the call whose headers are those
// of r. An address that failed to authenticate too often is refused
// before its credentials are looked at, and its refusals are audited in
// summary. A binding calls it before admission (so that a refused
// request costs no body read); it answers a non-nil Refusal and stops.
func (c *Core) Authenticate(cl *Call, r *http.Request) *Refusal {
	if c.cfg.Throttle != nil {
		if retry, report, ok := c.cfg.Throttle.Check(cl.client); !ok {
			d := &Denial{Scope: "auth", RateLimited: true, RetryAfter: retry}
			cl.denial, cl.rpcErr, cl.refused = d, deniedError(d), report
			return deniedRefusal(d)
		}
	}
	p, res := c.principal(r, cl.client)
	cl.principal = p
	if res != Authenticated {
		if c.cfg.Throttle != nil {
			c.cfg.Throttle.Fail(cl.client)
		}
		cl.authFail = true
		e, challenge := authError(res)
		cl.rpcErr = e
		return &Refusal{Status: http.StatusUnauthorized, Err: e, Challenge: challenge}
	}
	return nil
}

// principal authenticates r. With no authenticator every request is the
// caller Config.Caller returns.
func (c *Core) principal(r *http.Request, clientAddr string) (Principal, AuthResult) {
	if c.cfg.Auth == nil {
		cl := c.cfg.Caller(r)
		return Principal{Caller: cl, Anonymous: cl.ID == "", LimitKey: cl.ID}, Authenticated
	}
	return c.cfg.Auth.Authenticate(r, clientAddr)
}

// authError is the answer to a request whose credentials failed.
func authError(res AuthResult) (e *a2a.Error, challenge string) {
	switch res {
	case BadCredentials:
		return a2a.ErrBadCredentials, challengeInvalid
	case ConflictingCredentials:
		return a2a.ErrConflictingCredentials, challengeConflicting
	}
	return a2a.ErrNoCredentials, challengeMissing
}

// NeedsAuth refuses an anonymous call to a method offered to
// authenticated callers only (the extended card of version v, when one
// is configured), with HTTP 401; nil when the call may go on. An
// anonymous caller (one the operator lets in) may call the 1.0
// GetExtendedAgentCard: Config.ExtendedCard answers it the public card,
// which shows nothing the well-known path does not. The JS SDK's
// getAgentCard calls it whenever the card announces an extended card,
// and would fail without a key otherwise. The 0.3 method, which says
// "authenticated" in its name, keeps the 401.
func (c *Core) NeedsAuth(cl *Call, v a2a.Version) *Refusal {
	if c.cfg.ExtendedCard == nil || !cl.principal.Anonymous || v == a2a.V10 {
		return nil
	}
	cl.authFail = true
	cl.rpcErr = a2a.ErrExtendedCardAuth
	return &Refusal{Status: http.StatusUnauthorized, Err: a2a.ErrExtendedCardAuth, Challenge: challengeMissing}
}

// deniedRefusal answers a request refused by a limit: 429 for the
// caller's own limits (requests, bytes, in flight), 503 for the server's
// cap, with Retry-After in whole seconds (rounded up) and
// data.retryAfterMs.
func deniedRefusal(d *Denial) *Refusal {
	status := http.StatusTooManyRequests // the caller's limits, and "auth"
	if d.Scope == "server" {
		status = http.StatusServiceUnavailable
	}
	secs := int64((d.RetryAfter + time.Second - 1) / time.Second)
	return &Refusal{Status: status, Err: deniedError(d), RetryAfter: strconv.FormatInt(max(secs, 1), 10)}
}

func deniedError(d *Denial) *a2a.Error {
	ms := int64((d.RetryAfter + time.Millisecond - 1) / time.Millisecond)
	base := a2a.ErrCallerInFlight
	switch {
	case d.Scope == "auth":
		base = a2a.ErrAuthThrottled
	case d.Scope == "bytes":
		base = a2a.ErrBytesRateLimited
	case d.RateLimited:
		base = a2a.ErrRateLimited
	case d.Scope == "server":
		base = a2a.ErrServerInFlight
	}
	return base.WithData(map[string]any{"retryAfterMs": max(ms, 1), "scope": d.Scope})
}
