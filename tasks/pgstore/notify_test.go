package pgstore_test

import (
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// notice is one call of a Follow func.
type notice struct {
	id          string
	first, last uint64
}

// hear returns a Follow func that passes notices on, and their channel.
func hear() (func(string, uint64, uint64), chan notice) {
	c := make(chan notice, 100)
	return func(id string, first, last uint64) { c <- notice{id, first, last} }, c
}

// next returns the next notice on c, or fails after 5s.
func next(tb testing.TB, c chan notice) notice {
	tb.Helper()
	select {
	case n := <-c:
		return n
	case <-time.After(5 * time.Second):
		tb.Fatal("no notice")
		return notice{}
	}
}

func working(r *tasks.Record) ([]tasks.Event, error) {
	return []tasks.Event{storetest.StatusEvent(a2a.StateWorking), storetest.StatusEvent(a2a.StateWorking)}, nil
}

// TestNoticesOfOtherStores: a store following a schema hears of the
// events another store commits to a task (id and the span of sequences),
// never of its own; when its listening connection is cut it connects
// again, says that notices may have been lost (id ""), and hears on.
func TestNoticesOfOtherStores(t *testing.T) {
	dsn := pgtest.Schema(t)
	a, b := mustOpen(t, dsn), mustOpen(t, dsn)
	fa, ca := hear()
	fb, cb := hear()
	a.Follow(fa)
	b.Follow(fb)
	if n := next(t, ca); n.id != "" {
		t.Fatalf("a's first notice %+v, want the one of listening", n)
	}
	if n := next(t, cb); n.id != "" {
		t.Fatalf("b's first notice %+v, want the one of listening", n)
	}
	storetest.WithHooks(t, a, "t1", 1) // a new task: no one follows it yet
	if _, _, _, err := a.Update(ctx, "o", "t1", nil, tasks.Head, working); err != nil {
		t.Fatal(err)
	}
	if n := next(t, cb); n != (notice{"t1", 2, 3}) {
		t.Fatalf("b heard %+v, want t1 2..3", n)
	}
	// Cut the listening connections, as a restart of the server would.
	exec(t, pgtest.DSN(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE query = 'LISTEN "`+b.Channel()+`"'`)
	if n := next(t, cb); n.id != "" {
		t.Fatalf("b after its connection was cut: %+v, want the one of listening again", n)
	}
	if _, _, _, err := a.Update(ctx, "o", "t1", nil, tasks.Head, working); err != nil {
		t.Fatal(err)
	}
	if n := next(t, cb); n != (notice{"t1", 4, 5}) {
		t.Fatalf("b heard %+v, want t1 4..5", n)
	}
	seqs, err := b.Seqs(ctx, []string{"t1", "t2"})
	if err != nil || len(seqs) != 1 || seqs["t1"] != 5 {
		t.Fatalf("Seqs = %v, %v; want t1 at 5 alone", seqs, err)
	}
	// a's connection was cut too (it listens on the same channel): it
	// hears of that, and of nothing else.
	time.Sleep(100 * time.Millisecond)
	for len(ca) > 0 {
		if n := <-ca; n.id != "" {
			t.Fatalf("a heard of its own commit: %+v", n)
		}
	}
}
