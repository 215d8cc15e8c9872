package main

// The bindings' wiring: JSON-RPC, HTTP+JSON and MCP on the main listener,
// gRPC on its own, all four over the one transport.Core that openHTTP
// builds.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/labstack/echo/v4"

	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/connlimit"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/access"
	a2agrpc "github.com/a2ad/a2ad/transport/grpc"
	"github.com/a2ad/a2ad/transport/httpx"
	"github.com/a2ad/a2ad/transport/jsonrpc"
	"github.com/a2ad/a2ad/transport/mcp"
	"github.com/a2ad/a2ad/transport/rest"
)

// restPath is where the HTTP+JSON binding is served on the main
// listener.
const restPath = "/a2a/rest"

// mcpPath is where MCP's Streamable HTTP transport is served on the main
// listener.
const mcpPath = "/mcp"

// openHTTP serves the A2A server on the main listener. It closes first,
// draining (see shutdownHTTP): new calls are refused from then on, and
// running ones finish within the grace period.
func (m *Main) openHTTP(context.Context) error {
	cfg := m.Config
	limits := cfg.CallerDefaults()
	var auth transport.Authenticator = access.AnonymousAuth{Tiers: cfg.AnonymousTierList(), Defaults: limits}
	var extended func(transport.Principal) transport.Card
	if m.authenticates() {
		auth = access.KeyAuth{Auth: m.authenticator(), Log: m.Logger, Defaults: limits}
		extended = m.extendedCard
	}
	proxies, _ := cfg.TrustedProxyList() // Validate checked them
	cors, _ := cfg.CORS()
	met := m.metrics
	observe := func(transport, method string, outcome audit.Outcome, reason audit.Reason, d time.Duration) {
		met.Request(transport, method, string(outcome), string(reason), d)
	}
	m.core = transport.New(transport.Config{
		Tasks:         m.service,
		Auth:          auth,
		Admit:         access.Gate{Gate: m.gate, Rejected: met.Rejected},
		Bytes:         access.Gate{Gate: m.gate, RejectedBytes: met.RejectedBytes},
		Answers:       access.NewAnswers(cfg.AnswerBytesPerCaller),
		AnswerReserve: max(cfg.HistoryReadBytes, cfg.ListPageBytes),
		Audit:         m.auditLogger,
		Refusals:      m.refusals,
		Tracer:        m.tracer,
		Observe:       observe,
		ExtendedCard:  extended,
		MaxBodyBytes:  cfg.MaxBodyBytes,
		ReadTimeout:   cfg.ReadTimeout,
		MinBodyRate:   cfg.MinBodyRate,
		BodyGrace:     m.bodyGrace,
		Streams:       m.service,
		Push:          m.service,
		Lister:        m.service,
		KeepAlive:     cfg.KeepAlive,
		Logger:        m.Logger,

		TrustedProxies: proxies,
		Throttle:       m.authThrottle(),
		Revoked:        m.revoked,
	})
	// The one core, handed to each binding: JSON-RPC here, HTTP+JSON on
	// its Echo, gRPC in serveGRPC.
	srv := jsonrpc.New(jsonrpc.Config{Core: m.core, CORS: cors, Card: func() transport.Card {
		c, _ := m.servedCard(nil, true) // built at start: never fails
		return c
	}, CardKeys: m.cardKeys})
	m.srv = srv
	rest.Mount(srv.Echo(), restPath, m.core, cors)
	m.mountMCP(srv.Echo(), cors)
	m.addMainRoutes(srv.Echo())
	m.http = &http.Server{Handler: srv.Handler(), ErrorLog: httpErrorLog(m.Logger, "main")}
	serverTimeouts(m.http, cfg)
	m.http.RegisterOnShutdown(srv.CloseStreams)
	maxConns, lowered := connlimit.MaxFor(cfg.MaxConns, connlimit.OpenFileLimit())
	if lowered {
		m.Logger.Warn().Int("max_conns", cfg.MaxConns).Int("applied", maxConns).Uint64("open_file_limit", connlimit.OpenFileLimit()).
			Msg("max-conns lowered to fit the open-file limit (raise LimitNOFILE or ulimit -n)")
	}
	m.ln = m.withTLS(limitListener(m.ln, "main", maxConns, cfg.MaxConnsPerIP, met, m.Logger))
	m.served = make(chan error, 1)
	go func() {
		if err := m.http.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.served <- err
		}
		close(m.served)
	}()
	m.onClose("http", m.shutdownHTTP)
	return nil
}

// openGRPCListener binds the gRPC binding's listener, if there is one,
// before the card is built: the card gives its address, the base URL's
// host with the listener's port.
func (m *Main) openGRPCListener(context.Context) error {
	if m.Config.GRPCListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", m.Config.GRPCListen)
	if err != nil {
		return fmt.Errorf("grpc-listen: %w", err)
	}
	m.grpcLn = ln
	m.onClose("grpc listener", func(context.Context) error {
		if m.grpc == nil {
			_ = ln.Close()
		}
		return nil
	})
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		m.Logger.Warn().Str("grpc_listen", m.Config.GRPCListen).Str("bound", ln.Addr().String()).Msg("gRPC listener beyond loopback: put TLS (--tls-cert) and authentication in front")
	}
	u, err := url.Parse(m.baseURL)
	if err != nil {
		return fmt.Errorf("base-url: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	m.grpcAddr = net.JoinHostPort(u.Hostname(), port)
	return nil
}

// serveGRPC serves the gRPC binding through the main server's core: the
// same authentication, limits, audit trail and streams. It drains and
// stops before the main listener: new calls get -32051 from then on (as
// status UNAVAILABLE), streams end (their clients resume), and running
// calls finish within the grace period.
func (m *Main) serveGRPC(context.Context) error {
	if m.grpcLn == nil {
		return nil
	}
	var creds credentials.TransportCredentials
	if m.tls != nil {
		// The main listener's certificate and client CAs (reloaded with
		// them), h2 being gRPC's protocol.
		creds = credentials.NewTLS(m.tls.Config("h2"))
	}
	// The main listener's guards, in gRPC's terms: the request message
	// within --read-timeout, a silent connection closed after
	// --read-header-timeout, an idle one after --idle-timeout.
	lim := a2agrpc.Limits{Handshake: m.Config.ReadHeaderTimeout, Idle: m.Config.IdleTimeout, RecvTimeout: m.Config.ReadTimeout}
	m.grpc = a2agrpc.New(m.core, lim, creds)
	// The main listener's caps on connections, counted apart.
	ln := limitListener(m.grpcLn, "grpc", m.Config.MaxConns, m.Config.MaxConnsPerIP, m.metrics, m.Logger)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := m.grpc.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			m.Logger.Error().Err(err).Msg("gRPC listener stopped")
		}
	}()
	m.onClose("grpc", func(ctx context.Context) error {
		// As the main listener drains (shutdownHTTP, next): streams end,
		// new calls get UNAVAILABLE (-32051) while running ones finish
		// within the grace period; then the server stops.
		m.core.CloseStreams()
		_ = m.service.Drain(ctx) // its error is ctx's, handled below
		stopped := make(chan struct{})
		go func() {
			m.grpc.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-ctx.Done():
			m.Logger.Warn().Msg("grace period over with gRPC calls in flight")
			m.grpc.Stop()
			<-stopped
		}
		<-served
		return nil
	})
	return nil
}

// GRPCAddr is the address of the gRPC listener, "" when there is none.
func (m *Main) GRPCAddr() string {
	if m.grpcLn == nil {
		return ""
	}
	return m.grpcLn.Addr().String()
}

// extendedCard is the card of p: its own view, or the public card for
// an anonymous caller (the 1.0 GetExtendedAgentCard, see
// transport.Core.NeedsAuth).
func (m *Main) extendedCard(p transport.Principal) transport.Card {
	if p.Anonymous {
		c, _ := m.servedCard(nil, true)
		return c
	}
	c, err := m.servedCard(p.Caller.Tiers, false)
	if err != nil {
		// The public card built, so this one does too; but never fail
		// open with a wider view.
		m.Logger.Error().Err(err).Msg("build extended card")
		c, _ = m.servedCard(nil, true)
	}
	return c
}

// mountMCP serves the catalogue's MCP tools at mcpPath through the main
// server's core (its keys, limits, caps and audit), unless --mcp=false.
// While the catalogue in force opts no function into MCP the path is not
// served: it answers 404, as an unknown path does, and a reload that
// opts one in serves it.
func (m *Main) mountMCP(e *echo.Echo, cors *httpx.CORS) {
	if !m.Config.MCP {
		return
	}
	policy := m.Config.Policy()
	cfg := mcp.Config{Core: m.core, Catalog: m.catalog.Load, Policy: policy, CORS: cors, Origin: originOf(m.baseURL), Version: Version(),
		TaskAfter: m.Config.MCPTaskAfter, Retention: m.Config.Retention, Tiers: m.tiersNow}
	offered := func(h http.Handler) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !offersMCP(policy, m.catalog.Load()) {
				return echo.ErrNotFound
			}
			h.ServeHTTP(c.Response(), c.Request())
			return nil
		}
	}
	if issuer := m.Config.OIDCIssuer; issuer != "" {
		// MCP clients find where to get a token from the endpoint's
		// protected-resource metadata (RFC 9728), named in each 401.
		cfg.ResourceMetadata = mcp.MetadataURL(m.baseURL, mcpPath)
		doc := mcp.MetadataHandler(mcp.ResourceMetadata(m.baseURL+mcpPath, issuer))
		e.Any(mcp.ResourceMetadataPath(mcpPath), offered(doc))
	}
	m.mcp = mcp.New(cfg)
	e.Any(mcpPath, offered(m.mcp))
}

// mcpURL is where MCP is served, "" when it is not (see mountMCP).
func (m *Main) mcpURL() string {
	if !m.Config.MCP || !offersMCP(m.Config.Policy(), m.catalog.Load()) {
		return ""
	}
	return m.baseURL + mcpPath
}

// offersMCP reports whether policy lets any function of cat be an MCP
// tool (for some caller: the callers' tiers aside).
func offersMCP(policy exposure.Policy, cat *functions.Catalog) bool {
	if cat == nil {
		return false
	}
	for _, f := range cat.Functions {
		if policy.DecideIn(exposure.MCP, f.ID, f.Metadata, nil).Exposed {
			return true
		}
	}
	return false
}

// originOf is the origin (scheme://host[:port]) of base, a normalized
// base URL; "" if it has none.
func originOf(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// servedCard is the card of a view as the transports serve it.
func (m *Main) servedCard(tiers []string, public bool) (transport.Card, error) {
	card, modified, err := m.cards.Get(tiers, public)
	if err != nil {
		return transport.Card{}, err
	}
	return transport.Card{JSON: card.JSON, V1JSON: card.V1JSON, ByVersion: card.ByVersion, ETag: card.ETag, Modified: modified}, nil
}
