package pgstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/costtest"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// bigForeignTask creates alice's task t-big: a 200 KB message in its
// history, an artifact, a status message and eight webhooks, so that its
// row (head, artifact index) is large. It returns the task's id and an
// id beside it that no task has.
func bigForeignTask(tb testing.TB, s *pgstore.Store) (id, missing string) {
	tb.Helper()
	rec := storetest.NewRecord("t-big-0001", "alice", a2a.StateWorking, time.Now())
	rec.Task.History = []a2a.Message{storetest.UserMessage("m-1", strings.Repeat("x", 200_000))}
	rec.Task.Artifacts = []a2a.Artifact{{ArtifactID: "a-1", Name: "out", Parts: []a2a.Part{a2a.TextPart(strings.Repeat("y", 10_000))}}}
	msg := storetest.UserMessage("m-status", strings.Repeat("z", 4_000))
	rec.Task.Status.Message = &msg
	for i := range 8 {
		rec.PushConfigs = append(rec.PushConfigs, a2a.PushConfig{ID: fmt.Sprintf("w%d", i), URL: fmt.Sprintf("https://hooks.example/%d", i)})
	}
	storetest.Create(tb, s, rec)
	return rec.Task.ID, costtest.Neighbour(rec.Task.ID)
}

// foreignReads are the store's reads of a task by its owner and id, as
// bob makes them: each must answer alice's task as ErrNotOwner and a
// missing one as ErrNotFound.
func foreignReads() []struct {
	name string
	call func(s *pgstore.Store, id string) error
} {
	never := func(*tasks.Record) ([]tasks.Event, error) { return nil, errors.New("fn called") }
	return []struct {
		name string
		call func(s *pgstore.Store, id string) error
	}{
		{"Get", func(s *pgstore.Store, id string) error { _, err := s.Get(ctx, "bob", id, tasks.Whole); return err }},
		{"Get of the head", func(s *pgstore.Store, id string) error { _, err := s.Get(ctx, "bob", id, tasks.Head); return err }},
		{"Update", func(s *pgstore.Store, id string) error {
			_, _, _, err := s.Update(ctx, "bob", id, nil, tasks.Whole, never)
			return err
		}},
		{"PushConfigs", func(s *pgstore.Store, id string) error {
			_, err := s.PushConfigs(ctx, "bob", id, func([]a2a.PushConfig) ([]a2a.PushConfig, error) { return nil, errors.New("fn called") })
			return err
		}},
	}
}

// TestForeignTaskCostsWhatAMissingOneDoes is the PostgreSQL counterpart of
// the service's test of that name (issue 25 item 7): every read of a task
// by its owner and id answers another owner's task as it does a missing
// one, at the same cost. Both come back from one statement as a row of
// the same shape with nothing of the task in it, so the allocations per
// call (which the bytes received and decoded decide) are the same, and
// the medians of 1,000 interleaved calls each are within 10%.
func TestForeignTaskCostsWhatAMissingOneDoes(t *testing.T) {
	if testing.Short() {
		t.Skip("times thousands of calls")
	}
	pgtest.Require(t)
	s := mustOpen(t, pgtest.Schema(t))
	id, missingID := bigForeignTask(t, s)
	for _, m := range foreignReads() {
		call := func(id string, want error) func() {
			return func() {
				if err := m.call(s, id); err != want { //nolint:errorlint // the very error, unwrapped
					t.Fatalf("%s(%s) = %v, want %v", m.name, id, err, want)
				}
			}
		}
		foreign, missing := call(id, tasks.ErrNotOwner), call(missingID, tasks.ErrNotFound)
		costtest.SameAllocs(t, m.name, 1, foreign, missing)
		costtest.SameTime(t, m.name, 1000, 0.10, foreign, missing)
	}
	// Nothing bob did touched alice's task.
	got, err := s.Get(ctx, "alice", id, tasks.Whole)
	if err != nil || got.State() != a2a.StateWorking || len(got.Task.History) != 1 || len(got.PushConfigs) != 8 {
		t.Fatalf("alice's task after bob's calls: %v", err)
	}
}

// BenchmarkForeignOrMissingTask times bob's Get of the head of alice's
// big task and of a missing one, for the comparison
// TestForeignTaskCostsWhatAMissingOneDoes makes with medians, and alice's
// own Get of the head for scale:
//
//	go test -run '^$' -bench BenchmarkForeignOrMissingTask -benchtime 3000x -count 6 ./tasks/pgstore/
func BenchmarkForeignOrMissingTask(b *testing.B) {
	pgtest.Require(b)
	s := mustOpen(b, pgtest.Schema(b))
	id, missingID := bigForeignTask(b, s)
	for _, bc := range []struct {
		name, owner, id string
		want            error
	}{{"task=foreign", "bob", id, tasks.ErrNotOwner}, {"task=missing", "bob", missingID, tasks.ErrNotFound}, {"task=own", "alice", id, nil}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Get(ctx, bc.owner, bc.id, tasks.Head); err != bc.want { //nolint:errorlint // the very error
					b.Fatalf("Get: %v, want %v", err, bc.want)
				}
			}
		})
	}
}
