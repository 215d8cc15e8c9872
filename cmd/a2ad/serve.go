package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a/server"
	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/push"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// Main is a running a2ad server: Open starts it, Close stops it. Tests use
// it to run the real server on a random port.
type Main struct {
	Config Config
	Logger zerolog.Logger

	catalog atomic.Pointer[functions.Catalog]
	card    atomic.Pointer[agentcard.Card]
	store   *boltstore.Store
	service *tasks.Service
	sender  *push.Sender
	guard   *push.Guard
	http    *http.Server
	ln      net.Listener
	served  chan error
	baseURL string
}

// newLogger builds the root logger.
func newLogger(cfg Config, w io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil || cfg.LogLevel == "" {
		return zerolog.Nop(), fmt.Errorf("log-level: %q is not a level (debug, info, warn, error)", cfg.LogLevel)
	}
	if cfg.LogFormat == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Str("service", "a2ad").Logger(), nil
}

func serve(ctx context.Context, cfg Config, stderr io.Writer) int {
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "a2ad:", err)
		return 2
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
	m := &Main{Config: cfg, Logger: log}
	if err := m.Open(ctx); err != nil {
		printLoadError(stderr, err)
		return 1
	}
	select {
	case <-ctx.Done():
		log.Info().Msg("shutting down")
	case err := <-m.served:
		log.Error().Err(err).Msg("server stopped")
	}
	if err := m.Close(); err != nil {
		log.Error().Err(err).Msg("shutdown")
		return 1
	}
	return 0
}

// Open loads the catalogue, opens the store, recovers interrupted tasks
// and starts serving.
func (m *Main) Open(ctx context.Context) error {
	cfg := m.Config
	cat, err := functions.Load(cfg.Catalog, functions.LoadOptions{})
	if err != nil {
		return fmt.Errorf("load catalogue: %w", err)
	}
	m.catalog.Store(cat)

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	m.ln = ln
	base := cfg.BaseURL
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	if m.baseURL, err = agentcard.NormalizeBaseURL(base); err != nil {
		ln.Close()
		return fmt.Errorf("base-url: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		m.Logger.Warn().Str("listen", ln.Addr().String()).Msg("listening beyond loopback: put TLS and authentication in front")
	}

	policy := exposure.Policy{ExposeAll: cfg.ExposeAll, Tier: cfg.Tier, ExtraPrefixes: cfg.hiddenPrefixes()}
	card, err := agentcard.Build(cat, agentcard.Options{
		Identity: agentcard.Identity{
			Name: cfg.Name, Description: cfg.Description, Version: Version(),
			ProviderOrg: cfg.ProviderOrg, ProviderURL: cfg.ProviderURL,
			DocumentationURL: cfg.DocumentationURL, IconURL: cfg.IconURL,
		},
		BaseURL:      m.baseURL,
		Policy:       policy,
		Capabilities: agentcard.Capabilities{Streaming: true, PushNotifications: true},
	})
	if err != nil {
		ln.Close()
		return err
	}
	m.card.Store(card)

	guard, err := push.NewGuard(cfg.pushAllow(), nil)
	if err != nil {
		ln.Close()
		return fmt.Errorf("push-allow: %w", err)
	}
	m.guard = guard
	store, err := boltstore.Open(cfg.Store, boltstore.Options{LockTimeout: cfg.StoreLockTimeout})
	if err != nil {
		ln.Close()
		return err
	}
	m.store = store
	m.service = tasks.New(tasks.Config{
		Store:             store,
		Catalog:           m.catalog.Load,
		Policy:            policy,
		Logger:            m.Logger,
		MaxConcurrent:     cfg.MaxConcurrent,
		MaxQueue:          cfg.MaxQueue,
		BlockingTimeout:   cfg.BlockingTimeout,
		Retention:         cfg.Retention,
		RetentionInterval: cfg.RetentionInterval,
		PushGuard:         guard,
	})
	if err := m.service.Start(ctx); err != nil {
		ln.Close()
		store.Close()
		return err
	}
	// The sender picks up the outbox where a previous process left it.
	m.sender = push.NewSender(push.SenderConfig{
		Outbox:      store,
		Client:      guard.Client(cfg.PushTimeout),
		Timeout:     cfg.PushTimeout,
		MaxAttempts: cfg.PushMaxAttempts,
		Concurrency: cfg.PushConcurrency,
		Logger:      m.Logger,
	})
	store.SetOutboxHook(m.sender.Wake)
	m.sender.Start()
	srv := server.New(server.Config{
		Tasks: m.service,
		Card: func() server.Card {
			c := m.card.Load()
			return server.Card{JSON: c.JSON, ETag: c.ETag}
		},
		MaxBodyBytes: cfg.MaxBodyBytes,
		Streams:      m.service,
		Push:         m.service,
		Lister:       m.service,
		KeepAlive:    cfg.KeepAlive,
		Logger:       m.Logger,
	})
	m.addAdminRoutes(srv.Echo())
	m.http = &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	m.http.RegisterOnShutdown(srv.CloseStreams)
	m.served = make(chan error, 1)
	go func() {
		if err := m.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.served <- err
		}
		close(m.served)
	}()
	m.Logger.Info().Str("listen", ln.Addr().String()).Str("base_url", m.baseURL).
		Str("catalog", cfg.Catalog).Str("catalog_version", cat.Version).Str("store", cfg.Store).
		Str("tier", cfg.Tier).Int("skills", len(card.Skills)).Str("version", Version()).Msg("a2ad serving")
	return nil
}

// Addr is the address the server listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// BaseURL is the normalised base URL the card advertises.
func (m *Main) BaseURL() string { return m.baseURL }

// Close stops in reverse order of start: stop accepting requests, let
// running calls finish within the grace period, close the store.
func (m *Main) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownGrace)
	defer cancel()
	var errs []error
	if m.service != nil {
		m.service.Drain() // new calls get -32051 from here on
	}
	if m.http != nil {
		// Blocking senders wait for their calls until the grace period
		// ends; then the service's Close answers them as they stand.
		stop := context.AfterFunc(ctx, func() {
			if m.service != nil {
				_ = m.service.Close(ctx) // ctx is over: cancel the calls now
			}
		})
		defer stop()
		if err := m.http.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
			// The service has ended the calls; give their senders a
			// moment to get the task as it stands, then cut the rest.
			m.Logger.Warn().Dur("grace", m.Config.ShutdownGrace).Msg("grace period over with requests in flight")
			if m.service != nil {
				_ = m.service.Close(ctx)
			}
			last, cancel := context.WithTimeout(context.Background(), time.Second)
			if err := m.http.Shutdown(last); errors.Is(err, context.DeadlineExceeded) {
				_ = m.http.Close()
			}
			cancel()
		} else if err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		<-m.served
	}
	if m.service != nil {
		if err := m.service.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if m.sender != nil {
		// Deliveries in flight get a moment to finish; one that is cut
		// short stays in the outbox, and the next start sends it.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := m.sender.Close(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			errs = append(errs, fmt.Errorf("push sender: %w", err))
		}
		cancel()
	}
	if m.store != nil {
		if err := m.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	return errors.Join(errs...)
}
