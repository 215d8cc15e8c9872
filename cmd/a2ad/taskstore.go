package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/metrics"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/pgstore"
)

// storeKind is one row of the opener table: a kind of store, the --store
// values that name it, and how serve and the store tools open it. What a
// store serves is tasks.Backend; what else a kind can do is an optional
// interface that whoever needs it asserts on what open returns.
type storeKind struct {
	// noun names the kind in messages: "a bbolt store file".
	noun string
	// schemes are the prefixes, a URL's scheme, of the --store values
	// that are this kind's ("postgres://"); the rest of the value is its
	// target (the URL whole, or after "bolt:" a file's path).
	schemes []string
	// file marks the kind a --store without a known scheme is: a path
	// to a store file, which the offline tools (backup, compact, check,
	// repair, migrate --from) work on while no server holds it.
	file bool
	// keepScheme passes the whole value on as the target (a URL).
	keepScheme bool
	// name is target as logs, errors and the operator's view show it.
	name func(target string) string
	// open opens target for serve, its hooks feeding met.
	open func(ctx context.Context, m *Main, target string, met *metrics.Metrics) (tasks.Backend, error)
	// openTool opens target for a store tool: read-only (check) or
	// else held exclusively (the target of migrate). Nil for a file
	// kind, whose tools work on the file.
	openTool func(ctx context.Context, target string, readOnly bool) (tasks.Backend, error)
	// instead is, for each store tool this kind has not, what to do
	// instead.
	instead map[string]string
}

// storeKinds is the opener table. A third store is one package
// implementing tasks.Backend, one row here, and the conformance suite.
var storeKinds = []*storeKind{
	{
		noun: "a bbolt store file", schemes: []string{"bolt:"}, file: true,
		name: func(target string) string { return target },
		open: openBolt,
	},
	{
		noun: "a PostgreSQL database", schemes: []string{"postgres://", "postgresql://"}, keepScheme: true,
		name: pgstore.Target,
		open: openPostgres,
		openTool: func(ctx context.Context, dsn string, readOnly bool) (tasks.Backend, error) {
			// Exclusive: a server serving the database during a
			// migration would recover tasks half copied; one started
			// meanwhile is refused.
			return pgstore.Open(ctx, dsn, pgstore.Options{ReadOnly: readOnly, Exclusive: !readOnly, MaxConns: 2})
		},
		instead: map[string]string{
			"store backup":  "back it up with pg_dump, or your database's usual way",
			"store compact": "PostgreSQL reclaims the space of deleted rows itself (autovacuum)",
			"store repair":  "a database has no write-ahead log of a2ad's",
		},
	},
}

// storeKindOf returns the kind of store the --store value store names, and
// its target: the row whose scheme it has, else the file kind with store
// as the path.
func storeKindOf(store string) (*storeKind, string) {
	var file *storeKind
	for _, k := range storeKinds {
		for _, sc := range k.schemes {
			if rest, ok := strings.CutPrefix(store, sc); ok {
				if k.keepScheme {
					return k, store
				}
				return k, rest
			}
		}
		if k.file {
			file = k
		}
	}
	return file, store
}

// storeName is store as logs, errors and the operator's view show it: a
// bbolt file's path as given, a database's URL without its password or
// parameters.
func storeName(store string) string {
	k, target := storeKindOf(store)
	if k.file {
		return store
	}
	return k.name(target)
}

// notAFile is the error of a store tool that works on store files
// only, given the store of another kind that store names.
func notAFile(tool, store string) error {
	k, target := storeKindOf(store)
	return fmt.Errorf("%s works on a bbolt store file, and %s is %s: %s", tool, k.name(target), k.noun, k.instead[tool])
}

// openTaskStore opens the store cfg.Store names, its hooks feeding met,
// and sets what the admin listener reads of it: its inspector, and,
// where the store has them, its online backup, its ping and whether it
// takes writes.
func (m *Main) openTaskStore(ctx context.Context, met *metrics.Metrics) (tasks.Backend, error) {
	k, target := storeKindOf(m.Config.Store)
	s, err := k.open(ctx, m, target, met)
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

// openPostgres opens the database at dsn for serve.
func openPostgres(ctx context.Context, m *Main, dsn string, met *metrics.Metrics) (tasks.Backend, error) {
	cfg := m.Config
	return pgstore.Open(ctx, dsn, pgstore.Options{
		MaxConns: int32(cfg.StoreMaxConns), OnCommit: met.Commit, OnTransition: met.Transition,
		// Replicas share the database, but not with a migration into it.
		Shared: true,
		// A push delivery a dead replica was sending is taken over as
		// its calls are, once its lease would have lapsed; the sender
		// renews its claims every third of it (pushPollInterval).
		ClaimTTL: cfg.LeaseTTL,
	})
}

// openBolt opens the bbolt file at path for serve.
func openBolt(_ context.Context, m *Main, path string, met *metrics.Metrics) (tasks.Backend, error) {
	cfg := m.Config
	return boltstore.Open(path, boltstore.Options{
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
