package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/callers/oidc"
	"github.com/a2ad/a2ad/internal/tick"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/access"
)

// authThrottle is the core's throttle of failed authentications: nil
// (not a nil *Throttle in an interface) when there is none.
func (m *Main) authThrottle() transport.AuthThrottle {
	if m.throttle == nil {
		return nil
	}
	return access.Throttle{T: m.throttle}
}

// sweepBuckets forgets idle rate buckets until stop is closed.
func (m *Main) sweepBuckets(stop <-chan struct{}) {
	defer m.wg.Done()
	tick.Every(stop, sweepEvery, func() {
		m.gate.Sweep()
		m.refusals.Sweep()
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
	a := &callers.Authenticator{Registry: m.registry, Anonymous: cfg.AllowAnonymous, AnonymousTiers: cfg.AnonymousTierList(),
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

// tiersNow is the tiers p's key has in the keys file in force (a reload
// may change them); a caller without a key (anonymous, a token) keeps
// those it came with, as does a key no longer in force (its streams end).
func (m *Main) tiersNow(p transport.Principal) []string {
	if m.registry == nil || p.Anonymous || p.KeyHash == ([32]byte{}) {
		return p.Caller.Tiers
	}
	if tiers, ok := m.registry.Keys().TiersOf(p.Caller.ID, p.KeyHash); ok {
		return tiers
	}
	return p.Caller.Tiers
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
	a, err := audit.OpenFile(m.Config.AuditLog)
	if err != nil {
		return nil, err
	}
	m.audit = a
	return audit.Logger(zerolog.New(a).With().Timestamp().Str("service", "a2ad").Logger()), nil
}

// sweepEvery is how often idle rate buckets are forgotten.
const sweepEvery = time.Minute
