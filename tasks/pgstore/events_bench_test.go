package pgstore_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// BenchmarkEvents measures Store.Events of random tasks of 1,000 quick
// ones (four events each, as BenchmarkQuickSend writes them), every
// event, as a stream's catch-up and the relay read them: record v2 reads
// the task's context id with them.
//
//	go test -run '^$' -bench BenchmarkEvents -benchtime 5s ./tasks/pgstore/
func BenchmarkEvents(b *testing.B) {
	s, err := pgstore.Open(ctx, pgtest.Schema(b), pgstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	const n = 1000
	for i := range n {
		id := strconv.Itoa(i)
		key := storetest.Key("anonymous", "m-"+id, id)
		rec, events := quickTask("t-"+id, key.MessageID)
		if _, created, err := s.Create(ctx, key, rec, events); err != nil || !created {
			b.Fatalf("Create: %v, created %v", err, created)
		}
	}
	rng := rand.New(rand.NewPCG(1, uint64(b.N)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		id := "t-" + strconv.Itoa(rng.IntN(n))
		if evs, err := s.Events(ctx, id, 0); err != nil || len(evs) != 4 {
			b.Fatalf("events of %s: %d, %v", id, len(evs), err)
		}
	}
}
