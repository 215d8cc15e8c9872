package main

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// addAdminRoutes adds the operator's routes to the admin listener. They
// also answer loopback callers only: they show every caller's tasks and
// webhook URLs, so a listener bound wider by mistake shows nothing. The
// probes and /metrics answer anyone who reaches the listener (see
// newAdmin).
func (m *Main) addAdminRoutes(e *echo.Echo) {
	e.GET("/healthz", healthz)
	e.GET("/readyz", m.readyz)
	e.GET("/metrics", echo.WrapHandler(m.metrics.Handler()))
	e.GET("/admin/push/dead-letters", m.deadLetters)
	e.GET(backupPath, m.storeBackup)
	e.POST("/admin/v1/reload", m.reloadRoute)
	m.addOpViewRoutes(e)
}

func healthz(c echo.Context) error {
	return c.JSONBlob(http.StatusOK, []byte(`{"status":"ok"}`))
}

// readyz answers 200 while a2ad takes work: the store is open, a
// catalogue is loaded and it is not draining; else 503 with the reason.
func (m *Main) readyz(c echo.Context) error {
	reason := ""
	switch {
	case m.draining.Load():
		reason = "draining"
	case m.catalog.Load() == nil:
		reason = "no catalogue loaded"
	case m.store == nil || m.store.Closed():
		reason = "store closed"
	}
	if reason != "" {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not_ready", "reason": reason})
	}
	return c.JSONBlob(http.StatusOK, []byte(`{"status":"ready"}`))
}

// newAdmin builds the admin listener's server.
func (m *Main) newAdmin() *echo.Echo {
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
	m.addAdminRoutes(e)
	return e
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

// deadLetters lists the push deliveries given up on, oldest first:
// ?after=<id>&limit=<n> (1..1000, default 100). Tokens, credentials and
// bodies are never shown.
func (m *Main) deadLetters(c echo.Context) error {
	if err := loopbackOnly(c); err != nil {
		return err
	}
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
	list, err := m.store.DeadLetters(ctx, after, limit)
	if err != nil {
		return err
	}
	depth, err := m.store.OutboxDepth(ctx)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"deadLetters": list, "outboxDepth": depth})
}
