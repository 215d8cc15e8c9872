package storecmd

// a2ad store migrate: a bbolt store file into a PostgreSQL store, for the
// cut-over to a database (docs/replicas.md).

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/stores"
)

// migrateBatch is how many tasks one transaction of the target takes,
// and how often progress is told.
const migrateBatch = 200

// migrateKinds are what a migration copies, as pgstore.Counts names the
// tables, and how many of each the export handed over.
var migrateKinds = []struct {
	table string
	of    func(*tasks.ExportCounts) int64
}{
	{"tasks", func(c *tasks.ExportCounts) int64 { return c.Tasks }},
	{"events", func(c *tasks.ExportCounts) int64 { return c.Events }},
	{"messages", func(c *tasks.ExportCounts) int64 { return c.Messages }},
	{"artifacts", func(c *tasks.ExportCounts) int64 { return c.Artifacts }},
	{"idem", func(c *tasks.ExportCounts) int64 { return c.Keys }},
	{"outbox", func(c *tasks.ExportCounts) int64 { return c.Deliveries }},
	{"dead_letters", func(c *tasks.ExportCounts) int64 { return c.DeadLetters }},
}

func runStoreMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newStoreFlags("migrate", stderr)
	var to string
	var force bool
	f.fs.StringVar(&f.store, "from", "", "the store file to copy (no server may hold it)")
	f.fs.StringVar(&to, "to", "", "the PostgreSQL database to copy it into, a postgres:// URL (no server may serve it)")
	f.fs.BoolVar(&force, "force", false, "copy into a database that holds tasks already, adding to them: a task id or idempotency key it holds already is an error, never overwritten")
	if code := f.parse(args, stderr); code >= 0 {
		return code
	}
	from, fromPath := stores.Of(f.store)
	switch {
	case f.store == "" || to == "":
		return cli.UsageError(stderr, "store migrate: give the store file with --from and the database with --to postgres://...")
	case !from.File:
		return cli.UsageError(stderr, "store migrate: --from is a bbolt store file, not a database")
	}
	into, target := stores.Of(to)
	b, opened, err := into.OpenTool(ctx, target, false)
	if err != nil {
		fmt.Fprintln(stderr, "a2ad: store migrate:", err)
		return 1
	}
	if opened {
		defer b.Close()
	}
	s, ok := b.(migrationTarget)
	if !ok {
		return cli.UsageError(stderr, "store migrate: --to is a PostgreSQL database's postgres:// URL")
	}
	m := &migration{s: s, force: force, from: fromPath, to: stores.Name(to), stderr: stderr}
	if code := m.run(ctx, f); code != 0 {
		return code
	}
	return m.verify(ctx, stdout, stderr)
}

// migrationTarget is a store a2ad store migrate copies into: it imports
// what the export hands over, and counts its rows by table to compare.
type migrationTarget interface {
	tasks.Importer
	Counts(ctx context.Context) ([]pgstore.Count, error)
}

var _ migrationTarget = (*pgstore.Store)(nil)

// migration is one run of a2ad store migrate.
type migration struct {
	s        migrationTarget
	force    bool
	from, to string
	stderr   io.Writer
	before   []pgstore.Count
	sent     tasks.ExportCounts
	batch    []*tasks.Exported
	dead     []tasks.DeadLetter
}

// run copies the store file into the database and returns the exit code.
func (m *migration) run(ctx context.Context, f *storeFlags) int {
	var err error
	if m.before, err = m.s.Counts(ctx); err != nil {
		fmt.Fprintf(m.stderr, "a2ad: store migrate: count the rows of %s: %v\n", m.to, err)
		return 1
	}
	if n := m.before[0].Rows; n > 0 && !m.force {
		fmt.Fprintf(m.stderr, "a2ad: store migrate: %s holds %d tasks already: migrate into an empty database, or give --force to add to them\n", m.to, n)
		return 1
	}
	err = boltstore.ExportFile(ctx, m.from, f.lockTimeout,
		func(e *tasks.Exported) error { return m.task(ctx, e) },
		func(d tasks.DeadLetter) error { return m.deadLetter(ctx, d) })
	if err == nil {
		err = m.flush(ctx)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, boltstore.ErrLocked):
		fmt.Fprintf(m.stderr, "a2ad: the store %s is in use by a running a2ad: stop it first, then migrate\n", m.from)
	case errors.Is(err, boltstore.ErrDamaged):
		return Damaged(m.stderr, err, "", "restore the last backup")
	default:
		fmt.Fprintln(m.stderr, "a2ad: store migrate:", err)
	}
	if m.sent.Tasks > 0 {
		fmt.Fprintf(m.stderr, "a2ad: %s holds the %d tasks copied before the error: drop its schema before migrating again\n", m.to, m.sent.Tasks)
	}
	return 1
}

// task takes one exported task; a full batch is imported.
func (m *migration) task(ctx context.Context, e *tasks.Exported) error {
	m.batch = append(m.batch, e)
	if len(m.batch) < migrateBatch {
		return nil
	}
	return m.flush(ctx)
}

func (m *migration) deadLetter(ctx context.Context, d tasks.DeadLetter) error {
	m.dead = append(m.dead, d)
	if len(m.dead) < migrateBatch {
		return nil
	}
	return m.flush(ctx)
}

// flush imports the tasks and dead letters taken since the last flush.
func (m *migration) flush(ctx context.Context) error {
	if len(m.batch) > 0 {
		if err := m.s.Import(ctx, m.batch); err != nil {
			return err
		}
		for _, e := range m.batch {
			m.sent.Add(e)
		}
		m.batch = m.batch[:0]
		fmt.Fprintf(m.stderr, "a2ad: store migrate: %d tasks copied\n", m.sent.Tasks)
	}
	if len(m.dead) > 0 {
		if err := m.s.ImportDeadLetters(ctx, m.dead); err != nil {
			return err
		}
		m.sent.DeadLetters += int64(len(m.dead))
		m.dead = m.dead[:0]
	}
	return nil
}

// verify compares what the export handed over with what the database
// gained, kind by kind, prints both, and returns 1 if any differs.
func (m *migration) verify(ctx context.Context, stdout, stderr io.Writer) int {
	after, err := m.s.Counts(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "a2ad: store migrate: count the rows of %s: %v\n", m.to, err)
		return 1
	}
	rows := map[string]int64{}
	for i, c := range after {
		rows[c.Table] = c.Rows - m.before[i].Rows
	}
	fmt.Fprintf(stdout, "migrated %s to %s\n  %-12s %10s %10s\n", m.from, m.to, "", "from", "to")
	bad := 0
	for _, k := range migrateKinds {
		from, got := k.of(&m.sent), rows[k.table]
		mark := ""
		if from != got {
			mark, bad = "  differs", bad+1
		}
		fmt.Fprintf(stdout, "  %-12s %10d %10d%s\n", k.table, from, got, mark)
	}
	if bad > 0 {
		fmt.Fprintf(stderr, "a2ad: store migrate: %d kind(s) of rows differ between %s and %s\n", bad, m.from, m.to)
		return 1
	}
	return 0
}
