package access

import (
	"errors"
	"net/http"
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/internal/tlsconf"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// KeyAuth authenticates requests by API key, token or client
// certificate.
type KeyAuth struct {
	Auth *callers.Authenticator
	Log  zerolog.Logger
	// Defaults are the limits of callers without their own.
	Defaults callers.Effective
}

var _ transport.Authenticator = KeyAuth{}

// Authenticate implements transport.Authenticator.
func (k KeyAuth) Authenticate(r *http.Request, clientAddr string) (transport.Principal, transport.AuthResult) {
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
		k.Log.Debug().Err(err).Str("client_addr", clientAddr).Msg("request with invalid credentials refused")
		if errors.Is(err, callers.ErrConflictingKeys) {
			return transport.Principal{}, transport.ConflictingCredentials
		}
		return transport.Principal{}, transport.BadCredentials
	}
	p := PrincipalOf(id, clientAddr, k.Defaults)
	p.SharedOwner = id.Anonymous // beside keyed callers, the anonymous pool is not one tenant
	return p, transport.Authenticated
}

// identify is the caller of r: the one its API key (or token) names when
// it presents one, else, under mutual TLS, the one whose tls_subjects hold
// its verified client certificate's subject. A certificate whose subject
// no entry holds is refused (ErrBadKey) unless a key authenticates the
// request, and one naming another caller than the key does is
// ErrConflictingKeys.
func (k KeyAuth) identify(r *http.Request, clientAddr string) (callers.Identity, error) {
	subject, ok := tlsconf.ClientSubject(r.TLS)
	if !ok {
		return k.Auth.Identify(r)
	}
	var keys *callers.Keys // nil without a keys file: no subject maps
	if k.Auth.Registry != nil {
		keys = k.Auth.Registry.Keys()
	}
	key, byCert := keys.AuthenticateSubject(subject)
	id, err := k.Auth.Identify(r)
	switch noKey := errors.Is(err, callers.ErrNoKey) || (err == nil && id.Anonymous); {
	case noKey && !byCert:
		// The subject is not a secret: it shows the operator what to map.
		k.Log.Debug().Str("client_addr", clientAddr).Str("tls_subject", subject).Msg("client certificate of no caller refused")
		return callers.Identity{}, callers.ErrBadKey
	case noKey:
		// No key was presented: no key hash nor id.
		return callers.Identity{CallerID: key.CallerID, Tiers: key.Tiers, Rate: key.Rate, Limits: key.Limits}, nil
	case err == nil && byCert && key.CallerID != id.CallerID:
		return callers.Identity{}, callers.ErrConflictingKeys
	}
	return id, err
}

// AnonymousAuth serves every request as the anonymous caller: a server
// without a keys file.
type AnonymousAuth struct {
	Tiers    []string
	Defaults callers.Effective
}

var _ transport.Authenticator = AnonymousAuth{}

// Authenticate implements transport.Authenticator.
func (a AnonymousAuth) Authenticate(_ *http.Request, clientAddr string) (transport.Principal, transport.AuthResult) {
	return PrincipalOf(callers.Identity{Tiers: a.Tiers, Anonymous: true}, clientAddr, a.Defaults), transport.Authenticated
}

// PrincipalOf is the server's view of id, whose limits default to def.
// Anonymous callers share one owner (their tasks are one pool, under one
// quota) but each client address has its own rate bucket, budget of
// request bytes and count of calls, so that one noisy client does not
// starve the others.
func PrincipalOf(id callers.Identity, clientAddr string, def callers.Effective) transport.Principal {
	lim := def.For(id.Limits, id.Rate)
	p := transport.Principal{
		Caller: tasks.Caller{ID: id.CallerID, Tiers: id.Tiers, Quota: tasks.Quota{Tasks: lim.QuotaTasks, Bytes: lim.QuotaBytes},
			MaxHistory: lim.MaxHistory, MaxCalls: lim.MaxCalls, IdemWindow: idemWindow(lim.IdemWindow)},
		Anonymous:      id.Anonymous,
		LimitKey:       "key:" + id.CallerID,
		KeyHash:        id.KeyHash,
		KeyID:          id.KeyID,
		Token:          id.Token,
		BytesPerSecond: lim.RateBytes,
	}
	if id.Anonymous {
		addr := AddressKey(clientAddr)
		p.LimitKey = "anon:" + addr
		p.Caller.CallGroup = addr
	}
	if lim.Rate != nil {
		p.PerSecond, p.Burst = lim.Rate.PerSecond, lim.Rate.Burst
	}
	return p
}

// idemWindow is the tasks' form of w, a window as callers reads it.
func idemWindow(w time.Duration) time.Duration {
	if w == callers.IdemOff {
		return tasks.IdemOff
	}
	return w
}

// AddressKey is the rate bucket of an address: IPv6 clients are given
// whole /64s, so rotating addresses in one gains nothing.
func AddressKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is6() || a.Is4In6() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}
