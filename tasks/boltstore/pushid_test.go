package boltstore_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// TestLongPushConfigIDNeverStrandsItsTask: a task whose webhook's id
// would make an outbox key past bbolt's 32 KiB (a store written before
// the id caps may hold one) still ends: its cancel is stored, checkpointed
// and read back after a reopen, and the other webhook's delivery is
// queued. Before, the cancel's outbox key failed the store's checkpoint
// and close (issue 25).
func TestLongPushConfigIDNeverStrandsItsTask(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := storetest.NewRecord("t1", "alice", a2a.StateWorking, time.Now())
	r.PushConfigs = []a2a.PushConfig{{ID: strings.Repeat("c", 40<<10), URL: "https://127.0.0.1:9/a"}, {ID: "short", URL: "https://127.0.0.1:9/b"}}
	storetest.Create(t, s, r)
	if got, _, _, err := s.Update(ctx, "alice", "t1", nil, tasks.Head, storetest.Flip(a2a.StateCanceled)); err != nil || got.State() != a2a.StateCanceled {
		t.Fatalf("cancel of a task with a 40 KB webhook id = %v, %v; want it canceled", got, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close after the cancel: %v", err)
	}
	s = MustOpen(t, path)
	if got, err := s.Get(ctx, "alice", "t1", tasks.Head); err != nil || got.State() != a2a.StateCanceled {
		t.Fatalf("the task after a reopen: %v, %v", got, err)
	}
	due, err := s.Due(ctx, time.Now().Add(time.Hour), 10)
	if err != nil || len(due) != 1 || due[0].ConfigID != "short" {
		t.Fatalf("deliveries queued = %+v, %v; want the short webhook's alone", due, err)
	}
}
