package jsonrpc

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

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

// principal authenticates r. With no authenticator every request is the
// caller Config.Caller returns.
func (s *Server) principal(r *http.Request, clientAddr string) (Principal, AuthResult) {
	if s.cfg.Auth == nil {
		c := s.cfg.Caller(r)
		return Principal{Caller: c, Anonymous: c.ID == "", LimitKey: c.ID}, Authenticated
	}
	return s.cfg.Auth.Authenticate(r, clientAddr)
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

// unauthorized answers 401 with a JSON-RPC error body (id as given, null
// when the body was not read) and challenge.
func (s *Server) unauthorized(c echo.Context, wire a2a.Version, id []byte, e *a2a.Error, challenge string) error {
	c.Response().Header().Set("WWW-Authenticate", challenge)
	return c.Blob(http.StatusUnauthorized, echo.MIMEApplicationJSON, appendErrorFor(nil, wire, id, e))
}

// denied answers a request refused by a limit: 429 for the caller's own
// limits (requests, bytes, in flight), 503 for the server's cap, with Retry-After in whole seconds
// (rounded up) and data.retryAfterMs.
func (s *Server) denied(c echo.Context, wire a2a.Version, id []byte, d *Denial) error {
	e := deniedError(d)
	status := http.StatusTooManyRequests // the caller's limits, and "auth"
	if d.Scope == "server" {
		status = http.StatusServiceUnavailable
	}
	secs := int64((d.RetryAfter + time.Second - 1) / time.Second)
	c.Response().Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	return c.Blob(status, echo.MIMEApplicationJSON, appendErrorFor(nil, wire, id, e))
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

type principalKey struct{}

// principalFrom returns the principal the request was admitted as.
func principalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// callerOf is the caller of an admitted request.
func (s *Server) callerOf(r *http.Request) tasks.Caller {
	if p, ok := principalFrom(r.Context()); ok {
		return p.Caller
	}
	return s.cfg.Caller(r)
}
