package tasks_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// downStore is a store whose writes fail with ErrStoreUnavailable while
// down is set, as a database's do while it cannot be reached.
type downStore struct {
	tasks.Store
	down    atomic.Bool
	refused atomic.Int64
}

func (s *downStore) Update(ctx context.Context, owner, id string, key *tasks.IdemKey, sc tasks.Scope, fn tasks.UpdateFunc) (*tasks.Record, []tasks.Event, bool, error) {
	if s.down.Load() {
		s.refused.Add(1)
		return nil, nil, false, fmt.Errorf("update: %w: connection refused", tasks.ErrStoreUnavailable)
	}
	return s.Store.Update(ctx, owner, id, key, sc, fn)
}

// TestResultStoredOnceTheStoreIsBack: a call that ends while the store is
// unavailable keeps its result and stores it once the store is back,
// rather than losing it; the task completes with its artifact.
func TestResultStoredOnceTheStoreIsBack(t *testing.T) {
	bs, err := boltstore.Open(filepath.Join(t.TempDir(), "a2ad.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ds := &downStore{Store: bs}
	release := make(chan struct{})
	cat := functions.NewCatalog(fn(t, "demo::echo", blockingBackend(release)))
	svc := tasks.New(tasks.Config{Store: ds, Catalog: func() *functions.Catalog { return cat }, Logger: zerolog.Nop()})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := svc.Close(cctx); err != nil {
			t.Error(err)
		}
		bs.Close()
	})
	e := &env{svc: svc}
	task, _, err := svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::echo", `{"n":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, e, tasks.Caller{}, task.ID, a2a.StateWorking)
	ds.down.Store(true)
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for ds.refused.Load() < 2 { // the result, and at least one try again
		if time.Now().After(deadline) {
			t.Fatalf("the store was asked %d times while down, want the result at least twice", ds.refused.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ds.down.Store(false)
	got := waitState(t, e, tasks.Caller{}, task.ID, a2a.StateCompleted)
	if len(got.Artifacts) != 1 || string(got.Artifacts[0].Parts[0].Data) != `{"n":1}` {
		t.Fatalf("artifacts %+v, want the call's output", got.Artifacts)
	}
}
