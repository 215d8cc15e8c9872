package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/a2ad/a2ad/tasks"
)

// unavailable reports whether err says the server cannot be reached, or
// went away, rather than that it refused what was asked: a connection
// that failed or broke, or the server's own connection-level errors
// (class 08, an administrator's shutdown, a server still starting, no
// connection slot left).
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller's context ended: the server may be well
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "53300":
			return true
		}
		return len(pe.Code) == 5 && pe.Code[:2] == "08"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err) // nothing was sent: the connection was closed already
}

// asUnavailable is err marked tasks.ErrStoreUnavailable when it says the
// server cannot be reached.
func asUnavailable(err error) error {
	if err == nil || errors.Is(err, tasks.ErrStoreUnavailable) || !unavailable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", tasks.ErrStoreUnavailable, err)
}

// PingTimeout bounds Ping when its context has no earlier deadline.
const PingTimeout = time.Second

// Ping reports whether the server answers: nil, or an error that is
// tasks.ErrStoreUnavailable (tasks.ErrClosed once the store is closed).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, PingTimeout)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		if s.closed.Load() {
			return tasks.ErrClosed
		}
		return fmt.Errorf("%w: %w", tasks.ErrStoreUnavailable, err)
	}
	return nil
}
