package pgstore_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// TestRacingCreatesOnThreeStores: 20 creates of one key at once, spread
// over three stores on one schema (replicas), store one task, and every
// one of them answers with it; the losers wrote nothing.
func TestRacingCreatesOnThreeStores(t *testing.T) {
	dsn := pgtest.Schema(t)
	stores := []*pgstore.Store{mustOpen(t, dsn), mustOpen(t, dsn), mustOpen(t, dsn)}
	const n = 20
	ids := make([]string, n)
	made := make([]bool, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			rec, events := quickTask(fmt.Sprintf("t%02d", i), "same")
			r, created, err := stores[i%3].Create(ctx, storetest.Key("anonymous", "same", "body"), rec, events)
			if err != nil {
				t.Errorf("Create %d: %v", i, err)
				return
			}
			ids[i], made[i] = r.Task.ID, created
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		if made[i] {
			if winner >= 0 {
				t.Fatalf("creates %d and %d both made a task", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no create made the task")
	}
	for i, id := range ids {
		if id != ids[winner] {
			t.Errorf("Create %d (store %d) answered %q, want the one task %q", i, i%3, id, ids[winner])
		}
	}
	got, err := stores[1].Get(ctx, "anonymous", ids[winner], tasks.Whole)
	if err != nil || got.State() != a2a.StateCompleted || len(got.Task.History) != 1 || len(got.Task.Artifacts) != 1 || got.Seq != 4 {
		t.Fatalf("the task: %+v, %v", got, err)
	}
	if n := counted(t, stores[2], "anonymous"); n != 1 {
		t.Fatalf("the owner's usage counts %d tasks, want 1", n)
	}
}

// TestQuotaHoldsUnderRacingCreates: new tasks at once, on two stores,
// against a quota of 5 (each create takes the owner's turn alone) and
// of max_connections + 10 (the first ones take it shared, with room for
// one task per connection, the last ones alone): exactly the quota is
// stored, and every other create is refused with the numbers.
func TestQuotaHoldsUnderRacingCreates(t *testing.T) {
	t.Run("small", func(t *testing.T) { racingQuota(t, 5, 20) })
	t.Run("large", func(t *testing.T) {
		var conns int
		if err := mustOpen(t, pgtest.Schema(t)).MaxConnections(ctx, &conns); err != nil {
			t.Fatal(err)
		}
		racingQuota(t, int64(conns+10), conns+40)
	})
}

func racingQuota(t *testing.T, limit int64, n int) {
	dsn := pgtest.Schema(t)
	stores := []*pgstore.Store{mustOpen(t, dsn), mustOpen(t, dsn)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			key := storetest.Key("alice", fmt.Sprintf("m%03d", i), "body")
			key.Quota = tasks.Quota{Tasks: limit, Bytes: 1 << 40}
			rec, events := quickTask(fmt.Sprintf("t%03d", i), key.MessageID)
			rec.Owner = "alice"
			_, _, errs[i] = stores[i%2].Create(ctx, key, rec, events)
		})
	}
	close(start)
	wg.Wait()
	var stored int64
	for i, err := range errs {
		var qe *tasks.QuotaError
		switch {
		case err == nil:
			stored++
		case errors.As(err, &qe):
			if *qe != (tasks.QuotaError{Which: tasks.QuotaTasks, Used: limit, Limit: limit}) {
				t.Errorf("Create %d refused with %+v", i, *qe)
			}
		default:
			t.Errorf("Create %d: %v", i, err)
		}
	}
	if stored != limit {
		t.Fatalf("%d tasks stored under a quota of %d", stored, limit)
	}
	if n := counted(t, stores[0], "alice"); int64(n) != limit {
		t.Fatalf("the owner's usage counts %d tasks, want %d", n, limit)
	}
}

// TestCreateOfATaskIDThatExists: a second task with an id taken, under
// another key, is refused and writes nothing (its key stays free).
func TestCreateOfATaskIDThatExists(t *testing.T) {
	s := mustOpen(t, pgtest.Schema(t))
	rec, events := quickTask("t1", "m1")
	if _, created, err := s.Create(ctx, storetest.Key("anonymous", "m1", "a"), rec, events); err != nil || !created {
		t.Fatalf("first Create: %v, created %v", err, created)
	}
	rec, events = quickTask("t1", "m2")
	_, _, err := s.Create(ctx, storetest.Key("anonymous", "m2", "b"), rec, events)
	if err == nil || err.Error() != "create task t1: id already exists" {
		t.Fatalf("second Create = %v, want the id refused", err)
	}
	if _, err := s.Lookup(ctx, storetest.Key("anonymous", "m2", "b")); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("Lookup of the refused create's key = %v, want ErrNotFound", err)
	}
}

// counted is the task count of owner's usage, as List totals it.
func counted(tb testing.TB, s *pgstore.Store, owner string) int {
	tb.Helper()
	_, n, _, err := s.List(ctx, owner, tasks.ListFilter{}, nil, 1, tasks.Head)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestConnectionsClaimDistinctShards: the connections of four stores on
// one schema (replicas) each bump a usage row of their own, so that no
// write waits for another's. (Without the claims, the stores' turns from
// random starts would overlap three times in four.)
func TestConnectionsClaimDistinctShards(t *testing.T) {
	dsn := pgtest.Schema(t)
	seen := map[int16]int{}
	for i := range 4 {
		s, err := pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 6})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		shards, err := s.Shards(ctx, 6)
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range shards {
			if sh < 0 || sh >= 64 {
				t.Fatalf("store %d: shard %d out of 0..63", i, sh)
			}
			seen[sh]++
		}
	}
	if len(seen) != 24 {
		t.Fatalf("24 connections of four stores claimed %d distinct shards: %v", len(seen), seen)
	}
}

// TestBoundKeyAnswersBeforeTheQuota: a create of a key bound already
// answers with its task, or ErrMessageIDReused for another message, even
// with the owner's quota full (the full transaction's order: the key,
// then the quota), as before the one-round-trip create.
func TestBoundKeyAnswersBeforeTheQuota(t *testing.T) {
	s := mustOpen(t, pgtest.Schema(t))
	key := storetest.Key("alice", "m1", "body")
	key.Quota = tasks.Quota{Tasks: 1, Bytes: 1 << 30}
	rec, events := quickTask("t1", "m1")
	rec.Owner = "alice"
	first, created, err := s.Create(ctx, key, rec, events)
	if err != nil || !created {
		t.Fatalf("first Create: %v, created %v", err, created)
	}
	rec, events = quickTask("t2", "m1")
	rec.Owner = "alice"
	again, created, err := s.Create(ctx, key, rec, events)
	if err != nil || created || again.Task.ID != "t1" || again.Seq != first.Seq || len(again.Task.History) != 1 {
		t.Fatalf("the same key again, the quota full: %+v, created %v, %v; want t1", again, created, err)
	}
	other := storetest.Key("alice", "m1", "another body")
	other.Quota = key.Quota
	if _, _, err := s.Create(ctx, other, rec, events); !errors.Is(err, tasks.ErrMessageIDReused) {
		t.Fatalf("the key with another message, the quota full: %v; want ErrMessageIDReused", err)
	}
	var qe *tasks.QuotaError
	k3 := storetest.Key("alice", "m3", "body")
	k3.Quota = key.Quota
	if _, _, err := s.Create(ctx, k3, rec, events); !errors.As(err, &qe) || *qe != (tasks.QuotaError{Which: tasks.QuotaTasks, Used: 1, Limit: 1}) {
		t.Fatalf("a new key, the quota full: %v; want the quota's refusal", err)
	}
}

// TestCreateThatTimesOutWritesNothing: a one-round-trip create whose
// batch the server cuts short (statement_timeout, waiting for the
// owner's quota turn that another session holds alone) fails with the
// server's error and writes nothing: its key stays free, the usage
// unchanged; once the turn is free the same create stores the task.
func TestCreateThatTimesOutWritesNothing(t *testing.T) {
	dsn := pgtest.Schema(t)
	// The schema is made first, without the timeout: on a loaded machine a
	// migration may take longer than the create is given.
	if err := mustOpen(t, dsn).Close(); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, dsn+"&options=-c%20statement_timeout%3D1000")
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	h := fnv.New32a()
	h.Write([]byte("alice"))
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, int32(0x71756f74), int32(h.Sum32())); err != nil {
		t.Fatal(err)
	}
	key := storetest.Key("alice", "m1", "body")
	key.Quota = tasks.Quota{Tasks: 10, Bytes: 1 << 30}
	rec, events := quickTask("t1", "m1")
	rec.Owner = "alice"
	_, _, err = s.Create(ctx, key, rec, events)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("Create while the quota's turn is held: %v; want the statement timeout", err)
	}
	if _, err := s.Lookup(ctx, key); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("Lookup of the key after the timeout: %v; want ErrNotFound", err)
	}
	if n := counted(t, s, "alice"); n != 0 {
		t.Fatalf("the usage counts %d tasks after the timeout", n)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock_all()`); err != nil {
		t.Fatal(err)
	}
	if _, created, err := s.Create(ctx, key, rec, events); err != nil || !created {
		t.Fatalf("Create once the turn is free: %v, created %v", err, created)
	}
	if n := counted(t, s, "alice"); n != 1 {
		t.Fatalf("the usage counts %d tasks, want 1", n)
	}
}
