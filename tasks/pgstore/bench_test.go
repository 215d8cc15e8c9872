package pgstore_test

import (
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// BenchmarkQuickSend is the store's side of a blocking send of a quick
// retry-safe call (demo::echo in a2abench): a Lookup of the message's
// key, then a Create of the task already completed, with its message,
// one artifact and four events, from 16 goroutines on a pool of 16
// connections (a2ad's default). The quota sub-benchmark sets a quota
// that is never reached, so that each create checks it.
//
//	go test -run '^$' -bench BenchmarkQuickSend -benchtime 5s ./tasks/pgstore/
func BenchmarkQuickSend(b *testing.B) {
	for _, bc := range []struct {
		name  string
		quota tasks.Quota
	}{{"quota=off", tasks.Quota{}}, {"quota=on", tasks.Quota{Tasks: 1 << 40, Bytes: 1 << 50}}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := pgstore.Open(ctx, pgtest.Schema(b), pgstore.Options{MaxConns: 16})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			benchQuickSend(b, s, bc.quota)
		})
	}
}

func benchQuickSend(b *testing.B, s *pgstore.Store, quota tasks.Quota) {
	var (
		next atomic.Int64
		mu   sync.Mutex
		lat  []time.Duration
	)
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ReportAllocs()
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			n := strconv.FormatInt(next.Add(1), 10)
			key := storetest.Key("anonymous", "m-"+n, n)
			key.Quota = quota
			start := time.Now()
			if _, err := s.Lookup(ctx, key); err != tasks.ErrNotFound {
				b.Errorf("Lookup: %v", err)
				return
			}
			rec, events := quickTask("t-"+n, key.MessageID)
			if _, created, err := s.Create(ctx, key, rec, events); err != nil || !created {
				b.Errorf("Create: %v, created %v", err, created)
				return
			}
			mine = append(mine, time.Since(start))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sends/s")
	// CPU per send: the server's (its processes behind the pool) and
	// this process's (the store and the goroutines sending).
	if pg, ok := s.BackendCPU(ctx); ok {
		b.ReportMetric(float64(pg.Microseconds())/float64(b.N), "pg-cpu-us/op")
	}
	var ru1 syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru1) == nil {
		used := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		b.ReportMetric(float64(used.Microseconds())/float64(b.N), "go-cpu-us/op")
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// quickTask is a task as a2ad stores a quick echo call: completed, with
// the user's message, an artifact holding the output, and the events
// submitted, working, the artifact, completed.
func quickTask(id, msgID string) (*tasks.Record, []tasks.Event) {
	now := time.Now()
	data := json.RawMessage(`{"skill":"demo::echo","input":{"message":"hello"}}`)
	msg := a2a.Message{MessageID: msgID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(data)}}
	art := a2a.Artifact{ArtifactID: "a-" + id, Name: "result", Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"message":"hello"}`))}}
	rec := storetest.NewRecord(id, "anonymous", a2a.StateCompleted, now)
	rec.FunctionID = "demo::echo"
	rec.Task.History = []a2a.Message{msg}
	rec.Task.Artifacts = []a2a.Artifact{art}
	events := []tasks.Event{
		storetest.StatusEvent(a2a.StateSubmitted), storetest.StatusEvent(a2a.StateWorking),
		{Artifact: &art}, storetest.StatusEvent(a2a.StateCompleted),
	}
	return rec, events
}
