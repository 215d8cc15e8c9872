package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// newLogger builds the root logger.
func newLogger(cfg Config, w io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil || cfg.LogLevel == "" {
		return zerolog.Nop(), fmt.Errorf("log-level: %q is not a level (debug, info, warn, error)", cfg.LogLevel)
	}
	if cfg.LogFormat == "console" {
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
