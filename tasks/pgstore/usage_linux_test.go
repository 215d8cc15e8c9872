package pgstore_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// TestUsageStaysExactAsConnectionsComeAndGo: one owner's creates race on
// two stores (replicas), one with more connections than there are usage
// shards, while the server ends some of their sessions (releasing their
// shards' locks, so that the connections taking their place may share a
// row with a live one) and then restarts: the usage counts exactly the
// tasks stored, the quota is never passed, and no session holds more
// than one shard's lock.
func TestUsageStaysExactAsConnectionsComeAndGo(t *testing.T) {
	pg := pgtest.StartPrivate(t)
	open := func(conns int32) *pgstore.Store {
		s, err := pgstore.Open(ctx, pg.DSN(), pgstore.Options{MaxConns: conns})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	stores := []*pgstore.Store{open(70), open(8)}
	const limit = 400
	round := func(name string, n int, during func()) {
		var (
			wg     sync.WaitGroup
			failed atomic.Int32
		)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				key := storetest.Key("alice", fmt.Sprintf("%s-%03d", name, i), "body")
				key.Quota = tasks.Quota{Tasks: limit, Bytes: 1 << 40}
				rec, events := quickTask(fmt.Sprintf("%s-%03d", name, i), key.MessageID)
				rec.Owner = "alice"
				if _, _, err := stores[i%2].Create(ctx, key, rec, events); err != nil {
					failed.Add(1) // with its session (the first use of each after the restart), or over the quota
				}
			})
		}
		close(start)
		if during != nil {
			during()
		}
		wg.Wait()
		t.Logf("round %s: %d of %d creates failed", name, failed.Load(), n)
	}
	admin, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	round("a", 200, func() {
		if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND pid % 3 = 0`); err != nil {
			t.Error(err)
		}
	})
	var doubled int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM (SELECT pid FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 1 GROUP BY pid HAVING count(*) > 1) x`).Scan(&doubled); err != nil {
		t.Fatal(err)
	}
	if doubled != 0 {
		t.Errorf("%d sessions hold more than one usage shard's lock", doubled)
	}
	_ = admin.Close(ctx)
	pg.Stop()
	pg.Start()
	round("b", 200, nil)
	round("c", 200, nil)
	for _, s := range stores {
		check(t, s)
	}
	var stored int
	if err := stores[0].Count(ctx, "alice", &stored); err != nil {
		t.Fatal(err)
	}
	if n := counted(t, stores[1], "alice"); n != stored || n > limit {
		t.Fatalf("the usage counts %d tasks, %d stored, under a quota of %d", n, stored, limit)
	}
	t.Logf("%d tasks stored", stored)
}
