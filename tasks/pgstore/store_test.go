package pgstore_test

import (
	"context"
	"testing"

	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

var ctx = context.Background()

// mustOpen opens a store on dsn; it is checked and closed when tb ends
// (unless the test closed it).
func mustOpen(tb testing.TB, dsn string) *pgstore.Store {
	tb.Helper()
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if s.Closed() {
			return
		}
		check(tb, s)
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

func check(tb testing.TB, s *pgstore.Store) {
	tb.Helper()
	problems, err := s.Check(ctx)
	if err != nil {
		tb.Fatalf("check: %v", err)
	}
	for _, p := range problems {
		tb.Errorf("check: %s", p)
	}
}

// TestConformance runs the store conformance suite, each contract on a
// schema of its own, in parallel.
func TestConformance(t *testing.T) {
	pgtest.Require(t)
	storetest.Run(t, func(t *testing.T) *storetest.Subject {
		t.Parallel()
		dsn := pgtest.Schema(t)
		open := func(t *testing.T) *pgstore.Store { return mustOpen(t, dsn) }
		return storetest.Reopening(t, open, check)
	})
}
