package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// expiring is a store that counts what its Expire deleted, and its errors
// (but that of a sweep its service's Close cut short).
type expiring struct {
	*pgstore.Store
	deleted, calls atomic.Int64
	mu             sync.Mutex
	errs           []error
}

func (s *expiring) Expire(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	n, err := s.Store.Expire(ctx, cutoff, limit)
	s.deleted.Add(int64(n))
	s.calls.Add(1)
	if err != nil && ctx.Err() == nil {
		s.mu.Lock()
		s.errs = append(s.errs, err)
		s.mu.Unlock()
	}
	return n, err
}

// seedRetention stores, in the schema at dsn, expired tasks (terminal,
// last updated two days ago) of three owners, each with a message, an
// idempotency key, its events and a delivery waiting for its webhook,
// and, beside them, tasks retention must leave alone: recent terminal
// ones (with a delivery too) and old ones waiting for input. It returns
// the ids of each kind, and how many of each owner's tasks are kept.
func seedRetention(t *testing.T, dsn string, expired, kept int) (gone, stay []string, keptBy map[string]int) {
	t.Helper()
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := time.Now().Add(-48 * time.Hour)
	keptBy = map[string]int{}
	add := func(id, owner string, end a2a.TaskState, at time.Time) {
		rec := storetest.NewRecord(id, owner, a2a.StateWorking, at)
		rec.Task.History = []a2a.Message{storetest.UserMessage("m-"+id, "hi")}
		rec.PushConfigs = []a2a.PushConfig{{ID: "h", URL: "https://hooks.example/" + id}}
		storetest.Create(t, s, rec)
		storetest.MustUpdate(t, s, owner, id, storetest.FlipAt(end, at))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range expired + kept {
		owner := fmt.Sprintf("o%d", i%3)
		id := fmt.Sprintf("t%04d", i)
		end, at := a2a.StateCompleted, old
		switch {
		case i < expired:
			end = []a2a.TaskState{a2a.StateCompleted, a2a.StateFailed, a2a.StateCanceled}[i%3]
			gone = append(gone, id)
		case i%2 == 0:
			at = time.Now() // too young
			stay, keptBy[owner] = append(stay, id), keptBy[owner]+1
		default:
			end = a2a.StateInputRequired // not terminal
			stay, keptBy[owner] = append(stay, id), keptBy[owner]+1
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			add(id, owner, end, at)
		})
	}
	wg.Wait()
	return gone, stay, keptBy
}

// TestReplicasExpireOnce runs retention on two replicas at once, on one
// PostgreSQL schema: each expired task is deleted exactly once (the
// deletions the two count add up to the expired tasks, and neither sees
// an error), with its events, messages, idempotency key and delivery;
// the owners' usage drops by exactly what was deleted; the tasks
// retention must keep are all there, with their deliveries.
func TestReplicasExpireOnce(t *testing.T) {
	dsn := pgtest.Schema(t)
	const expired, kept = 600, 60
	gone, stay, keptBy := seedRetention(t, dsn, expired, kept)

	stores := make([]*expiring, 2)
	svcs := make([]*tasks.Service, 2)
	cat := functions.NewCatalog()
	for i := range stores {
		s, err := pgstore.Open(ctx, dsn, pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = &expiring{Store: s}
		svcs[i] = tasks.New(tasks.Config{
			Store: stores[i], Catalog: func() *functions.Catalog { return cat }, Logger: zerolog.Nop(),
			Retention: 24 * time.Hour, RetentionInterval: 50 * time.Millisecond,
			RetentionBatch: 16, // many small transactions, interleaved between the replicas
		})
	}
	// Both sweep as they start, then every 50 ms.
	var wg sync.WaitGroup
	for _, svc := range svcs {
		wg.Go(func() {
			if err := svc.Start(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	total := func() int64 { return stores[0].deleted.Load() + stores[1].deleted.Load() }
	deadline := time.Now().Add(20 * time.Second)
	for total() < expired && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a few more sweeps, which find nothing
	for i, svc := range svcs {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := svc.Close(cctx); err != nil {
			t.Error(err)
		}
		cancel()
		defer stores[i].Close()
	}
	t.Logf("replica A deleted %d tasks in %d sweeps, B %d in %d", stores[0].deleted.Load(), stores[0].calls.Load(),
		stores[1].deleted.Load(), stores[1].calls.Load())
	for i, s := range stores {
		if len(s.errs) > 0 {
			t.Errorf("replica %d: %d sweeps failed, first: %v", i, len(s.errs), s.errs[0])
		}
	}
	if got := total(); got != expired {
		t.Fatalf("the replicas deleted %d tasks in all, want %d (each expired task once)", got, expired)
	}
	checkExpired(t, stores[0].Store, gone, stay, keptBy)
}

// checkExpired checks that s holds nothing of the tasks gone and every
// task of stay, and that each owner's usage counts keptBy tasks.
func checkExpired(t *testing.T, s *pgstore.Store, gone, stay []string, keptBy map[string]int) {
	t.Helper()
	for _, id := range gone {
		owner := fmt.Sprintf("o%d", idNumber(id)%3)
		if _, err := s.Get(ctx, owner, id, tasks.Whole); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("expired task %s: Get = %v, want ErrNotFound", id, err)
		}
		if evs, err := s.Events(ctx, id, 0); err != nil || len(evs) != 0 {
			t.Fatalf("expired task %s left %d events (%v)", id, len(evs), err)
		}
		if _, err := s.Lookup(ctx, storetest.Key(owner, "m-"+id, id)); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("expired task %s: its idempotency key: Lookup = %v, want ErrNotFound", id, err)
		}
	}
	for _, id := range stay {
		if _, err := s.Get(ctx, fmt.Sprintf("o%d", idNumber(id)%3), id, tasks.Whole); err != nil {
			t.Fatalf("kept task %s: %v", id, err)
		}
	}
	// The kept tasks keep their deliveries; the expired tasks' went with
	// them.
	if n, err := s.OutboxDepth(ctx); err != nil || n != len(stay) {
		t.Fatalf("outbox holds %d deliveries (%v), want %d (the kept tasks')", n, err, len(stay))
	}
	for owner, n := range keptBy {
		_, total, _, err := s.List(ctx, owner, tasks.ListFilter{}, nil, 1, tasks.Head)
		if err != nil || total != n {
			t.Fatalf("owner %s: usage counts %d tasks (%v), want %d", owner, total, err, n)
		}
	}
	problems, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("store check: %s", p)
	}
}

// idNumber is the number of a seeded task's id ("t0042": 42).
func idNumber(id string) int {
	var n int
	_, _ = fmt.Sscanf(id, "t%d", &n)
	return n
}
