package admin

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport/httpx"
)

// Outbox is what GET /admin/push/dead-letters reads of the push outbox
// besides the dead letters (which Inspector lists): a subset of
// tasks.Backend (of its tasks.Gauges).
type Outbox interface {
	OutboxDepth(ctx context.Context) (int, error)
}

// What the admin listener reads and changes of a store are subsets of
// tasks.Backend.
var (
	_ Outbox           = tasks.Backend(nil)
	_ DeadLetterOutbox = tasks.Backend(nil)
)

// BackupSource is what the backup endpoint needs of the store: a copy of
// the store file written to w, size called with its length before the
// first byte.
type BackupSource interface {
	Backup(ctx context.Context, w io.Writer, size func(int64)) (int64, error)
}

// Canceler is the task service's cancel, which the operator's cancel goes
// through with the task's owner. It returns tasks.ErrNotCancelable for a
// terminal task and tasks.ErrNotFound for one that is gone.
type Canceler interface {
	CancelByOperator(ctx context.Context, owner tasks.Caller, id string) (*a2a.Task, error)
}

// Reloader puts a changed catalogue and keys file in force. It returns an
// error, and the report, when a part kept what was in force.
type Reloader interface {
	Reload() (*ReloadReport, error)
}

// Config is what the admin listener serves. Every field but Now and
// Audit is required.
type Config struct {
	// Inspector is what the operator view reads: a store it cannot write
	// to.
	Inspector tasks.Inspector
	// StateCountLimit is the number of tasks above which the overview
	// does not count terminal states (the inspector's bound).
	StateCountLimit int
	Outbox          Outbox
	DeadLetters     DeadLetterOutbox
	Backup          BackupSource
	Tasks           Canceler
	Reloader        Reloader
	// NotReady is the reason a2ad takes no work, "" when it does.
	NotReady func() string
	// Metrics serves /metrics.
	Metrics http.Handler

	// Catalog is the catalogue in force (nil before one is loaded), and
	// Policy what it exposes: the overview counts the exposed skills.
	Catalog func() *functions.Catalog
	Policy  exposure.Policy
	// Keys is the number of entries of the keys file, nil without one.
	Keys func() *int
	// KeyList lists the keys with their last use; nil without a keys
	// file.
	KeyList   func() *KeyList
	StorePath string
	Version   string
	// StartedAt is when the server started; Now is the clock (nil means
	// time.Now).
	StartedAt time.Time
	Now       func() time.Time

	// Audit is the audit trail the operator's cancel and dead-letter
	// replays are recorded in; nil
	// records nothing.
	Audit  *zerolog.Logger
	Logger zerolog.Logger
}

// Server is the admin listener's handler. Its routes other than the
// probes and /metrics answer loopback callers only: they show every
// caller's tasks and webhook URLs, so a listener bound wider by mistake
// shows nothing.
type Server struct {
	e   *echo.Echo
	cfg Config
}

// New builds the admin listener's handler.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// Probes and Prometheus scrape from other hosts. /metrics
			// shows counts and durations labelled from fixed sets and
			// the catalogue's function ids: no task, caller, URL or
			// anything a request sent.
			if p := c.Path(); p == "/healthz" || p == "/readyz" || p == "/metrics" {
				return next(c)
			}
			if err := loopbackOnly(c); err != nil {
				return err
			}
			if err := notFromABrowserPage(c.Request()); err != nil {
				return err
			}
			return next(c)
		}
	})
	s := &Server{e: e, cfg: cfg}
	// The probes answer HEAD too, for uptime checkers.
	httpx.GET(e, "/healthz", healthz)
	httpx.GET(e, "/readyz", Readyz(cfg.NotReady))
	e.GET("/metrics", echo.WrapHandler(cfg.Metrics))
	e.GET("/admin/push/dead-letters", s.outboxDeadLetters)
	e.GET(BackupPath, echo.WrapHandler(backupHandler(cfg.Backup, cfg.Logger)))
	e.POST("/admin/v1/reload", s.reload)
	e.Any("/a2a", notTheMainListener)
	e.Any("/.well-known/*", notTheMainListener)
	s.addOpViewRoutes(e)
	s.addKeysRoute(e, s.cfg.KeyList)
	return s
}

// Handler is the admin listener's handler.
func (s *Server) Handler() http.Handler { return s.e }

func healthz(c echo.Context) error {
	return c.JSONBlob(http.StatusOK, []byte(`{"status":"ok"}`))
}

// Readyz answers 200 while notReady returns "" (a2ad takes work: the
// store is open, a catalogue is loaded and it is not draining); else 503
// with the reason. Both listeners serve it.
func Readyz(notReady func() string) echo.HandlerFunc {
	return func(c echo.Context) error {
		if reason := notReady(); reason != "" {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not_ready", "reason": reason})
		}
		return c.JSONBlob(http.StatusOK, []byte(`{"status":"ready"}`))
	}
}

// notFromABrowserPage refuses what a web page in the operator's browser
// could send to a loopback listener: a request addressed to another host
// name (DNS rebinding: the page's own name resolving to 127.0.0.1) or
// carrying an Origin (a cross-site form or fetch). The CLI and curl send
// neither.
func notFromABrowserPage(r *http.Request) error {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ip, err := netip.ParseAddr(host); (err != nil || !ip.Unmap().IsLoopback()) && !strings.EqualFold(host, "localhost") {
		return echo.NewHTTPError(http.StatusForbidden, "admin endpoints answer requests addressed to a loopback host (127.0.0.1, ::1 or localhost) only")
	}
	if r.Header.Get("Origin") != "" {
		return echo.NewHTTPError(http.StatusForbidden, "admin endpoints refuse requests from web pages (an Origin header)")
	}
	return nil
}

func loopbackOnly(c echo.Context) error {
	host, _, err := net.SplitHostPort(c.Request().RemoteAddr)
	if err != nil {
		host = c.Request().RemoteAddr
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.Unmap().IsLoopback() {
		return echo.NewHTTPError(http.StatusForbidden, "admin endpoints answer loopback callers only")
	}
	return nil
}

// outboxDeadLetters lists the push deliveries given up on, oldest first:
// ?after=<id>&limit=<n> (1..1000, default 100). Tokens, credentials and
// bodies are never shown. It is GET /admin/push/dead-letters, the alias
// of GET /admin/v1/dead-letters kept for a release: the same letters
// from the same read (Inspector.DeadLetters), in its own shape (after
// and limit in, the outbox's depth out).
func (s *Server) outboxDeadLetters(c echo.Context) error {
	after, limit := uint64(0), 100
	if v := c.QueryParam("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "after must be a non-negative integer")
		}
		after = n
	}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return echo.NewHTTPError(http.StatusBadRequest, "limit must be an integer from 1 to 1000")
		}
		limit = n
	}
	ctx := c.Request().Context()
	list, _, err := s.cfg.Inspector.DeadLetters(ctx, after, limit)
	if err != nil {
		return err
	}
	depth, err := s.cfg.Outbox.OutboxDepth(ctx)
	if err != nil {
		return err
	}
	out := OutboxList{DeadLetters: make([]DeadLetter, len(list)), OutboxDepth: depth}
	for i, d := range list {
		out.DeadLetters[i] = deadLetter(d)
	}
	return c.JSON(http.StatusOK, out)
}

// reload is POST /admin/v1/reload: 200 with the report when every part
// reloaded, 422 with it when a part kept what was in force.
func (s *Server) reload(c echo.Context) error {
	r, err := s.cfg.Reloader.Reload()
	status := http.StatusOK
	if err != nil {
		status = http.StatusUnprocessableEntity
	}
	return c.JSON(status, r)
}
