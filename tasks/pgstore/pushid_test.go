package pgstore_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// TestLongPushConfigIDNeverStrandsItsTask: a task whose webhook's id is
// too long for the outbox's index (40 KB of random bytes, as a store
// written before the id caps may hold) still ends: its cancel is stored,
// and the other webhook's delivery is queued (issue 25: the task stayed
// working for good, every transition failing on the outbox's index row
// limit, and could not be canceled).
func TestLongPushConfigIDNeverStrandsItsTask(t *testing.T) {
	s := mustOpen(t, pgtest.Schema(t))
	raw := make([]byte, 20<<10)
	_, _ = rand.Read(raw)
	long := hex.EncodeToString(raw) // 40 KB that do not compress
	r := storetest.NewRecord("t1", "alice", a2a.StateWorking, time.Now())
	r.PushConfigs = []a2a.PushConfig{{ID: long, URL: "https://127.0.0.1:9/a"}, {ID: "short", URL: "https://127.0.0.1:9/b"}}
	storetest.Create(t, s, r)
	got, _, _, err := s.Update(ctx, "alice", "t1", nil, tasks.Head, storetest.Flip(a2a.StateCanceled))
	if err != nil || got.State() != a2a.StateCanceled {
		t.Fatalf("cancel of a task with a 40 KB webhook id = %v, %v; want it canceled", got, err)
	}
	if got, err := s.Get(ctx, "alice", "t1", tasks.Head); err != nil || got.State() != a2a.StateCanceled {
		t.Fatalf("the task after its cancel: %v, %v", got, err)
	}
	due, err := s.Due(ctx, time.Now().Add(time.Hour), 10)
	if err != nil || len(due) != 1 || due[0].ConfigID != "short" {
		t.Fatalf("deliveries queued = %+v, %v; want the short webhook's alone", due, err)
	}
}
