package pgstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
	st "github.com/a2ad/a2ad/tasks/storetest"
)

// TestKeyBoundOnceInRowOrIdem: a key a create holds in its task's row and
// the same key a follow-up binds in idem are one key. A create and a
// follow-up of one key racing each other bind it once: either the create
// made its task (and the follow-up is told the id is reused) or the
// follow-up bound it (and the create answers that task, not created);
// afterwards a create of that key answers the task it is bound to.
func TestKeyBoundOnceInRowOrIdem(t *testing.T) {
	dsn := pgtest.Schema(t)
	s := mustOpen(t, dsn)
	byCreate, byUpdate := 0, 0
	for round := range 30 {
		follow := fmt.Sprintf("f%d", round)
		if _, ok, err := s.Create(ctx, st.Key("o", "base-"+follow, "b"), st.NewRecord(follow, "o", a2a.StateInputRequired, time.Now()), nil); err != nil || !ok {
			t.Fatalf("Create %s: %v, %v", follow, ok, err)
		}
		key := st.Key("o", fmt.Sprintf("k%d", round), "x")
		var (
			wg                sync.WaitGroup
			created           bool
			answered          string
			createErr, updErr error
		)
		wg.Go(func() {
			// The follow-up reads its task first: the create starts later
			// by a little more each round, so that some rounds race.
			time.Sleep(time.Duration(round) * 50 * time.Microsecond)
			var r *tasks.Record
			r, created, createErr = s.Create(ctx, key, st.NewRecord(fmt.Sprintf("n%d", round), "o", a2a.StateSubmitted, time.Now()),
				[]tasks.Event{st.StatusEvent(a2a.StateSubmitted)})
			if createErr == nil {
				answered = r.Task.ID
			}
		})
		wg.Go(func() {
			_, _, _, updErr = s.Update(ctx, "o", follow, &key, tasks.Head, st.Flip(a2a.StateSubmitted))
		})
		wg.Wait()
		switch {
		case createErr != nil:
			t.Fatalf("round %d: Create: %v", round, createErr)
		case created && errors.Is(updErr, tasks.ErrMessageIDReused):
			byCreate++
		case !created && updErr == nil && answered == follow:
			byUpdate++
		default:
			t.Fatalf("round %d: create made a task %v (answered %s), follow-up: %v", round, created, answered, updErr)
		}
		again := st.NewRecord(fmt.Sprintf("again%d", round), "o", a2a.StateSubmitted, time.Now())
		r, made, err := s.Create(ctx, key, again, nil)
		if err != nil || made || (created && r.Task.ID != fmt.Sprintf("n%d", round)) || (!created && r.Task.ID != follow) {
			t.Fatalf("round %d: a second create of the key: %v, created %v, %v", round, r, made, err)
		}
	}
	t.Logf("bound by the create %d times, by the follow-up %d", byCreate, byUpdate)
}

// TestImportOfAKeyHeldInATaskRow: an imported task whose key a task of
// the store was created with (the key in that task's row, not in idem)
// is ErrExists, and nothing of the batch is written.
func TestImportOfAKeyHeldInATaskRow(t *testing.T) {
	s := mustOpen(t, pgtest.Schema(t))
	st.Create(t, s, st.NewRecord("t1", "o", a2a.StateCompleted, time.Now()))
	rec := st.NewRecord("t2", "o", a2a.StateCompleted, time.Now())
	rec.Seq = 1
	k := st.Key("o", "m-t1", "t1")
	e := &tasks.Exported{Record: rec, Events: []tasks.Event{{Seq: 1, Status: &a2a.TaskStatus{State: a2a.StateCompleted}}},
		Keys: []tasks.ExportedKey{{MessageID: k.MessageID, Hash: k.Hash}}}
	err := s.Import(ctx, []*tasks.Exported{e})
	if !errors.Is(err, pgstore.ErrExists) || err.Error() != "import: a key of the batch is bound to a task of the store: exists already in the target store" {
		t.Fatalf("Import: %v, want ErrExists", err)
	}
	if _, err := s.Get(ctx, "o", "t2", tasks.Head); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("Get t2 after the refused import: %v", err)
	}
	e.Keys[0].MessageID = "m-t2"
	if err := s.Import(ctx, []*tasks.Exported{e}); err != nil {
		t.Fatalf("Import with a free key: %v", err)
	}
	if r, err := s.Lookup(ctx, st.Key("o", "m-t2", "t1")); err != nil || r.Task.ID != "t2" {
		t.Fatalf("Lookup of the imported key: %v, %v", r, err)
	}
}
