// Package pgtest gives each test that needs PostgreSQL a schema of its
// own on the server the project's tests use, so that such tests run in
// parallel and leave nothing behind.
//
// The server is A2AD_TEST_POSTGRES (default DefaultDSN). Where it cannot
// be reached, the tests skip with one line naming its host; with
// A2AD_REQUIRE_POSTGRES=1 (as CI sets it) they fail instead, so that a
// run without PostgreSQL cannot pass.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgdsn"
	"github.com/jackc/pgx/v5"
)

// DefaultDSN is the server of the project's machines (pgdsn.Default).
const DefaultDSN = pgdsn.Default

// DSN is the server the tests use: A2AD_TEST_POSTGRES, or DefaultDSN.
func DSN() string { return pgdsn.DSN() }

// Host is the host and port of dsn, for messages: never its user or
// password.
func Host(dsn string) string { return pgdsn.Host(dsn) }

var (
	reachOnce sync.Once
	reachErr  error
)

// reachable connects once per test binary and reports why it could not.
func reachable() error {
	reachOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, DSN())
		if err != nil {
			reachErr = err
			return
		}
		reachErr = conn.Close(ctx)
	})
	return reachErr
}

// Require skips tb (fails it, under A2AD_REQUIRE_POSTGRES=1) unless the
// test server can be reached.
func Require(tb testing.TB) {
	tb.Helper()
	if reachable() == nil {
		return
	}
	skipOrFail(tb, "no PostgreSQL at "+Host(DSN())+" (set A2AD_TEST_POSTGRES to a server's URL)")
}

// skipOrFail skips tb with msg, the reason it cannot run, or fails it
// under A2AD_REQUIRE_POSTGRES=1.
func skipOrFail(tb testing.TB, msg string) {
	tb.Helper()
	if os.Getenv("A2AD_REQUIRE_POSTGRES") == "1" {
		tb.Fatal(msg + "; A2AD_REQUIRE_POSTGRES=1 makes that a failure")
	}
	tb.Skip(msg)
}

// Schema creates a schema with a new name on the test server, drops it
// with everything in it when tb ends, and returns the test server's URL
// with that schema as its search_path: whatever a store opened on it
// creates goes there.
func Schema(tb testing.TB) string {
	tb.Helper()
	Require(tb)
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "a2ad_test_" + hex.EncodeToString(b[:])
	exec(tb, "CREATE SCHEMA "+name)
	tb.Cleanup(func() { exec(tb, "DROP SCHEMA "+name+" CASCADE") })
	return WithSearchPath(tb, DSN(), name)
}

// WithSearchPath returns dsn with schema as its search_path.
func WithSearchPath(tb testing.TB, dsn, schema string) string {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatalf("A2AD_TEST_POSTGRES does not parse as a URL")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// exec runs sql on the test server, failing tb if it fails.
func exec(tb testing.TB, sql string) {
	tb.Helper()
	Exec(tb, DSN(), sql)
}

// Exec runs sql on the server of dsn (in its search_path), failing tb if
// it fails.
func Exec(tb testing.TB, dsn, sql string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connect to PostgreSQL at %s: %v", Host(dsn), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}
