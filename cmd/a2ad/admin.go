package main

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/labstack/echo/v4"
)

// addAdminRoutes adds the operator's read-only views. Until a2ad has an
// admin listener of its own, they answer loopback callers only: they show
// webhook URLs of every caller.
func (m *Main) addAdminRoutes(e *echo.Echo) {
	e.GET("/admin/push/dead-letters", m.deadLetters)
	e.GET(backupPath, m.storeBackup)
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
