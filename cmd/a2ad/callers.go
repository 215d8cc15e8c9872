package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/callers/oidc"
	"github.com/a2ad/a2ad/internal/tick"
	"github.com/a2ad/a2ad/internal/tlsconf"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// keyAuth authenticates requests by API key, for the server.
type keyAuth struct {
	auth   *callers.Authenticator
	log    zerolog.Logger
	limits storageLimits // the defaults of keys without their own
}

var _ transport.Authenticator = keyAuth{}

func (k keyAuth) Authenticate(r *http.Request, clientAddr string) (transport.Principal, transport.AuthResult) {
	id, err := k.identify(r, clientAddr)
	switch {
	case errors.Is(err, callers.ErrNoKey):
		return transport.Principal{}, transport.NoCredentials
	case err != nil:
		// Log the failure (spec §13), never the key it presented.
		// Debug: the audit trail records every refusal; a flood of bad
		// keys must not flood the operational log.
		// The reason of a token's refusal (expired, wrong audience...)
		// helps the operator; it never holds the token.
		k.log.Debug().Err(err).Str("client_addr", clientAddr).Msg("request with invalid credentials refused")
		if errors.Is(err, callers.ErrConflictingKeys) {
			return transport.Principal{}, transport.ConflictingCredentials
		}
		return transport.Principal{}, transport.BadCredentials
	}
	p := principalOf(id, clientAddr, k.limits)
	p.SharedOwner = id.Anonymous // beside keyed callers, the anonymous pool is not one tenant
	return p, transport.Authenticated
}

// identify is the caller of r: the one its API key (or token) names when
// it presents one, else, under mutual TLS, the one whose tls_subjects hold
// its verified client certificate's subject. A certificate whose subject
// no entry holds is refused (ErrBadKey) unless a key authenticates the
// request, and one naming another caller than the key does is
// ErrConflictingKeys.
func (k keyAuth) identify(r *http.Request, clientAddr string) (callers.Identity, error) {
	subject, ok := tlsconf.ClientSubject(r.TLS)
	if !ok {
		return k.auth.Identify(r)
	}
	var keys *callers.Keys // nil without a keys file: no subject maps
	if k.auth.Registry != nil {
		keys = k.auth.Registry.Keys()
	}
	key, byCert := keys.AuthenticateSubject(subject)
	id, err := k.auth.Identify(r)
	switch noKey := errors.Is(err, callers.ErrNoKey) || (err == nil && id.Anonymous); {
	case noKey && !byCert:
		// The subject is not a secret: it shows the operator what to map.
		k.log.Debug().Str("client_addr", clientAddr).Str("tls_subject", subject).Msg("client certificate of no caller refused")
		return callers.Identity{}, callers.ErrBadKey
	case noKey:
		// No key was presented: no key hash nor id.
		return callers.Identity{CallerID: key.CallerID, Tiers: key.Tiers, Rate: key.Rate, Limits: key.Limits}, nil
	case err == nil && byCert && key.CallerID != id.CallerID:
		return callers.Identity{}, callers.ErrConflictingKeys
	}
	return id, err
}

// anonymousAuth serves every request as the anonymous caller: a server
// without a keys file.
type anonymousAuth struct {
	tiers  []string
	limits storageLimits
}

var _ transport.Authenticator = anonymousAuth{}

func (a anonymousAuth) Authenticate(_ *http.Request, clientAddr string) (transport.Principal, transport.AuthResult) {
	return principalOf(callers.Identity{Tiers: a.tiers, Anonymous: true}, clientAddr, a.limits), transport.Authenticated
}

// storageLimits are the server's default limits of a caller: on what it
// stores, on its calls running or waiting, and on its request bytes.
type storageLimits struct {
	quota      tasks.Quota
	maxHistory int
	maxCalls   int
	rateBytes  int64
	idemWindow time.Duration
}

func (c *Config) storageLimits() storageLimits {
	return storageLimits{quota: tasks.Quota{Tasks: c.QuotaTasks, Bytes: c.QuotaBytes}, maxHistory: c.MaxHistory,
		maxCalls: c.MaxCallsPerCaller, rateBytes: c.RateBytes, idemWindow: c.A2A.IdemWindow}
}

// of is the limits of a caller with own: each of its own that is set
// replaces the default.
func (d storageLimits) of(own callers.Limits) storageLimits {
	if own.QuotaTasks != nil {
		d.quota.Tasks = *own.QuotaTasks
	}
	if own.QuotaBytes != nil {
		d.quota.Bytes = *own.QuotaBytes
	}
	if own.MaxHistory != nil {
		d.maxHistory = *own.MaxHistory
	}
	if own.MaxCalls != nil {
		d.maxCalls = *own.MaxCalls
	}
	if own.RateBytes != nil {
		d.rateBytes = *own.RateBytes
	}
	if own.IdemWindow != nil {
		d.idemWindow = *own.IdemWindow
	}
	return d
}

// principalOf is the server's view of id, whose limits default to def.
// Anonymous callers share one owner (their tasks are one pool, under one
// quota) but each client address has its own rate bucket, budget of
// request bytes and count of calls, so that one noisy client does not
// starve the others.
func principalOf(id callers.Identity, clientAddr string, def storageLimits) transport.Principal {
	lim := def.of(id.Limits)
	p := transport.Principal{
		Caller: tasks.Caller{ID: id.CallerID, Tiers: id.Tiers, Quota: lim.quota, MaxHistory: lim.maxHistory,
			MaxCalls: lim.maxCalls, IdemWindow: idemWindow(lim.idemWindow)},
		Anonymous:      id.Anonymous,
		LimitKey:       "key:" + id.CallerID,
		KeyHash:        id.KeyHash,
		KeyID:          id.KeyID,
		Token:          id.Token,
		BytesPerSecond: lim.rateBytes,
	}
	if id.Anonymous {
		addr := addressKey(clientAddr)
		p.LimitKey = "anon:" + addr
		p.Caller.CallGroup = addr
	}
	if id.Rate != nil {
		p.PerSecond, p.Burst = id.Rate.PerSecond, id.Rate.Burst
	}
	return p
}

// addressKey is the rate bucket of an address: IPv6 clients are given
// whole /64s, so rotating addresses in one gains nothing.
func addressKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is6() || a.Is4In6() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// gateAdmitter applies a callers.Gate to the server's principals, and
// tells rejected (when set) of each refusal. Anonymous callers, known by
// their address only, have their buckets in the gate's bounded set.
type gateAdmitter struct {
	gate     *callers.Gate
	rejected func(rateLimited, serverWide bool)
	// rejectedBytes, when set, is told of each refusal by a budget of
	// request bytes.
	rejectedBytes func()
}

var (
	_ transport.Admitter  = gateAdmitter{}
	_ transport.ByteMeter = gateAdmitter{}
)

// TakeBytes charges a request's declared length to p's budget of request
// bytes: anonymous callers' are among the gate's bounded address budgets.
func (g gateAdmitter) TakeBytes(p transport.Principal, n int64) *transport.Denial {
	var (
		retry time.Duration
		ok    bool
	)
	if p.Anonymous {
		retry, ok = g.gate.TakeAddressBytes(p.LimitKey, p.BytesPerSecond, n)
	} else {
		retry, ok = g.gate.TakeBytes(p.LimitKey, p.BytesPerSecond, n)
	}
	if ok {
		return nil
	}
	if g.rejectedBytes != nil {
		g.rejectedBytes()
	}
	return &transport.Denial{Scope: "bytes", RateLimited: true, RetryAfter: retry}
}

// ChargeBytes charges what a body held beyond its declared length.
func (g gateAdmitter) ChargeBytes(p transport.Principal, n int64) {
	if p.Anonymous {
		g.gate.ChargeAddressBytes(p.LimitKey, p.BytesPerSecond, n)
	} else {
		g.gate.ChargeBytes(p.LimitKey, p.BytesPerSecond, n)
	}
}

func (g gateAdmitter) Admit(p transport.Principal) (func(), *transport.Denial) {
	var (
		release func()
		d       callers.Denial
		ok      bool
	)
	if p.Anonymous {
		release, d, ok = g.gate.AdmitAddress(p.LimitKey)
	} else {
		var rate *callers.Rate
		if p.PerSecond > 0 {
			rate = &callers.Rate{PerSecond: p.PerSecond, Burst: p.Burst}
		}
		release, d, ok = g.gate.Admit(p.LimitKey, rate)
	}
	if ok {
		return release, nil
	}
	scope := "caller"
	if d.Global {
		scope = "server"
	}
	if g.rejected != nil {
		g.rejected(d.RateLimited, d.Global)
	}
	return nil, &transport.Denial{Scope: scope, RateLimited: d.RateLimited, RetryAfter: d.RetryAfter}
}

// addrThrottle applies a callers.Throttle per address as the rate buckets
// are: an IPv6 client's whole /64 is one address, so rotating addresses in
// it buys no new failures.
type addrThrottle struct{ t *callers.Throttle }

var _ transport.AuthThrottle = addrThrottle{}

func (a addrThrottle) Check(addr string) (time.Duration, int, bool) {
	return a.t.Check(addressKey(addr))
}

func (a addrThrottle) Fail(addr string) { a.t.Fail(addressKey(addr)) }

// sweepBuckets forgets idle rate buckets until stop is closed.
func (m *Main) sweepBuckets(stop <-chan struct{}) {
	defer m.wg.Done()
	tick.Every(stop, sweepEvery, func() {
		m.gate.Sweep()
		if m.throttle != nil {
			m.throttle.Sweep()
		}
	})
}

// openCredentials loads the keys file, and reads the OpenID Connect
// issuer's discovery document and keys, when the config names them.
func (m *Main) openCredentials(ctx context.Context) error {
	cfg := m.Config
	if cfg.Keys != "" {
		reg, err := callers.NewRegistry(cfg.Keys)
		if err != nil {
			return fmt.Errorf("keys: %w", err)
		}
		m.registry = reg
	}
	if cfg.OIDCIssuer == "" {
		return nil
	}
	v, err := oidc.New(ctx, oidc.Config{Issuer: cfg.OIDCIssuer, Audience: cfg.OIDCAudience,
		CallerClaim: cfg.OIDCCallerClaim, TiersClaim: cfg.OIDCTiersClaim, Now: m.now, Logger: m.Logger})
	if err != nil {
		return fmt.Errorf("oidc-issuer: %w", err)
	}
	m.tokens = v
	m.onClose("oidc key refresher", func(context.Context) error { return v.Close() })
	return nil
}

// authenticator identifies callers by their keys and tokens.
func (m *Main) authenticator() *callers.Authenticator {
	cfg := m.Config
	a := &callers.Authenticator{Registry: m.registry, Anonymous: cfg.AllowAnonymous, AnonymousTiers: cfg.anonymousTiers(),
		Usage: &m.usage}
	if m.tokens != nil {
		a.Tokens = m.tokens // a nil *Verifier would be a non-nil TokenVerifier
	}
	return a
}

// cardSecurity is how the card says callers authenticate; nil when they
// do not.
func (m *Main) cardSecurity() *agentcard.Security {
	if !m.authenticates() {
		return nil
	}
	return &agentcard.Security{APIKeys: m.registry != nil, OIDCIssuer: m.Config.OIDCIssuer,
		Anonymous: m.Config.AllowAnonymous, ExtendedCard: true}
}

// authenticates reports whether requests need credentials (keys or
// tokens), unless anonymous callers are allowed.
func (m *Main) authenticates() bool { return m.registry != nil || m.tokens != nil }

// revoked reports whether p's key no longer holds in the keys in force:
// revoked, disabled or removed. Anonymous callers are never revoked.
func (m *Main) revoked(p transport.Principal) bool {
	if m.registry == nil || p.Anonymous || p.KeyHash == ([32]byte{}) {
		return false
	}
	return !m.registry.Keys().InForce(p.Caller.ID, p.KeyHash)
}

// auditLog is the audit trail's own file, reopened on SIGHUP so that log
// rotation works.
type auditLog struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openAuditLog(path string) (*auditLog, error) {
	a := &auditLog{path: path}
	if err := a.Reopen(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *auditLog) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.f.Write(p)
}

// Reopen opens the file again (a rotated file is left to its rotator).
func (a *auditLog) Reopen() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit-log: %w", err)
	}
	a.mu.Lock()
	old := a.f
	a.f = f
	a.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}

func (a *auditLog) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.f.Close()
}

// newAuditLogger builds the audit logger the config asks for: nil for
// "off", the operational log's writer for "", else its own file.
func (m *Main) newAuditLogger(opLog zerolog.Logger) (*zerolog.Logger, error) {
	switch m.Config.AuditLog {
	case "off":
		return nil, nil
	case "":
		return audit.Logger(opLog), nil
	}
	a, err := openAuditLog(m.Config.AuditLog)
	if err != nil {
		return nil, err
	}
	m.audit = a
	return audit.Logger(zerolog.New(a).With().Timestamp().Str("service", "a2ad").Logger()), nil
}

// sweepEvery is how often idle rate buckets are forgotten.
const sweepEvery = time.Minute

// idemWindow is the tasks' form of w, a window as callers reads it.
func idemWindow(w time.Duration) time.Duration {
	if w == callers.IdemOff {
		return tasks.IdemOff
	}
	return w
}
