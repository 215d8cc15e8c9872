package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
	"github.com/a2ad/a2ad/internal/otelx"
)

// Validate checks the settings a server needs, naming the field at fault.
// The checks run in order and the first that fails is the answer.
func (c *Config) Validate() error {
	err := firstError(
		failIf(c.Catalog == "", "catalog: no catalogue file given (--catalog or A2AD_CATALOG)"),
		failIf(c.Store == "", "store: no store file given"),
		// The base URL defaults to the listener's address, which names no
		// host a client can reach when it is every address.
		failIf(c.BaseURL == "" && bindsAll(c.Listen), "listen %s: listening on all addresses needs --base-url, the URL clients reach a2ad at", c.Listen),
		failIf(c.StoreMaxConns <= 0 || c.StoreMaxConns > 1000, "store-max-conns: must be 1 to 1000, not %d", c.StoreMaxConns),
		failIf(c.Format != "text" && c.Format != "json", "format: must be text or json, not %q", c.Format),
		failIf(strings.Contains(c.Tier, ","), "tier: one tier name, not a list (%q): the server-wide tier caps every caller; a caller of the keys file may have several", c.Tier),
		failIf(c.Protocol != "a2a" && c.Protocol != "mcp", "protocol: must be a2a or mcp, not %q", c.Protocol),
		failIf(c.LogFormat != "json" && c.LogFormat != "console" && c.LogFormat != "auto", "log-format: must be json, console or auto, not %q", c.LogFormat),
		positive("max-body-bytes", c.MaxBodyBytes),
		positive("max-concurrent", c.MaxConcurrent),
		notNegative("max-queue", c.MaxQueue, ""),
		positive("blocking-timeout", c.BlockingTimeout),
		notNegative("mcp-task-after", c.MCPTaskAfter, "handles"),
		positive("retention", c.Retention),
		positive("retention-interval", c.RetentionInterval),
		failIf(c.LeaseTTL < 100*time.Millisecond, "lease-ttl: must be at least 100ms, not %s", c.LeaseTTL),
		positive("sse-keepalive", c.KeepAlive),
		positive("read-header-timeout", c.ReadHeaderTimeout),
		positive("read-timeout", c.ReadTimeout),
		notNegative("min-body-rate", c.MinBodyRate, ""),
		positive("idle-timeout", c.IdleTimeout),
		notNegative("max-conns", c.MaxConns, ""),
		notNegative("max-conns-per-ip", c.MaxConnsPerIP, ""),
		positive("push-timeout", c.PushTimeout),
		positive("push-max-attempts", c.PushMaxAttempts),
		positive("push-concurrency", c.PushConcurrency),
		failIf(c.OTelEndpoint != "" && otelx.CheckEndpoint(c.OTelEndpoint) != nil,
			"otel-endpoint: must be an http or https URL with a host and no query (a collector's base, such as http://127.0.0.1:4318), not %q", c.OTelEndpoint),
	)
	if err != nil {
		return err
	}
	if err := c.validateCallers(); err != nil {
		return err
	}
	if _, err := c.TrustedProxyList(); err != nil {
		return err
	}
	if _, err := c.CORS(); err != nil {
		return err
	}
	return c.validateTLS()
}

// validateOIDC checks the OpenID Connect settings.
func (c *Config) validateOIDC() error {
	if c.OIDCIssuer == "" {
		return failIf(c.OIDCAudience != "", "oidc-audience: only means something with --oidc-issuer")
	}
	u, err := url.Parse(c.OIDCIssuer)
	loopback := false
	if err == nil {
		ip, _ := netip.ParseAddr(u.Hostname())
		loopback = u.Hostname() == "localhost" || ip.IsLoopback()
	}
	return firstError(
		failIf(err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || !(u.Scheme == "https" || u.Scheme == "http" && loopback),
			"oidc-issuer: must be an https URL (http only on a loopback address), not %q", c.OIDCIssuer),
		failIf(c.OIDCAudience == "", "oidc-audience: required with --oidc-issuer (what its tokens' aud must hold)"),
		failIf(c.OIDCCallerClaim == "", "oidc-caller-claim: must name a claim"),
		failIf(c.OIDCTiersClaim == "", "oidc-tiers-claim: must name a claim"),
	)
}

// validateCallers checks the settings of callers: anonymous access, and
// the rates, caps and quotas that bound each caller and the server.
func (c *Config) validateCallers() error {
	return firstError(
		failIf(c.AllowAnonymous && c.Keys == "" && c.OIDCIssuer == "", "allow-anonymous: only means something with --keys or --oidc-issuer (without them every caller is anonymous)"),
		c.validateOIDC(),
		// Without a tier, anonymous callers would see every skill the
		// server shows, more than any key.
		failIf(c.AllowAnonymous && len(c.AnonymousTierList()) == 0, "allow-anonymous: needs --anonymous-tier, the tiers anonymous callers may see (e.g. public)"),
		finiteRate("rate", c.RatePerSecond),
		failIf(c.RatePerSecond > 0 && c.RateBurst < 1, "rate-burst: must be at least 1, not %d", c.RateBurst),
		notNegative("max-inflight-per-caller", c.MaxInFlightPerCaller, ""),
		notNegative("max-inflight", c.MaxInFlight, ""),
		notNegative("shutdown-grace", c.ShutdownGrace, ""),
		notNegative("shutdown-delay", c.ShutdownDelay, ""),
		failIf(c.RateBuckets < 1, "rate-buckets: must be at least 1, not %d", c.RateBuckets),
		finiteRate("auth-fail-rate", c.AuthFailRate),
		failIf(c.AuthFailRate > 0 && c.AuthFailBurst < 1, "auth-fail-burst: must be at least 1, not %d", c.AuthFailBurst),
		notNegative("quota-tasks", c.QuotaTasks, "limit"),
		notNegative("quota-bytes", c.QuotaBytes, "limit"),
		notNegative("max-history", c.MaxHistory, "limit"),
		notNegative("max-task-artifact-bytes", c.MaxTaskArtifactBytes, "limit"),
		notNegative("history-read-bytes", c.HistoryReadBytes, "limit"),
		notNegative("list-page-bytes", c.ListPageBytes, "limit"),
		notNegative("max-answer-bytes-per-caller", c.AnswerBytesPerCaller, "cap"),
		notNegative("max-calls-per-caller", c.MaxCallsPerCaller, "cap"),
		notNegative("rate-bytes", c.RateBytes, "limit"),
		// A budget smaller than one body would hold back the largest
		// bodies; more than 2 GiB at once is no limit.
		failIf(c.RateBytesBurst < c.MaxBodyBytes || c.RateBytesBurst > math.MaxInt32,
			"rate-bytes-burst: must be at least --max-body-bytes (%d) and at most %d, not %d", c.MaxBodyBytes, math.MaxInt32, c.RateBytesBurst),
	)
}

// TrustedProxyList parses --trusted-proxies: CIDRs, or single addresses.
func (c *Config) TrustedProxyList() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range cli.SplitList(c.TrustedProxies) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("trusted-proxies: %q is not a CIDR or an address", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Addr().Is4In6() {
			// Client addresses are compared unmapped.
			if p.Bits() < 96 {
				return nil, fmt.Errorf("trusted-proxies: %q reaches beyond the IPv4-mapped addresses; give IPv4 and IPv6 ranges apart", s)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// validateTLS checks the TLS settings: a certificate and its key come
// together, and mutual TLS needs both and a keys file to map subjects.
func (c *Config) validateTLS() error {
	return firstError(
		failIf(c.TLSCert != "" && c.TLSKey == "", "tls-key: --tls-cert needs its private key"),
		failIf(c.TLSKey != "" && c.TLSCert == "", "tls-cert: --tls-key needs its certificate"),
		failIf(c.TLSClientCA != "" && c.TLSCert == "", "tls-client-ca: mutual TLS needs --tls-cert and --tls-key too"),
		failIf(c.TLSClientCA != "" && c.Keys == "", "tls-client-ca: needs --keys, whose tls_subjects map client certificates to callers"),
	)
}

// bindsAll reports whether addr, a listen address, binds every address
// of the host: 0.0.0.0, [::] or no host at all (":8080").
func bindsAll(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false // net.Listen says what is wrong
	}
	if host == "" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsUnspecified()
}
