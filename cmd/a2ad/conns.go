package main

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/internal/connlimit"
	"github.com/a2ad/a2ad/metrics"
)

// The admin listener's own caps: probes, scrapes and the operator's tools
// need few connections, and one client among them cannot take them all.
const (
	adminMaxConns      = 64
	adminMaxConnsPerIP = 32
)

// limitListener wraps ln with caps on its open connections, feeding the
// listener's metrics (when met is set) and logging refusals and pauses.
func limitListener(ln net.Listener, name string, maxConns, perIP int, met *metrics.Metrics, l zerolog.Logger) *connlimit.Listener {
	cfg := connlimit.Config{Max: maxConns, PerAddr: perIP, Name: name, Logger: l}
	if met != nil {
		h := met.Listener(name)
		cfg.OnOpen = h.Open
		cfg.OnRefuse = h.Refused
		cfg.OnPause = func(p connlimit.Pause) { h.Paused(p == connlimit.PauseMax) }
	}
	return connlimit.New(ln, cfg)
}

// httpErrorLog sends net/http's own error lines (a handler's misuse of
// the response, a broken request it answered itself) to the operational
// log, as warnings, rather than to the standard logger.
func httpErrorLog(l zerolog.Logger, listener string) *log.Logger {
	return log.New(httpLogWriter{l: l, listener: listener}, "", 0)
}

type httpLogWriter struct {
	l        zerolog.Logger
	listener string
}

func (w httpLogWriter) Write(p []byte) (int, error) {
	w.l.Warn().Str("listener", w.listener).Str("error", string(bytes.TrimSpace(p))).Msg("http server")
	return len(p), nil
}

// serverTimeouts sets the timeouts of the config on s, the main
// listener's server. A response must be written within the time its body
// may take to arrive, plus a blocking send's wait, plus as long again for
// the writing; a stream's writes each set a deadline of their own (see
// server.sseWriteTimeout), so a stream lasts as long as its task.
func serverTimeouts(s *http.Server, cfg Config) {
	s.ReadHeaderTimeout = cfg.ReadHeaderTimeout
	s.ReadTimeout = cfg.ReadTimeout
	s.WriteTimeout = 2*cfg.ReadTimeout + cfg.BlockingTimeout
	s.IdleTimeout = cfg.IdleTimeout
}

// adminTimeouts sets the admin listener's timeouts: the main listener's
// for reading, none for writing (a backup of a large store takes long).
func adminTimeouts(s *http.Server, cfg Config) {
	s.ReadHeaderTimeout = cfg.ReadHeaderTimeout
	s.ReadTimeout = cfg.ReadTimeout
	s.IdleTimeout = cfg.IdleTimeout
}

// listenError is a listener's bind error, named by its flag and the
// address as given. A taken address, most often another a2ad (the
// README's first server holds 8080 and 8081), says what to do.
func listenError(flag, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s %s: the address is in use, by another a2ad or another program: stop it, or give --%s another address", flag, addr, flag)
	}
	return fmt.Errorf("%s: %w", flag, err)
}
