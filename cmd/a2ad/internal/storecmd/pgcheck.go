package storecmd

// a2ad store check on a PostgreSQL store: read-only, while servers run.

import (
	"context"
	"fmt"
	"io"

	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/stores"
)

// databaseCheck is a store that checks itself, writing nothing, and
// counts its rows by table: a PostgreSQL store.
type databaseCheck interface {
	Check(ctx context.Context) ([]string, error)
	Counts(ctx context.Context) ([]pgstore.Count, error)
}

var _ databaseCheck = (*pgstore.Store)(nil)

// checkDatabase checks the database of kind k at target, named name, writing
// nothing: the schema must be this a2ad's version; every index the
// queries need is there and valid; the invariants of pgstore.Store.Check
// hold. It prints the rows of each table, and each problem on its own
// line on stderr, and returns the exit code: 0 when there is none.
func checkDatabase(ctx context.Context, k *stores.Kind, target, name string, stdout, stderr io.Writer) int {
	s, _, err := k.OpenTool(ctx, target, true)
	if err != nil {
		fmt.Fprintln(stderr, "a2ad: store check:", err)
		return 1
	}
	defer s.Close()
	c, ok := s.(databaseCheck)
	if !ok {
		fmt.Fprintf(stderr, "a2ad: store check: %s cannot check itself\n", name)
		return 1
	}
	counts, err := c.Counts(ctx)
	if err == nil {
		var problems []string
		if problems, err = c.Check(ctx); err == nil {
			return printPgReport(stdout, stderr, name, counts, problems)
		}
	}
	fmt.Fprintf(stderr, "a2ad: store check of %s: %v\n", name, err)
	return 1
}

func printPgReport(stdout, stderr io.Writer, name string, counts []pgstore.Count, problems []string) int {
	fmt.Fprintf(stdout, "checked %s: schema version %d, %d tasks, %d indexes\n", name, pgstore.SchemaVersion(), counts[0].Rows, len(pgstore.Indexes()))
	for _, c := range counts {
		fmt.Fprintf(stdout, "  %-12s %d rows\n", c.Table, c.Rows)
	}
	if len(problems) == 0 {
		fmt.Fprintln(stdout, "no problems found")
		return 0
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, p)
	}
	fmt.Fprintf(stderr, "a2ad: %d problem(s) in %s\n", len(problems), name)
	return 1
}
