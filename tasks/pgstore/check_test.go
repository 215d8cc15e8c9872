package pgstore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// openReadOnly is a read-only Open of dsn, the store tools' way.
func openReadOnly(dsn string) (*pgstore.Store, error) {
	return pgstore.Open(ctx, dsn, pgstore.Options{ReadOnly: true})
}

// tableCount is the number of tables in dsn's schema.
func tableCount(tb testing.TB, dsn string) int {
	tb.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestReadOnlyOpen: the tools' open creates and migrates nothing: an
// empty schema is ErrNoStore and stays empty, a newer or older schema is
// refused naming both versions, and the store it opens refuses writes.
func TestReadOnlyOpen(t *testing.T) {
	empty := pgtest.Schema(t)
	if s, err := openReadOnly(empty); !errors.Is(err, pgstore.ErrNoStore) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("read-only open of an empty schema: %v, want ErrNoStore", err)
	}
	if n := tableCount(t, empty); n != 0 {
		t.Fatalf("a read-only open made %d tables", n)
	}

	dsn := pgtest.Schema(t)
	rw := mustOpen(t, dsn)
	storetest.WithHooks(t, rw, "t1", 1)
	ro, err := openReadOnly(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Expire(ctx, time.Now(), 10); err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Fatalf("a write through a read-only store: %v, want the server's refusal", err)
	}

	v := pgstore.SchemaVersion()
	exec(t, dsn, fmt.Sprintf(`INSERT INTO a2ad_migrations (version, name) VALUES (%d, 'from the future')`, v+1))
	_, err = openReadOnly(dsn)
	var tooNew *pgstore.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Store != v+1 || tooNew.Binary != v {
		t.Fatalf("read-only open of a newer schema: %v", err)
	}
	exec(t, dsn, fmt.Sprintf(`DELETE FROM a2ad_migrations WHERE version = %d`, v+1))
	if v > 1 { // an older schema needs a version below this one's
		exec(t, dsn, fmt.Sprintf(`DELETE FROM a2ad_migrations WHERE version = %d`, v))
		_, err = openReadOnly(dsn)
		var tooOld *pgstore.SchemaTooOldError
		if !errors.As(err, &tooOld) || tooOld.Store != v-1 {
			t.Fatalf("read-only open of an older schema: %v", err)
		}
	}
}

// TestCheckFindsAMissingIndex: every index the migrations make is
// checked; one dropped or a task whose terminal column lies is a problem
// naming it; Counts counts every table.
func TestCheckFindsAMissingIndex(t *testing.T) {
	dsn := pgtest.Schema(t)
	s := mustOpen(t, dsn)
	storetest.WithHooks(t, s, "t1", 1)
	if !slices.Contains(pgstore.Indexes(), "tasks_active") || len(pgstore.Indexes()) < 8 {
		t.Fatalf("Indexes = %v", pgstore.Indexes())
	}
	check(t, s)
	exec(t, dsn, `DROP INDEX tasks_active`)
	exec(t, dsn, `UPDATE tasks SET terminal = NOT terminal`)
	problems, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"every index the queries need is there: not tasks_active (missing)",
		"every non-terminal task is in the active set (its terminal column agrees with its state): not at t1",
	}
	if !slices.Equal(problems, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	counts, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != len(pgstore.Tables) || counts[0] != (pgstore.Count{Table: "tasks", Rows: 1}) {
		t.Fatalf("Counts = %v", counts)
	}
	// Put it right, for mustOpen's check at the end.
	exec(t, dsn, `UPDATE tasks SET terminal = NOT terminal`)
	exec(t, dsn, `CREATE INDEX tasks_active ON tasks (id) WHERE NOT terminal`)
}
