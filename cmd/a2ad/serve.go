package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/agentcard/cardsign"
	"github.com/a2ad/a2ad/agentcard/cardviews"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/callers/oidc"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/storecmd"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/logw"
	"github.com/a2ad/a2ad/internal/sdnotify"
	"github.com/a2ad/a2ad/internal/tlsconf"
	"github.com/a2ad/a2ad/metrics"
	"github.com/a2ad/a2ad/push"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	a2agrpc "github.com/a2ad/a2ad/transport/grpc"
	"github.com/a2ad/a2ad/transport/jsonrpc"
	"github.com/a2ad/a2ad/transport/mcp"
)

// Main is a running a2ad server: Open starts it, Close stops it. Tests use
// it to run the real server on a random port.
type Main struct {
	Config Config
	Logger zerolog.Logger

	// now is the clock of the rate limits; nil means time.Now. Tests set
	// it before Open.
	now func() time.Time
	// bodyGrace is the time before --min-body-rate applies; 0 means
	// transport.DefaultBodyGrace. Tests set it before Open.
	bodyGrace time.Duration

	catalog atomic.Pointer[functions.Catalog]
	cards   *cardviews.Views
	// cardSigner signs the cards; nil without --card-signing-key.
	cardSigner atomic.Pointer[cardsign.Signer]
	registry   *callers.Registry // nil without a keys file
	tokens     *oidc.Verifier    // nil without --oidc-issuer
	usage      callers.Usage     // the keys' last use
	gate       *callers.Gate
	throttle   *callers.Throttle // nil without keys, or with --auth-fail-rate 0
	refusals   *callers.Reports  // the audit's summaries of limits' refusals
	srv        *jsonrpc.Server
	core       *transport.Core // the bindings' one core (openHTTP)
	grpc       *a2agrpc.Server // nil without --grpc-listen
	mcp        *mcp.Server     // nil with --mcp=false; Reload tells it
	grpcLn     net.Listener
	grpcAddr   string       // host:port the card gives for gRPC
	tracer     trace.Tracer // nil unless traces are exported (see openTracing)
	audit      *audit.File  // nil unless the audit trail has its own file
	// auditLogger writes the audit trail; nil when it is off.
	auditLogger *zerolog.Logger
	wg          sync.WaitGroup // the rate limits' sweeper
	store       tasks.Backend
	service     *tasks.Service
	sender      *push.Sender
	guard       *push.Guard
	metrics     *metrics.Metrics
	http        *http.Server
	ln          net.Listener      // the main listener, wrapped in its caps once serving
	tls         *tlsconf.Reloader // every listener's certificate; nil without --tls-cert
	served      chan error
	baseURL     string

	admin       *http.Server
	adminLn     net.Listener
	adminServed chan struct{}

	// What the admin listener reads of the store: its inspector (with its
	// bound on counting by state) and, for a bbolt file, its backups.
	inspector       tasks.Inspector
	stateCountLimit int
	backup          admin.BackupSource // nil for a database
	// storeProbe is /readyz's ping of a database; nil for a bbolt file,
	// which cannot go away under a2ad.
	storeProbe *admin.StoreProbe
	// storeWritable is nil while a bbolt store takes writes, or why it
	// stopped; nil for a database.
	storeWritable func() error
	// draining is set when shutdown begins: /readyz fails from then on.
	draining atomic.Bool
	reloadMu sync.Mutex         // one reload at a time
	notify   *sdnotify.Notifier // tells systemd of reloads; nil unless serve set one

	closeMu sync.Mutex
	closers []closer // what undoes each step of Open, in the order done
}

func serve(ctx context.Context, cfg Config, stderr io.Writer) int {
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "a2ad:", err)
		return 2
	}
	cfg.LogFormat = logFormatFor(cfg.LogFormat, stderr)
	if f, ok := stderr.(*os.File); ok && cfg.LogFormat != "console" {
		// Log lines of concurrent requests leave in one write, not one
		// each (logw): the process's stderr goes through it from here on,
		// so what serve prints stays in order with the log.
		lw := logw.New(f)
		defer lw.Close()
		stderr = lw
	}
	log, err := newLogger(cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "a2ad:", err)
		return 2
	}
	// The live heap is small (tasks live on disk, not in memory), so the
	// default GC target would collect every few MB of request garbage; a
	// larger one trades a few MB for CPU. An operator's GOGC still wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
	// SIGHUP before Open: a reload asked for while a2ad starts (logrotate,
	// say) waits for it rather than killing the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	sd := sdnotify.New(log) // systemd's Type=notify; nothing without NOTIFY_SOCKET
	defer sd.Close()
	m := &Main{Config: cfg, Logger: log, notify: sd}
	if err := m.Open(ctx); err != nil {
		if code := storecmd.Damaged(stderr, err, "", storecmd.RestoreAdvice(cfg.Store)); code >= 0 {
			return code
		}
		cli.PrintLoadError(stderr, err)
		return 1
	}
	sd.Ready() // the listeners serve and the store is open; the watchdog starts
	if cfg.LogFormat == "console" {
		fmt.Fprint(stderr, servingBanner(m.BaseURL(), m.Addr(), m.adminURL(), m.GRPCAddr(), m.mcpURL()))
	}
loop:
	for {
		select {
		case <-ctx.Done():
			m.delayShutdown()
			log.Info().Msg("shutting down")
			break loop
		case err := <-m.served:
			log.Error().Err(err).Msg("server stopped")
			break loop
		case <-hup:
			_, _ = m.Reload() // it logs what it did
		}
	}
	sd.Stopping()
	if err := m.Close(); err != nil {
		log.Error().Err(err).Msg("shutdown")
		return 1
	}
	return 0
}

// Open loads the catalogue, opens the store, recovers interrupted tasks
// and starts serving, in the steps below. Each step pushes what undoes it
// onto one list, which Close unwinds last in first out, and so does a
// failed Open: the order of the steps is the reverse of shutdown's.
func (m *Main) Open(ctx context.Context) error {
	for _, step := range []func(context.Context) error{
		m.openTracing,
		m.openCatalog,
		m.openTLS,
		m.openListener,
		m.openGRPCListener,
		m.openCallers,
		m.openStore,
		m.openAdminListener,
		m.openService,
		m.openHTTP,
		m.serveGRPC,
		m.serveAdmin,
	} {
		if err := step(ctx); err != nil {
			return m.unwind(err)
		}
	}
	cfg := m.Config
	card, _ := m.cards.View(nil, true) // built by openCallers
	keys := -1
	if m.registry != nil {
		keys = m.registry.Keys().Len()
	}
	m.Logger.Info().Str("listen", m.ln.Addr().String()).Str("admin_listen", m.AdminAddr()).Str("grpc_listen", m.GRPCAddr()).Str("base_url", m.baseURL).Str("mcp_url", m.mcpURL()).
		Str("catalog", cfg.Catalog).Str("catalog_version", m.catalog.Load().Version).Str("store", storeName(cfg.Store)).
		Str("tier", cfg.Tier).Int("public_skills", len(card.Skills)).Int("keys", keys).
		Bool("allow_anonymous", !m.authenticates() || cfg.AllowAnonymous).Bool("oidc", m.tokens != nil).Bool("traces", m.tracer != nil).Str("version", Version()).Msg("a2ad serving")
	return nil
}

// closer undoes one step of Open.
type closer struct {
	name  string
	close func(ctx context.Context) error
}

// onClose pushes fn, which undoes what the step that calls it opened,
// onto the list Close unwinds. Closers never call it.
func (m *Main) onClose(name string, fn func(ctx context.Context) error) {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	m.closers = append(m.closers, closer{name, fn})
}

// unwind runs the closers, last pushed first, within the shutdown grace
// period. It returns first, the error that made Open fail, or else the
// first error of a closer; it logs the others. A second unwind waits for
// the first, then finds nothing left to close.
func (m *Main) unwind(first error) error {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	cs := m.closers
	m.closers = nil
	ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownGrace)
	defer cancel()
	for i := len(cs) - 1; i >= 0; i-- {
		err := cs[i].close(ctx)
		switch {
		case err == nil:
		case first == nil:
			first = err
		default:
			m.Logger.Error().Err(err).Str("step", cs[i].name).Msg("shutdown")
		}
	}
	return first
}

// openCatalog loads the catalogue.
func (m *Main) openCatalog(context.Context) error {
	cat, err := functions.Load(m.Config.Catalog, functions.LoadOptions{})
	if err != nil {
		return fmt.Errorf("load catalogue: %w", err)
	}
	m.catalog.Store(cat)
	return nil
}

// openListener binds the main listener, which the base URL defaults to.
func (m *Main) openListener(context.Context) error {
	ln, err := net.Listen("tcp", m.Config.Listen)
	if err != nil {
		return listenError("listen", m.Config.Listen, err)
	}
	m.ln = ln
	// Until openHTTP serves on it (then its server closes it too).
	m.onClose("listener", func(context.Context) error {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	})
	base := m.Config.BaseURL
	if base == "" {
		base = m.scheme() + ln.Addr().String()
	}
	if m.baseURL, err = agentcard.NormalizeBaseURL(base); err != nil {
		return fmt.Errorf("base-url: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		m.Logger.Warn().Str("listen", m.Config.Listen).Str("bound", ln.Addr().String()).Msg("listening beyond loopback: put TLS and authentication in front")
	}
	return nil
}

// openCallers loads the keys, builds the public card, opens the audit
// trail and starts the rate limits' sweeper.
func (m *Main) openCallers(ctx context.Context) error {
	cfg := m.Config
	if err := m.openCredentials(ctx); err != nil {
		return err
	}
	m.warnUnnamedTiers()
	identity := agentcard.Identity{
		Name: cfg.Name, Description: cfg.Description, Version: Version(),
		ProviderOrg: cfg.ProviderOrg, ProviderURL: cfg.ProviderURL,
		DocumentationURL: cfg.DocumentationURL, IconURL: cfg.IconURL,
	}
	security := m.cardSecurity()
	if err := m.openCardSigner(); err != nil {
		return err
	}
	m.cards = cardviews.New(cardviews.Config{
		Options: agentcard.Options{
			Identity:     identity,
			BaseURL:      m.baseURL,
			Policy:       cfg.Policy(),
			Capabilities: agentcard.Capabilities{Streaming: true, PushNotifications: true},
			Security:     security,
			RESTPath:     restPath,
			GRPCAddr:     m.grpcAddr,
			Versions:     cfg.A2A.CardVersions,
		},
		Catalog:        m.catalog.Load,
		PublicTiers:    cfg.AnonymousTierList(),
		PublicNoSkills: m.authenticates() && !cfg.AllowAnonymous,
		Signer:         m.cardSigner.Load,
	})
	if _, err := m.cards.View(nil, true); err != nil {
		return err
	}
	audit, err := m.newAuditLogger(m.Logger)
	if err != nil {
		return err
	}
	m.auditLogger = audit
	if a := m.audit; a != nil {
		m.onClose("audit log", func(context.Context) error {
			if err := a.Close(); err != nil {
				return fmt.Errorf("close audit log: %w", err)
			}
			return nil
		})
	}
	m.gate = callers.NewGate(callers.GateConfig{
		PerSecond: cfg.RatePerSecond, Burst: cfg.RateBurst,
		MaxInFlightPerCaller: cfg.MaxInFlightPerCaller, MaxInFlight: cfg.MaxInFlight,
		MaxAddresses: cfg.RateBuckets, Now: m.now,
		BytesBurst: int(cfg.RateBytesBurst),
	})
	if m.authenticates() && cfg.AuthFailRate > 0 {
		// Without keys or tokens no request fails to authenticate.
		m.throttle = callers.NewThrottle(callers.ThrottleConfig{
			PerSecond: cfg.AuthFailRate, Burst: cfg.AuthFailBurst, MaxAddresses: cfg.RateBuckets, Now: m.now,
		})
	}
	m.refusals = callers.NewReports(0, cfg.RateBuckets, m.now)
	stop := make(chan struct{})
	m.wg.Add(1)
	go m.sweepBuckets(stop)
	m.onClose("rate limits", func(context.Context) error {
		close(stop)
		m.wg.Wait()
		return nil
	})
	return nil
}

// openStore opens the store, with the metrics its hooks feed.
func (m *Main) openStore(ctx context.Context) error {
	cfg := m.Config
	guard, err := push.NewGuard(cfg.PushAllowList(), nil)
	if err != nil {
		return fmt.Errorf("push-allow: %w", err)
	}
	m.guard = guard
	met := metrics.New(metrics.Options{Methods: append(jsonrpc.Methods(), mcp.Methods()...), Version: Version(), Logger: m.Logger})
	m.metrics = met
	store, err := m.openTaskStore(ctx, met)
	if err != nil {
		return err
	}
	m.store = store
	m.onClose("store", func(context.Context) error {
		if err := store.Close(); err != nil {
			return fmt.Errorf("close store: %w", err)
		}
		return nil
	})
	met.WatchOutbox(store)
	// Seeded before anything writes; OnTransition keeps it from here on.
	active, err := store.ActiveStates(ctx)
	if err != nil {
		return fmt.Errorf("count tasks: %w", err)
	}
	met.AddTasks(active)
	return nil
}

// openAdminListener binds the admin listener, if there is one; serveAdmin
// serves it once the rest runs. It closes after the task service and
// before the store: until the service has stopped it shows the drain, and
// the store waits for the read transactions of the backups it streams.
func (m *Main) openAdminListener(context.Context) error {
	if m.Config.AdminListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", m.Config.AdminListen)
	if err != nil {
		return listenError("admin-listen", m.Config.AdminListen, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		m.Logger.Warn().Str("admin_listen", m.Config.AdminListen).Str("bound", ln.Addr().String()).Msg("admin listener beyond loopback: its routes other than /healthz, /readyz and /metrics still answer loopback callers only")
	}
	// Its own caps and timeouts: a flood on the main listener leaves the
	// probes and /metrics answering.
	m.adminLn = m.withTLS(limitListener(ln, "admin", adminMaxConns, adminMaxConnsPerIP, m.metrics, m.Logger))
	m.admin = &http.Server{ErrorLog: httpErrorLog(m.Logger, "admin")}
	adminTimeouts(m.admin, m.Config)
	m.onClose("admin listener", func(context.Context) error {
		if m.adminServed == nil {
			_ = m.adminLn.Close()
			return nil
		}
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := m.admin.Shutdown(sctx); err != nil {
			_ = m.admin.Close()
		}
		<-m.adminServed
		return nil
	})
	return nil
}

// openService starts the task service, which first recovers the tasks a
// previous process left running, and the push sender. The sender closes
// after the service, whose last writes it may still deliver.
func (m *Main) openService(ctx context.Context) error {
	cfg := m.Config
	m.sender = push.NewSender(push.SenderConfig{
		Outbox:      m.store,
		Client:      m.guard.Client(cfg.PushTimeout),
		Timeout:     cfg.PushTimeout,
		MaxAttempts: cfg.PushMaxAttempts,
		Concurrency: cfg.PushConcurrency,
		// Each poll renews the claims on the deliveries in flight.
		PollInterval: pushPollInterval(cfg.LeaseTTL),
		Logger:       m.Logger,
		OnAttempt:    m.metrics.PushAttempt,
	})
	m.store.SetOutboxHook(m.sender.Wake)
	m.onClose("push sender", func(context.Context) error {
		// Deliveries in flight get a moment to finish; one that is cut
		// short stays in the outbox, and the next start sends it.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := m.sender.Close(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("push sender: %w", err)
		}
		return nil
	})
	m.service = tasks.New(tasks.Config{
		Store:             m.store,
		Catalog:           m.catalog.Load,
		Policy:            cfg.Policy(),
		Logger:            m.Logger,
		MaxConcurrent:     cfg.MaxConcurrent,
		MaxQueue:          cfg.MaxQueue,
		BlockingTimeout:   cfg.BlockingTimeout,
		Retention:         cfg.Retention,
		RetentionInterval: cfg.RetentionInterval,
		LeaseTTL:          cfg.LeaseTTL,
		PushGuard:         m.guard,
		Metrics:           m.metrics,
		Tracer:            m.tracer,

		MaxTaskArtifactBytes: cfg.MaxTaskArtifactBytes,
		HistoryReadBytes:     cfg.HistoryReadBytes,
		ListPageBytes:        cfg.ListPageBytes,
	})
	if err := m.service.Start(ctx); err != nil {
		return err
	}
	m.onClose("task service", m.closeService)
	// The sender picks up the outbox where a previous process left it.
	m.sender.Start()
	return nil
}

// serveAdmin serves the admin listener openAdminListener bound.
func (m *Main) serveAdmin(context.Context) error {
	if m.admin == nil {
		return nil
	}
	m.admin.Handler = m.newAdmin().Handler()
	m.adminServed = make(chan struct{})
	go func() {
		defer close(m.adminServed)
		if err := m.admin.Serve(m.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error().Err(err).Msg("admin listener stopped")
		}
	}()
	return nil
}

// Addr is the address the server listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// AdminAddr is the address of the admin listener, "" when there is none.
func (m *Main) AdminAddr() string {
	if m.adminLn == nil {
		return ""
	}
	return m.adminLn.Addr().String()
}

// adminURL is the admin listener's base URL, "" when there is none.
func (m *Main) adminURL() string {
	if m.AdminAddr() == "" {
		return ""
	}
	if m.tls != nil {
		return "https://" + m.AdminAddr()
	}
	return "http://" + m.AdminAddr()
}

// BaseURL is the normalised base URL the card advertises.
func (m *Main) BaseURL() string { return m.baseURL }

// delayShutdown, on SIGTERM, makes /readyz fail at once and keeps serving
// new work for --shutdown-delay, so that a load balancer polling /readyz
// stops sending here before the drain refuses anything. A second signal
// ends the process meanwhile (main stops catching them).
func (m *Main) delayShutdown() {
	d := m.Config.ShutdownDelay
	if d <= 0 {
		return
	}
	m.draining.Store(true)
	m.Logger.Info().Dur("shutdown_delay", d).Msg("shutdown delayed: /readyz fails, new work is still served")
	time.Sleep(d)
}

// Close stops in reverse order of start (see Open): stop accepting
// requests, let running calls finish within the grace period, stop the
// sender and the admin listener, close the store. It returns the first
// error and logs the others.
func (m *Main) Close() error {
	m.draining.Store(true)
	return m.unwind(nil)
}

// shutdownHTTP drains, then shuts the main listener's server down. While
// running calls finish, within the grace period in ctx, the listener
// stays open: new calls get -32051 (HTTP 503, Retry-After) and /readyz
// 503, so that a load balancer sends them elsewhere; reads are served.
// Open streams end at once (their clients resume elsewhere, or after the
// restart). Then the server closes; once the grace period is over the
// service ends the calls left, and their blocking senders get the task as
// it stands.
func (m *Main) shutdownHTTP(ctx context.Context) error {
	// Each answer from now on closes its connection: a client's next
	// request goes through the balancer again.
	m.http.SetKeepAlivesEnabled(false)
	m.core.CloseStreams()
	_ = m.service.Drain(ctx)                           // logs what it waits for; its error is ctx's, seen below
	closeService := func() { _ = m.closeService(ctx) } // ctx is over: cancel the calls now
	stop := context.AfterFunc(ctx, closeService)
	defer stop()
	var err error
	if err = m.http.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
		// The service has ended the calls; give their senders a moment
		// to get the task as it stands, then cut the rest.
		m.Logger.Warn().Dur("grace", m.Config.ShutdownGrace).Msg("grace period over with requests in flight")
		closeService()
		last, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := m.http.Shutdown(last); errors.Is(err, context.DeadlineExceeded) {
			_ = m.http.Close()
		}
		cancel()
		err = nil
	} else if err != nil {
		err = fmt.Errorf("http shutdown: %w", err)
	}
	<-m.served
	return err
}

// closeService stops the task service. The calls it had to cut (past the
// grace period in ctx) are logged, not an error of the shutdown: their
// tasks resume at the next start or on another replica.
func (m *Main) closeService(ctx context.Context) error {
	err := m.service.Close(ctx)
	var cut *tasks.CutError
	if errors.As(err, &cut) {
		m.Logger.Warn().Err(err).Msg("grace period over with calls running")
		return nil
	}
	return err
}
