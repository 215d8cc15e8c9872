package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// newLogger builds the root logger.
func newLogger(cfg Config, w io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil || cfg.LogLevel == "" {
		return zerolog.Nop(), fmt.Errorf("log-level: %q is not a level (debug, info, warn, error)", cfg.LogLevel)
	}
	if logFormatFor(cfg.LogFormat, w) == "console" {
		// Colour codes only for a terminal: in a file or a pipe they are
		// noise.
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !isTerminal(w)}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Str("service", "a2ad").Logger(), nil
}

// isTerminal reports whether w is a terminal (a character device: also
// /dev/null, where colour does no harm).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// logFormatFor is format with "auto" resolved for w: console for a
// person at a terminal, JSON for a file, a pipe or a journal.
func logFormatFor(format string, w io.Writer) string {
	if format != "auto" {
		return format
	}
	if isTerminal(w) {
		return "console"
	}
	return "json"
}

// servingBanner tells a person at a terminal where a2ad is: its card,
// its endpoints and its admin listener ("" where there is none). When the
// base URL is not the listen address (--base-url names a proxy or a public
// name), it says where the listener is too, the address to try from here.
func servingBanner(base, listen, admin, grpc, mcp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\na2ad is serving at %s\n", base)
	if listen != "" && base != "http://"+listen && base != "https://"+listen {
		fmt.Fprintf(&b, "  listening on    %s (the base URL is the address callers are given)\n", listen)
	}
	fmt.Fprintf(&b, "  agent card      %s/.well-known/agent-card.json\n", base)
	fmt.Fprintf(&b, "  A2A JSON-RPC    %s/a2a\n", base)
	fmt.Fprintf(&b, "  A2A HTTP+JSON   %s/a2a/rest\n", base)
	if grpc != "" {
		fmt.Fprintf(&b, "  A2A gRPC        %s\n", grpc)
	}
	if mcp != "" {
		fmt.Fprintf(&b, "  MCP             %s\n", mcp)
	}
	if admin != "" {
		fmt.Fprintf(&b, "  operator view   %s/admin/v1/overview (also /metrics and /readyz; a2ad tasks --server %s)\n", admin, admin)
	}
	b.WriteString("\n")
	return b.String()
}
