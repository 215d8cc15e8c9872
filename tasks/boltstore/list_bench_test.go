package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

const (
	listBenchTasks    = 10_000
	listBenchOwners   = 10
	listBenchContexts = 50 // five per owner, 200 tasks each
)

// listBenchStore builds a store of 10k benchmark tasks (see benchTask)
// over 10 owners, each owner's in five contexts.
func listBenchStore(b *testing.B) *boltstore.Store {
	b.Helper()
	path := filepath.Join(b.TempDir(), "a2ad.db")
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true, MaxBatch: 512})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	base := time.Now().Add(-time.Hour)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		fail atomic.Pointer[error]
	)
	for range 256 {
		wg.Go(func() {
			for j := int(next.Add(1) - 1); j < listBenchTasks; j = int(next.Add(1) - 1) {
				key, rec, events := benchTask(j, listBenchTasks, base)
				rec.Owner = fmt.Sprintf("caller-%d", j%listBenchOwners)
				key.Owner = rec.Owner
				rec.Task.ContextID = fmt.Sprintf("ctx-%d", j%listBenchContexts)
				if _, _, err := s.Create(context.Background(), key, rec, events); err != nil {
					fail.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := fail.Load(); err != nil {
		b.Fatal(*err)
	}
	return s
}

// BenchmarkList lists one owner's tasks (1000 of the store's 10k): the
// first page, a page from the middle, and filtered pages (which count the
// owner's matching entries for totalSize).
func BenchmarkList(b *testing.B) {
	s := listBenchStore(b)
	ctx := context.Background()
	owner := "caller-0" // holds the 100 tasks left working
	_, total, _, err := s.List(ctx, owner, tasks.ListFilter{}, nil, 1, tasks.Whole)
	if err != nil || total != listBenchTasks/listBenchOwners {
		b.Fatalf("owner has %d tasks, %v", total, err)
	}
	// The cursor half-way down the owner's tasks.
	recs, _, _, err := s.List(ctx, owner, tasks.ListFilter{}, nil, 100, tasks.Whole)
	if err != nil {
		b.Fatal(err)
	}
	var middle *tasks.Cursor
	for range 4 {
		_, _, middle, err = s.List(ctx, owner, tasks.ListFilter{}, middle, 100, tasks.Whole)
		if err != nil {
			b.Fatal(err)
		}
	}
	// About the 100 newest (status times have milliseconds).
	recent, _ := time.Parse(time.RFC3339Nano, recs[99].Task.Status.Timestamp)
	_, recentTotal, _, err := s.List(ctx, owner, tasks.ListFilter{StatusAfter: recent}, nil, 1, tasks.Whole)
	if err != nil || recentTotal < 100 || recentTotal > 200 {
		b.Fatalf("status after the 100th newest: %d tasks, %v", recentTotal, err)
	}
	cases := []struct {
		name  string
		f     tasks.ListFilter
		after *tasks.Cursor
		limit int
		total int
	}{
		{"first-page-50", tasks.ListFilter{}, nil, 50, 1000},
		{"first-page-100", tasks.ListFilter{}, nil, 100, 1000},
		{"middle-page-50", tasks.ListFilter{}, middle, 50, 1000},
		{"first-page-1", tasks.ListFilter{}, nil, 1, 1000},
		{"context-50", tasks.ListFilter{ContextID: "ctx-10"}, nil, 50, 200},
		{"state-working", tasks.ListFilter{State: a2a.StateWorking}, nil, 50, 100},
		{"state-completed-50", tasks.ListFilter{State: a2a.StateCompleted}, nil, 50, 900},
		{"status-after-newest-100", tasks.ListFilter{StatusAfter: recent}, nil, 50, recentTotal},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				recs, total, _, err := s.List(ctx, owner, c.f, c.after, c.limit, tasks.Whole)
				if err != nil || total != c.total || len(recs) != min(c.limit, c.total) {
					b.Fatalf("List: %d tasks, total %d (want %d), %v", len(recs), total, c.total, err)
				}
			}
		})
	}
}
