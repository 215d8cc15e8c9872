package tasks_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// BenchmarkSendEcho measures blocking message/send of an echo function
// through the Service, with the real bbolt store (fsync on), from 16
// goroutines: each send creates the task, runs the call and commits
// working and completed before it returns. The HTTP round trip is
// measured by cmd/a2abench.
func BenchmarkSendEcho(b *testing.B) {
	b.Run("parallel-16", func(b *testing.B) {
		e := newEnv(b, tasks.Config{}, fn(b, "demo::echo", echoBackend()))
		var next atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(8) // 8 × GOMAXPROCS (2 here) = 16 goroutines
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id := "m" + strconv.FormatInt(next.Add(1), 10)
				task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg(id, "demo::echo", `{"message":"hello"}`)))
				if err != nil {
					b.Error(err)
					return
				}
				if task.Status.State != a2a.StateCompleted {
					b.Errorf("task %s is %s", task.ID, task.Status.State)
					return
				}
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sends/s")
		commits, writes := e.store.Counts()
		if commits > 0 {
			b.ReportMetric(float64(writes)/float64(commits), "writes/commit")
		}
	})
}
