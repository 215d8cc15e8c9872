package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema is plain SQL in migrations/, one file per version named
// NNNN_what.sql, applied in order at open. a2ad_migrations records the
// versions applied. Open runs them in one transaction under an advisory
// lock of the schema, so that replicas starting together apply each
// migration once and none reads a half-made schema.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one file of migrations/.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the files of migrations/, by version; the versions run
// from 1 without a gap.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, name := range names { // Glob sorts them
		base := path.Base(name)
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil || v != len(out)+1 {
			return nil, fmt.Errorf("migration %s: not version %d", base, len(out)+1)
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b)})
	}
	return out, nil
}

// SchemaVersion is the version of the schema this a2ad writes.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		panic(err) // the embedded files are tested
	}
	return len(ms)
}

// SchemaTooNewError is returned by Open for a schema a newer a2ad made.
type SchemaTooNewError struct{ Store, Binary int }

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("the store's schema is version %d, newer than this a2ad's (version %d): run a newer a2ad", e.Store, e.Binary)
}

// SchemaTooOldError is returned by a read-only Open for a schema an older
// a2ad made, which a2ad serve would migrate.
type SchemaTooOldError struct{ Store, Binary int }

func (e *SchemaTooOldError) Error() string {
	return fmt.Sprintf("the store's schema is version %d, older than this a2ad's (version %d): a2ad serve migrates it when it starts", e.Store, e.Binary)
}

// ErrNoStore is a read-only Open's error for a schema that holds no a2ad
// store (no a2ad_migrations table, or no version in it).
var ErrNoStore = errors.New("no a2ad store here: the schema the connection's search_path names has no a2ad tables (a2ad serve creates them)")

// ErrNoSchema is Open's error when the connection's search_path names no
// schema that exists: a2ad makes its tables, not the schema they go in.
var ErrNoSchema = errors.New("the connection's search_path names no schema that exists: create the schema (CREATE SCHEMA name) or fix search_path")

// migrationLock is the advisory lock's first key (the second is the
// schema's): "a2ad" in ASCII.
const migrationLock = 0x61326164

// migrate brings the schema to SchemaVersion, or refuses one that is
// newer.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return fmt.Errorf("read the schema: %w", err)
		}
		if schema == nil {
			return ErrNoSchema
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, migrationLock); err != nil {
			return fmt.Errorf("lock the schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS a2ad_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create a2ad_migrations: %w", err)
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM a2ad_migrations`).Scan(&have); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		if have > len(ms) {
			return &SchemaTooNewError{Store: have, Binary: len(ms)}
		}
		for _, m := range ms[have:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO a2ad_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		return nil
	})
}

// requireCurrent checks, writing nothing, that the schema is this a2ad's
// version: ErrNoSchema, ErrNoStore, *SchemaTooNewError or
// *SchemaTooOldError if not.
func requireCurrent(ctx context.Context, pool *pgxpool.Pool) error {
	var (
		schema *string
		table  *string
	)
	if err := pool.QueryRow(ctx, `SELECT current_schema(), to_regclass('a2ad_migrations')::text`).Scan(&schema, &table); err != nil {
		return fmt.Errorf("read the schema: %w", err)
	}
	switch {
	case schema == nil:
		return ErrNoSchema
	case table == nil:
		return ErrNoStore
	}
	var have int
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM a2ad_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	switch want := SchemaVersion(); {
	case have == 0:
		return ErrNoStore
	case have > want:
		return &SchemaTooNewError{Store: have, Binary: want}
	case have < want:
		return &SchemaTooOldError{Store: have, Binary: want}
	}
	return nil
}
