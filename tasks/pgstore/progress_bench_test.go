package pgstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// BenchmarkProgressWrite is the store's side of a running call's progress
// note (a keyless Update with a working status of 200 bytes), one writer,
// without and with the caller's quota checked (Record.WriteQuota, issue
// 25: the check takes the owner's advisory lock and sums its usage).
//
//	go test -run '^$' -bench BenchmarkProgressWrite -benchtime 2000x ./tasks/pgstore/
func BenchmarkProgressWrite(b *testing.B) {
	for _, bc := range []struct {
		name  string
		quota tasks.Quota
	}{{"quota=off", tasks.Quota{}}, {"quota=on", tasks.Quota{Bytes: 1 << 50}}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := pgstore.Open(ctx, pgtest.Schema(b), pgstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			storetest.Create(b, s, storetest.NewRecord("t1", "acme", a2a.StateWorking, time.Now()))
			note := strings.Repeat("n", 200)
			b.ReportAllocs()
			for b.Loop() {
				_, _, _, err := s.Update(ctx, "acme", "t1", nil, tasks.Head, func(r *tasks.Record) ([]tasks.Event, error) {
					r.WriteQuota = bc.quota
					st := a2a.TaskStatus{State: a2a.StateWorking, Message: &a2a.Message{MessageID: "n", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(note)}}}
					r.Task.Status = st
					return []tasks.Event{{Status: &st}}, nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
