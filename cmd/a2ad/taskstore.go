package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/metrics"
	"github.com/a2ad/a2ad/push"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/pgstore"
)

// taskStore is what a2ad serves from, whichever store keeps the tasks: a
// bbolt file (boltstore), or a PostgreSQL database (pgstore) that
// several a2ad processes may share.
type taskStore interface {
	tasks.Store
	push.Outbox
	metrics.Outbox
	admin.Outbox
	admin.DeadLetterOutbox
	// ActiveStates counts the tasks that are not terminal, by state.
	ActiveStates(ctx context.Context) (map[a2a.TaskState]int, error)
	// SetOutboxHook sets fn to be called after each commit that queued
	// push deliveries.
	SetOutboxHook(fn func())
	// Closed reports whether Close has begun.
	Closed() bool
	Close() error
}

var (
	_ taskStore = (*boltstore.Store)(nil)
	_ taskStore = (*pgstore.Store)(nil)
)

// isPostgres reports whether store names a PostgreSQL database (a
// postgres:// or postgresql:// URL) rather than a bbolt file.
func isPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// storeName is store as logs, errors and the operator's view show it: a
// bbolt file's path as given, a database's URL without its password or
// parameters.
func storeName(store string) string {
	if isPostgres(store) {
		return pgstore.Target(store)
	}
	return store
}

// notForPostgres is the error of a command that works on bbolt files
// only, given the database store names.
func notForPostgres(cmd, store, instead string) error {
	return fmt.Errorf("%s works on a bbolt store file, and %s is a PostgreSQL database: %s", cmd, storeName(store), instead)
}

// openTaskStore opens the store cfg.Store names, its hooks feeding met,
// and sets what the admin listener reads of it: its inspector, and its
// backups for a bbolt file (a database is backed up with its own tools).
func (m *Main) openTaskStore(ctx context.Context, met *metrics.Metrics) (taskStore, error) {
	cfg := m.Config
	if isPostgres(cfg.Store) {
		s, err := pgstore.Open(ctx, cfg.Store, pgstore.Options{
			MaxConns: int32(cfg.StoreMaxConns), OnCommit: met.Commit, OnTransition: met.Transition,
			// Replicas share the database, but not with a migration into it.
			Shared: true,
			// A push delivery a dead replica was sending is taken over as
			// its calls are, once its lease would have lapsed; the sender
			// renews its claims every third of it (pushPollInterval).
			ClaimTTL: cfg.LeaseTTL,
		})
		if err != nil {
			return nil, err
		}
		in := s.Inspector()
		m.inspector, m.stateCountLimit = in, in.StateCountLimit
		m.storeProbe = admin.NewStoreProbe(s, nil)
		return s, nil
	}
	s, err := boltstore.Open(cfg.Store, boltstore.Options{
		LockTimeout: cfg.StoreLockTimeout, OnCommit: met.Commit, OnTransition: met.Transition,
		OnCheckpointError: func(err error) {
			// Changes stay in the write-ahead log and in memory meanwhile.
			if errors.Is(err, boltstore.ErrStopped) {
				m.Logger.Error().Err(err).Str("store", cfg.Store).Msg("store stopped taking writes")
				return
			}
			m.Logger.Error().Err(err).Str("store", cfg.Store).Msg("store checkpoint failed; trying again")
		},
		// Crash tests make segments small, to reach the log's rotation.
		WALSegmentBytes: envInt64("A2AD_TEST_WAL_SEGMENT_BYTES"),
	})
	if err != nil {
		return nil, err
	}
	in := s.Inspector()
	m.inspector, m.stateCountLimit, m.backup = in, in.StateCountLimit, s
	m.storeWritable = s.Writable
	return s, nil
}

// pushPollInterval is how often the push sender polls the outbox, and so
// renews, on a shared database, its claims on the deliveries it is
// sending, which last the lease's ttl: every third of it, and at least
// once a second.
func pushPollInterval(leaseTTL time.Duration) time.Duration {
	return min(time.Second, leaseTTL/3)
}

// envInt64 reads a number from the environment variable name; 0 if unset
// or not a number.
func envInt64(name string) int64 {
	n, _ := strconv.ParseInt(os.Getenv(name), 10, 64)
	return n
}
