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
	st "github.com/a2ad/a2ad/tasks/storetest"
)

// TestKeyBoundOnceByCreateOrFollowUp: a create and a follow-up of one key
// racing each other, each in its own one-round-trip batch, bind it once:
// either the create made its task (and the follow-up is told the id is
// reused) or the follow-up bound it (and the create answers that task,
// not created); afterwards a create of that key answers the task it is
// bound to.
func TestKeyBoundOnceByCreateOrFollowUp(t *testing.T) {
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
