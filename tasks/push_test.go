package tasks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// Guard is a fake URL checker: it refuses URLs containing "internal".
type Guard struct{}

func (Guard) Check(_ context.Context, u string) error {
	if strings.Contains(u, "internal") {
		return errors.New(`webhook host "internal" resolves to a private address (10.0.0.5)`)
	}
	return nil
}

func TestPushConfigsOfATask(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e := newEnv(t, tasks.Config{PushGuard: Guard{}}, fn(t, "demo::slow", blockingBackend(release)))
	p := nonBlocking(dataMsg("m1", "demo::slow", `{}`))
	p.PushConfig = &a2a.PushConfig{URL: "https://hooks.example/a", Token: "t1"}
	task, _, err := e.svc.Send(ctx, tasks.Caller{ID: "o"}, p)
	if err != nil {
		t.Fatal(err)
	}
	// The send's webhook got the task's id.
	got, err := e.svc.PushConfig(ctx, tasks.Caller{ID: "o"}, task.ID, "")
	if err != nil || got.PushNotificationConfig.ID != task.ID || got.PushNotificationConfig.Token != "t1" {
		t.Fatalf("PushConfig = %+v, %v", got, err)
	}
	if _, err := e.svc.SetPushConfig(ctx, tasks.Caller{ID: "o"}, task.ID, a2a.PushConfig{ID: "b", URL: "https://hooks.example/b"}); err != nil {
		t.Fatal(err)
	}
	// A refused follow-up message adds no webhook.
	m := textMsg("m2", "more")
	m.TaskID = task.ID
	fp := nonBlocking(m)
	fp.PushConfig = &a2a.PushConfig{ID: "c", URL: "https://hooks.example/c"}
	if _, _, err := e.svc.Send(ctx, tasks.Caller{ID: "o"}, fp); !errors.Is(err, tasks.ErrTaskBusy) {
		t.Fatalf("follow-up to a running task: %v", err)
	}
	list, _ := e.svc.PushConfigList(ctx, tasks.Caller{ID: "o"}, task.ID)
	if len(list) != 2 {
		t.Fatalf("%d webhooks after a refused follow-up, want 2", len(list))
	}
	if err := e.svc.DeletePushConfig(ctx, tasks.Caller{ID: "o"}, task.ID, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.PushConfig(ctx, tasks.Caller{ID: "o"}, task.ID, "b"); !errors.Is(err, tasks.ErrPushConfigNotFound) {
		t.Fatalf("deleted config: %v", err)
	}
	// Refused URLs name the problem and store nothing.
	var ie *tasks.InputError
	_, err = e.svc.SetPushConfig(ctx, tasks.Caller{ID: "o"}, task.ID, a2a.PushConfig{URL: "https://internal/x"})
	if !errors.As(err, &ie) || len(ie.Problems) != 1 || ie.Problems[0].Path != "/pushNotificationConfig/url" ||
		!strings.Contains(ie.Problems[0].Message, "private address") {
		t.Fatalf("refused URL: %v", err)
	}
	bad := nonBlocking(dataMsg("m3", "demo::slow", `{}`))
	bad.PushConfig = &a2a.PushConfig{URL: "https://internal/x"}
	if _, _, err := e.svc.Send(ctx, tasks.Caller{ID: "o"}, bad); !errors.As(err, &ie) || ie.Problems[0].Path != "/configuration/pushNotificationConfig/url" {
		t.Fatalf("refused URL on send: %v", err)
	}
	if active, _ := e.store.Active(ctx); len(active) != 1 {
		t.Fatalf("a refused send stored a task: %d active", len(active))
	}
	// Another caller's task is not found, before any URL check.
	if _, err := e.svc.SetPushConfig(ctx, tasks.Caller{ID: "mallory"}, task.ID, a2a.PushConfig{URL: "https://internal/x"}); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("foreign task: %v", err)
	}
	// Without a guard, push is off.
	e2 := newEnv(t, tasks.Config{}, fn(t, "demo::echo", echoBackend()))
	task2, _, _ := e2.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{}`)))
	if _, err := e2.svc.SetPushConfig(ctx, tasks.Caller{}, task2.ID, a2a.PushConfig{URL: "https://hooks.example/a"}); !errors.Is(err, tasks.ErrPushUnavailable) {
		t.Fatalf("no guard: %v", err)
	}
}

// An accepted follow-up message adds its webhook to the task.
func TestFollowUpAddsItsWebhook(t *testing.T) {
	e := newEnv(t, tasks.Config{PushGuard: Guard{}}, fn(t, "demo::echo", echoBackend()))
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(textMsg("m1", "hello")))
	if err != nil || task.Status.State != a2a.StateInputRequired {
		t.Fatalf("send: %v", err)
	}
	m := dataMsg("m2", "demo::echo", `{}`)
	m.TaskID = task.ID
	p := send(m)
	p.PushConfig = &a2a.PushConfig{ID: "c", URL: "https://hooks.example/c"}
	done, _, err := e.svc.Send(ctx, tasks.Caller{}, p)
	if err != nil || done.Status.State != a2a.StateCompleted {
		t.Fatalf("follow-up: %v", err)
	}
	if got, err := e.svc.PushConfig(ctx, tasks.Caller{}, task.ID, "c"); err != nil || got.PushNotificationConfig.URL != "https://hooks.example/c" {
		t.Fatalf("webhook of the follow-up: %+v, %v", got, err)
	}
	// It heard of the completion the message led to.
	due, err := e.store.Due(ctx, time.Now().Add(time.Minute), 10)
	if err != nil || len(due) != 1 || due[0].ConfigID != "c" {
		t.Fatalf("outbox after the follow-up: %+v, %v", due, err)
	}
	if err := e.store.Request(ctx, &due[0]); err != nil || due[0].Task.Status.State != a2a.StateCompleted {
		t.Fatalf("request of the follow-up's delivery: %+v, %v", due[0].Task, err)
	}
}
