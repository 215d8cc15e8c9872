package boltstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

func TestTransitionsQueueDeliveriesInTheSameCommit(t *testing.T) {
	s := MustOpen(t, "")
	var woken atomic.Int64
	s.SetOutboxHook(func() { woken.Add(1) })
	now := time.Now()
	rec := newRecord("t1", "o", a2a.StateWorking, now)
	rec.PushConfigs = []a2a.PushConfig{
		{ID: "a", URL: "https://a.example/hook", Token: "tok"},
		{ID: "b", URL: "https://b.example/hook", Authentication: &a2a.PushAuth{Schemes: []string{"Bearer"}, Credentials: "secret"}},
	}
	if _, _, err := s.Create(ctx, key("o", "m1", "x"), rec, []tasks.Event{statusEvent(a2a.StateWorking)}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 0 || woken.Load() != 0 {
		t.Fatalf("a working task queued %d deliveries", n)
	}
	complete := func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = a2a.StateCompleted
		return []tasks.Event{statusEvent(a2a.StateCompleted)}, nil
	}
	if _, _, _, err := s.Update(ctx, "o", "t1", nil, complete); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 2 || woken.Load() != 1 {
		t.Fatalf("completion queued %d deliveries, woke %d times; want 2, 1", n, woken.Load())
	}
	due, err := s.Due(ctx, time.Now(), 10)
	if err != nil || len(due) != 2 {
		t.Fatalf("Due = %d, %v", len(due), err)
	}
	var body struct {
		Kind   string         `json:"kind"`
		ID     string         `json:"id"`
		Status a2a.TaskStatus `json:"status"`
	}
	if err := json.Unmarshal(due[0].Body, &body); err != nil || body.Kind != "task" || body.ID != "t1" || body.Status.State != a2a.StateCompleted {
		t.Fatalf("delivery body %s", due[0].Body)
	}
	if due[0].Token != "tok" || due[1].Auth == nil || due[1].Auth.Credentials != "secret" {
		t.Fatalf("deliveries %+v", due)
	}
}

func TestDueKeepsOrderPerWebhook(t *testing.T) {
	s := MustOpen(t, "")
	now := time.Now()
	// Two tasks, one webhook each; the first task has three deliveries.
	for _, id := range []string{"t1", "t2"} {
		rec := newRecord(id, "o", a2a.StateWorking, now)
		rec.PushConfigs = []a2a.PushConfig{{ID: "c", URL: "https://x.example/" + id}}
		if _, _, err := s.Create(ctx, key("o", id, id), rec, []tasks.Event{statusEvent(a2a.StateWorking)}); err != nil {
			t.Fatal(err)
		}
	}
	flip := func(st a2a.TaskState) tasks.UpdateFunc {
		return func(r *tasks.Record) ([]tasks.Event, error) {
			r.Task.Status.State = st
			return []tasks.Event{statusEvent(st)}, nil
		}
	}
	for _, st := range []a2a.TaskState{a2a.StateInputRequired, a2a.StateWorking, a2a.StateInputRequired, a2a.StateWorking, a2a.StateCompleted} {
		if _, _, _, err := s.Update(ctx, "o", "t1", nil, flip(st)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := s.Update(ctx, "o", "t2", nil, flip(a2a.StateFailed)); err != nil {
		t.Fatal(err)
	}
	due, _ := s.Due(ctx, time.Now(), 10)
	if len(due) != 2 || due[0].TaskID != "t1" || due[1].TaskID != "t2" {
		t.Fatalf("Due %+v: want the first delivery of each webhook", due)
	}
	first := due[0].ID
	// A retry pushes the head into the future: nothing of t1 is due then.
	if err := s.Retry(ctx, first, 1, time.Now().Add(time.Hour), "HTTP 503"); err != nil {
		t.Fatal(err)
	}
	due, _ = s.Due(ctx, time.Now(), 10)
	if len(due) != 1 || due[0].TaskID != "t2" {
		t.Fatalf("after a retry: %+v", due)
	}
	// Once delivered, the next of t1 comes, in order.
	if err := s.Delivered(ctx, first); err != nil {
		t.Fatal(err)
	}
	due, _ = s.Due(ctx, time.Now(), 10)
	if len(due) != 2 || due[0].TaskID != "t1" || due[0].ID <= first {
		t.Fatalf("after delivery: %+v", due)
	}
	// Dead letters leave the outbox and list without secrets.
	if err := s.Dead(ctx, due[1].ID, 8, "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	dead, err := s.DeadLetters(ctx, 0, 10)
	if err != nil || len(dead) != 1 || dead[0].TaskID != "t2" || dead[0].LastError != "HTTP 500" || dead[0].Attempts != 8 {
		t.Fatalf("dead letters %+v %v", dead, err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 2 {
		t.Fatalf("outbox depth %d, want 2", n)
	}
	if n, err := s.DeadLetterCount(ctx); err != nil || n != 1 {
		t.Fatalf("DeadLetterCount = %d, %v; want 1", n, err)
	}
	if tail, _ := s.DeadLetters(ctx, math.MaxUint64, 10); len(tail) != 0 {
		t.Fatalf("dead letters after the last possible id: %+v", tail)
	}
	// Operations on a finished delivery are no-ops.
	if err := s.Retry(ctx, due[1].ID, 9, time.Now(), "x"); err != nil {
		t.Fatal(err)
	}
}

func TestPushConfigsNeverLoseAConcurrentChange(t *testing.T) {
	s := MustOpen(t, "")
	if _, _, err := s.Create(ctx, key("o", "m", "m"), newRecord("t", "o", a2a.StateWorking, time.Now()), nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.PushConfigs(ctx, "o", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) {
				return append(c, a2a.PushConfig{ID: fmt.Sprint(i), URL: "https://x/"}), nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, _ := s.PushConfigs(ctx, "o", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) { return c, nil })
	if len(got) != 20 {
		t.Fatalf("%d configs after 20 concurrent adds", len(got))
	}
	if _, err := s.PushConfigs(ctx, "mallory", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) { return c, nil }); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("foreign task: %v", err)
	}
}

// TestUpdateKeepsAWebhookAddedMeanwhile: a transition racing a webhook
// change must not write back the record it read before the change.
func TestUpdateKeepsAWebhookAddedMeanwhile(t *testing.T) {
	s := MustOpen(t, "")
	if _, _, err := s.Create(ctx, key("o", "m", "m"), newRecord("t", "o", a2a.StateWorking, time.Now()), nil); err != nil {
		t.Fatal(err)
	}
	added := false
	_, _, _, err := s.Update(ctx, "o", "t", nil, func(r *tasks.Record) ([]tasks.Event, error) {
		if !added {
			// The webhook lands between Update's read and its write.
			added = true
			if _, err := s.PushConfigs(ctx, "o", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) {
				return append(c, a2a.PushConfig{ID: "w", URL: "https://x/"}), nil
			}); err != nil {
				return nil, err
			}
		}
		r.Task.Status.State = a2a.StateCompleted
		return []tasks.Event{statusEvent(a2a.StateCompleted)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, "o", "t")
	if got.State() != a2a.StateCompleted || len(got.PushConfigs) != 1 {
		t.Fatalf("after the race: state %s, %d webhooks; want completed with the webhook", got.State(), len(got.PushConfigs))
	}
}
