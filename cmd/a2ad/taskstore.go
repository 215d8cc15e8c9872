package main

import (
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/metrics"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/stores"
)

// storeName is store as logs, errors and the operator's view show it: a
// bbolt file's path as given, a database's URL without its password or
// parameters.
func storeName(store string) string { return stores.Name(store) }

// openTaskStore opens the store cfg.Store names (its kind from the
// opener table, tasks/stores), its hooks feeding met, and sets what the
// admin listener reads of it: its inspector, and, where the store has
// them, its online backup, its ping and whether it takes writes.
func (m *Main) openTaskStore(ctx context.Context, met *metrics.Metrics) (tasks.Backend, error) {
	cfg := m.Config
	k, target := stores.Of(cfg.Store)
	s, err := k.Open(ctx, target, stores.Options{
		LockTimeout: cfg.StoreLockTimeout, MaxConns: cfg.StoreMaxConns, LeaseTTL: cfg.LeaseTTL,
		OnCommit: met.Commit, OnTransition: met.Transition,
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
	b := tasks.InspectBounds{StateCount: tasks.DefaultStateCountLimit, Scan: tasks.DefaultScanLimit}
	m.inspector, m.stateCountLimit = s.Inspect(b), b.StateCount
	if bs, ok := s.(admin.BackupSource); ok {
		m.backup = bs
	}
	if p, ok := s.(admin.Pinger); ok {
		m.storeProbe = admin.NewStoreProbe(p, nil)
	}
	if w, ok := s.(tasks.Writable); ok {
		m.storeWritable = w.Writable
	}
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
