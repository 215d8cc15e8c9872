package pgstore_test

import (
	"errors"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// TestServerLostAndBack: while the server cannot be reached (a proxy in
// front of it is cut), reads, writes and Ping fail with
// ErrStoreUnavailable and nothing is half-written; a refusal of what was
// asked is never that error; once the server is back the same store
// serves again.
func TestServerLostAndBack(t *testing.T) {
	dsn := pgtest.Schema(t)
	p := pgtest.NewProxy(t, dsn)
	s := mustOpen(t, p.DSN(dsn))
	storetest.WithHooks(t, s, "t1", 1)
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping while up: %v", err)
	}
	if _, err := s.Get(ctx, "o", "nope", tasks.Head); !errors.Is(err, tasks.ErrNotFound) || errors.Is(err, tasks.ErrStoreUnavailable) {
		t.Fatalf("Get of no task while up: %v, want ErrNotFound alone", err)
	}
	before, err := s.Get(ctx, "o", "t1", tasks.Whole)
	if err != nil {
		t.Fatal(err)
	}

	p.Cut()
	if err := s.Ping(ctx); !errors.Is(err, tasks.ErrStoreUnavailable) {
		t.Fatalf("Ping while cut: %v, want ErrStoreUnavailable", err)
	}
	if _, err := s.Get(ctx, "o", "t1", tasks.Head); !errors.Is(err, tasks.ErrStoreUnavailable) {
		t.Fatalf("Get while cut: %v, want ErrStoreUnavailable", err)
	}
	_, _, _, err = s.Update(ctx, "o", "t1", nil, tasks.Head, storetest.Flip(a2a.StateCompleted))
	if !errors.Is(err, tasks.ErrStoreUnavailable) {
		t.Fatalf("Update while cut: %v, want ErrStoreUnavailable", err)
	}

	p.Restore()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping once restored: %v", err)
	}
	after, err := s.Get(ctx, "o", "t1", tasks.Whole)
	if err != nil {
		t.Fatalf("Get once restored: %v", err)
	}
	if after.Seq != before.Seq || after.State() != before.State() {
		t.Fatalf("the task changed while the server was away: seq %d %s, was %d %s", after.Seq, after.State(), before.Seq, before.State())
	}
	storetest.MustUpdate(t, s, "o", "t1", storetest.Flip(a2a.StateCompleted))
	check(t, s)
}
