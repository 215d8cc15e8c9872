package pgstore_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// exec runs sql on dsn.
func exec(tb testing.TB, dsn, sql string) {
	tb.Helper()
	pgtest.Exec(tb, dsn, sql)
}

// TestReplicasStartingTogetherMigrateOnce: stores opening at once on an
// empty schema all open, and the schema is made once.
func TestReplicasStartingTogetherMigrateOnce(t *testing.T) {
	dsn := pgtest.Schema(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s, err := pgstore.Open(ctx, dsn, pgstore.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, v int
	if err := conn.QueryRow(ctx, `SELECT count(*), max(version) FROM a2ad_migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != pgstore.SchemaVersion() || v != pgstore.SchemaVersion() {
		t.Fatalf("a2ad_migrations holds %d rows up to version %d, want %d", n, v, pgstore.SchemaVersion())
	}
}

// TestOpenRefusesANewerSchema: a schema a newer a2ad migrated is refused,
// with both versions named, and left as it is.
func TestOpenRefusesANewerSchema(t *testing.T) {
	dsn := pgtest.Schema(t)
	mustOpen(t, dsn).Close()
	next := pgstore.SchemaVersion() + 1
	exec(t, dsn, fmt.Sprintf(`INSERT INTO a2ad_migrations (version, name) VALUES (%d, 'from the future')`, next))
	_, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	var tooNew *pgstore.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Store != next || tooNew.Binary != next-1 {
		t.Fatalf("Open = %v, want a SchemaTooNewError of %d against %d", err, next, next-1)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("version %d", next)) || !strings.Contains(msg, fmt.Sprintf("version %d", next-1)) {
		t.Fatalf("the error %q does not name both versions", msg)
	}
}

// TestUnreachableServerIsNamedWithoutThePassword: a server that does not
// answer is an error naming its host, never the URL's password.
func TestUnreachableServerIsNamedWithoutThePassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a closed port: nothing listens there
	for _, dsn := range []string{
		"postgres://alice:s3cret-pw@" + addr + "/db?sslmode=disable",
		"postgres://alice@" + addr + "/db?sslmode=disable&password=s3cret-pw",
	} {
		start := time.Now()
		_, err := pgstore.Open(ctx, dsn, pgstore.Options{ConnectTimeout: 5 * time.Second})
		if err == nil {
			t.Fatal("Open of a closed port succeeded")
		}
		if msg := err.Error(); !strings.Contains(msg, addr) || strings.Contains(msg, "s3cret") {
			t.Errorf("Open error %q: want the host %s, and no password", msg, addr)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Open took %s to fail", d)
		}
	}
	if got := pgstore.Target("postgres://alice:s3cret-pw@db.example:6432/a2ad?sslmode=require&password=x"); got != "postgres://alice@db.example:6432/a2ad" {
		t.Errorf("Target = %q", got)
	}
}

// TestTwoStoresOnOneDatabase: what one store writes the other reads,
// their racing updates are never lost, and a delivery one has claimed
// the other hands out only once the first has let it go.
func TestTwoStoresOnOneDatabase(t *testing.T) {
	dsn := pgtest.Schema(t)
	a, b := mustOpen(t, dsn), mustOpen(t, dsn)
	storetest.WithHooks(t, a, "t1", 1)
	if _, err := b.Get(ctx, "o", "t1", tasks.Whole); err != nil {
		t.Fatalf("the other store: %v", err)
	}
	var wg sync.WaitGroup
	for _, s := range []*pgstore.Store{a, b} {
		for range 4 {
			wg.Go(func() {
				for range 10 {
					if _, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Head, func(r *tasks.Record) ([]tasks.Event, error) {
						n, _ := r.Task.Metadata["n"].(float64)
						r.Task.Metadata = map[string]any{"n": n + 1}
						return []tasks.Event{storetest.StatusEvent(a2a.StateWorking)}, nil
					}); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	wg.Wait()
	got, err := a.Get(ctx, "o", "t1", tasks.Head)
	if err != nil || got.Task.Metadata["n"] != float64(80) || got.Seq != 81 {
		t.Fatalf("after 80 updates from two stores: %v, seq %d, %v", got.Task.Metadata, got.Seq, err)
	}
	storetest.MustUpdate(t, b, "o", "t1", storetest.Flip(a2a.StateCompleted))
	if due, err := a.Due(ctx, time.Now(), 10); err != nil || len(due) != 1 {
		t.Fatalf("a's Due = %v, %v; want the delivery", due, err)
	}
	if due, err := b.Due(ctx, time.Now(), 10); err != nil || len(due) != 0 {
		t.Fatalf("b's Due while a holds the delivery = %v, %v; want none", due, err)
	}
	if due, err := a.Due(ctx, time.Now(), 10); err != nil || len(due) != 1 {
		t.Fatalf("a's Due again = %v, %v; want its own claim", due, err)
	}
	check(t, a)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if due, err := b.Due(ctx, time.Now(), 10); err != nil || len(due) != 1 {
		t.Fatalf("b's Due once a closed = %v, %v; want the delivery", due, err)
	}
}

// TestRenewKeepsAClaim: a delivery one store claimed stays its own past
// ClaimTTL while it renews the claim (another store's Renew does
// nothing to it), and goes to the other store once it stops.
func TestRenewKeepsAClaim(t *testing.T) {
	dsn := pgtest.Schema(t)
	const ttl = 600 * time.Millisecond
	open := func() *pgstore.Store {
		s, err := pgstore.Open(ctx, dsn, pgstore.Options{ClaimTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	storetest.WithHooks(t, a, "t1", 1)
	storetest.MustUpdate(t, a, "o", "t1", storetest.Flip(a2a.StateCompleted))
	due, err := a.Due(ctx, time.Now(), 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("a's Due = %v, %v; want the delivery", due, err)
	}
	ids := []uint64{due[0].ID}
	claimed := time.Now()
	for time.Since(claimed) < 3*ttl {
		time.Sleep(ttl / 6)
		if err := a.Renew(ctx, ids); err != nil {
			t.Fatal(err)
		}
		if err := b.Renew(ctx, ids); err != nil {
			t.Fatal(err)
		}
		if due, err := b.Due(ctx, time.Now(), 10); err != nil || len(due) != 0 {
			t.Fatalf("b's Due %v after a claimed the delivery, renewing it = %v, %v; want none", time.Since(claimed), due, err)
		}
	}
	renewed := time.Now()
	time.Sleep(ttl + 100*time.Millisecond)
	if due, err := b.Due(ctx, time.Now(), 10); err != nil || len(due) != 1 {
		t.Fatalf("b's Due %v after a last renewed its claim = %v, %v; want the delivery", time.Since(renewed), due, err)
	}
}

// TestExclusiveStoreRefusesASecond: with Options.Exclusive (what a2ad
// store migrate sets), a second store on the schema is refused with
// ErrInUse while the first is open, Shared ones (what a2ad serve sets)
// with ErrMigrating; once it is closed, Shared stores open together and
// keep an Exclusive one out. Another schema is not held.
func TestExclusiveStoreRefusesASecond(t *testing.T) {
	dsn := pgtest.Schema(t)
	first, err := pgstore.Open(ctx, dsn, pgstore.Options{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	refused := func(opts pgstore.Options, want error, text string) {
		t.Helper()
		s, err := pgstore.Open(ctx, dsn, opts)
		if !errors.Is(err, want) {
			if s != nil {
				s.Close()
			}
			t.Fatalf("open %+v: %v, want %v", opts, err, want)
		}
		if pgtest.DSN() == "postgres://postgres@127.0.0.1:5432/test?sslmode=disable" && err.Error() != "open task store postgres://postgres@127.0.0.1:5432/test: "+text {
			t.Errorf("error %q\nwant the text %q", err, text)
		}
	}
	refused(pgstore.Options{Exclusive: true}, pgstore.ErrInUse, "the database is in use by another a2ad (a server or a store migrate): stop it first")
	refused(pgstore.Options{Shared: true}, pgstore.ErrMigrating, "a2ad store migrate is copying into the database: start a2ad once it has finished")
	other, err := pgstore.Open(ctx, pgtest.Schema(t), pgstore.Options{Exclusive: true})
	if err != nil {
		t.Fatalf("another schema: %v", err)
	}
	other.Close()
	first.Close()
	var shared []*pgstore.Store
	for range 2 {
		s, err := pgstore.Open(ctx, dsn, pgstore.Options{Shared: true})
		if err != nil {
			t.Fatalf("shared open after the exclusive one closed: %v", err)
		}
		shared = append(shared, s)
	}
	refused(pgstore.Options{Exclusive: true}, pgstore.ErrInUse, "the database is in use by another a2ad (a server or a store migrate): stop it first")
	for _, s := range shared {
		s.Close()
	}
	last, err := pgstore.Open(ctx, dsn, pgstore.Options{Exclusive: true})
	if err != nil {
		t.Fatalf("exclusive open after the shared ones closed: %v", err)
	}
	last.Close()
}

// TestOpenWithoutASchema: a search_path naming no schema that exists is
// refused with ErrNoSchema, and nothing is created.
func TestOpenWithoutASchema(t *testing.T) {
	pgtest.Require(t)
	dsn := pgtest.WithSearchPath(t, pgtest.DSN(), "a2ad_no_such_schema")
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	if !errors.Is(err, pgstore.ErrNoSchema) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("open: %v, want ErrNoSchema", err)
	}
}
