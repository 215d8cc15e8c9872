package tasks_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
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

// memStore is a store that keeps nothing, for BenchmarkSendDomain: every
// key is new, and Create stores the task as given. What its embedded
// Store (nil) would do panics: a one-commit send asks for nothing else.
type memStore struct{ tasks.Store }

func (memStore) Heartbeat(context.Context, string, time.Duration) error { return nil }
func (memStore) Orphans(context.Context, time.Duration, int) ([]*tasks.Record, error) {
	return nil, nil
}
func (memStore) Expire(context.Context, time.Time, int) (int, error) { return 0, nil }
func (memStore) Lookup(context.Context, tasks.IdemKey) (*tasks.Record, error) {
	return nil, tasks.ErrNotFound
}
func (memStore) Create(_ context.Context, key tasks.IdemKey, rec *tasks.Record, _ []tasks.Event) (*tasks.Record, bool, error) {
	r := *rec
	r.MessageIDs = append(r.MessageIDs[:len(r.MessageIDs):len(r.MessageIDs)], key.MessageID)
	return &r, true, nil
}

// BenchmarkSendDomain is a2ad's blocking message/send of demo::echo (the
// builtin, retry-safe, with the example catalogue's input schema) as the
// domain does it, over a store that costs nothing: one send after
// another, so that allocs/op are the domain's own, exactly, and ns/op its
// CPU (the call runs on a goroutine of its own).
func BenchmarkSendDomain(b *testing.B) {
	echo, err := functions.NewBuiltin("echo")
	if err != nil {
		b.Fatal(err)
	}
	f := fn(b, "demo::echo", echo, func(f *functions.Function) {
		f.RetrySafe = true
		f.Input = mustSchema(b, `{"type":"object","properties":{"message":{"type":"string","description":"Text to send back."}}}`)
	})
	cat := functions.NewCatalog(f)
	svc := tasks.New(tasks.Config{Store: memStore{}, Catalog: func() *functions.Catalog { return cat }, Logger: zerolog.Nop(), RetentionInterval: time.Hour})
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := svc.Close(ctx); err != nil {
			b.Error(err)
		}
	})
	data := json.RawMessage(`{"skill":"demo::echo","input":{"message":"hello"}}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		msg := a2a.Message{MessageID: "m" + strconv.Itoa(i), Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(data)}}
		task, _, err := svc.Send(ctx, tasks.Caller{}, send(msg))
		if err != nil || task.Status.State != a2a.StateCompleted || len(task.Artifacts) != 1 {
			b.Fatalf("send: %v %+v", err, task)
		}
	}
}
