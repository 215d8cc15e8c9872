package boltstore_test

import (
	"math/rand/v2"
	"testing"

	"github.com/a2ad/a2ad/tasks/boltstore"
)

// BenchmarkEvents measures Store.Events of random tasks (every event,
// as a stream's catch-up reads them) in the store of 1e4 completed tasks:
// what record v2 adds to it is the read of the task's ids from its head.
func BenchmarkEvents(b *testing.B) {
	const n = 1e4
	path := preloaded(b, n)
	warm(b, path)
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	rng := rand.New(rand.NewPCG(1, uint64(b.N)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		id := benchTaskID(rng.IntN(n))
		evs, err := s.Events(ctx, id, 0)
		if err != nil || len(evs) == 0 {
			b.Fatalf("events of %s: %d, %v", id, len(evs), err)
		}
	}
}
