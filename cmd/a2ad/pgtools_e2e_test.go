package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks/pgstore"
)

// TestStoreCheckPostgres: a2ad store check on a database, while a2ad
// serves it: the counts and "no problems found"; an index dropped is a
// problem and exit 1; a schema without a store is refused, and the check
// creates nothing in it. The password shows nowhere.
func TestStoreCheckPostgres(t *testing.T) {
	empty := withPassword(t, pgtest.Schema(t))
	code, stdout, stderr := runBinary(t, "store", "check", "--store", empty)
	const noStore = "no a2ad store here: the schema the connection's search_path names has no a2ad tables (a2ad serve creates them)\n"
	if code != 1 || !strings.HasPrefix(stderr, "a2ad: store check: open task store postgres://") || !strings.HasSuffix(stderr, noStore) || strings.Contains(stdout+stderr, dbPassword) {
		t.Fatalf("store check of an empty schema = %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = runBinary(t, "store", "check", "--store", empty) // still no store: the first made none
	if code != 1 || !strings.HasSuffix(stderr, noStore) {
		t.Fatalf("store check of the empty schema again = %d, %q", code, stderr)
	}

	dsn := withPassword(t, pgtest.Schema(t))
	p := startBinary(t, exampleCatalog, dsn)
	resultTask(t, rpc(t, p.base, "message/send", sendParams("chk-m1", "demo::echo", map[string]any{"n": 1}, true)))
	code, stdout, stderr = runBinary(t, "store", "check", "--store", dsn)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf(": schema version %d, 1 tasks, 8 indexes\n", pgstore.SchemaVersion())) ||
		// An echo's task is its row and its key's (pgstore schema 3).
		!strings.Contains(stdout, "  events       0 rows\n") || !strings.Contains(stdout, "  idem         1 rows\n") ||
		!strings.HasSuffix(stdout, "no problems found\n") || stderr != "" {
		t.Fatalf("store check of a served database = %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	pgtest.Exec(t, dsn, `DROP INDEX tasks_expiry`)
	code, stdout, stderr = runBinary(t, "store", "check", "--store", dsn)
	if code != 1 || !strings.HasPrefix(stderr, "every index the queries need is there: not tasks_expiry (missing)\na2ad: 1 problem(s) in postgres://") {
		t.Fatalf("store check without an index = %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr+p.logText(), dbPassword) {
		t.Fatal("the password shows")
	}
}
