package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/schemas"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// Backend is a hand-written fake backend: Fn runs each call.
type Backend struct {
	Fn    func(ctx context.Context, input json.RawMessage) (functions.Result, error)
	calls atomic.Int64
}

func (b *Backend) Kind() string { return "fake" }

func (b *Backend) Invoke(ctx context.Context, input json.RawMessage) (functions.Result, error) {
	b.calls.Add(1)
	return b.Fn(ctx, input)
}

func echoBackend() *Backend {
	return &Backend{Fn: func(_ context.Context, in json.RawMessage) (functions.Result, error) {
		return functions.Result{Output: in}, nil
	}}
}

// approvalBackend asks "Approve the order?" until a call's input has
// "approved": true, then answers {"ok":true} after delay.
func approvalBackend(delay time.Duration) *Backend {
	return &Backend{Fn: func(_ context.Context, in json.RawMessage) (functions.Result, error) {
		var v struct{ Approved bool }
		_ = json.Unmarshal(in, &v)
		if !v.Approved {
			return functions.Result{InputRequired: "Approve the order?"}, nil
		}
		time.Sleep(delay)
		return functions.Result{Output: json.RawMessage(`{"ok":true}`)}, nil
	}}
}

// blockingBackend blocks each call until release is closed or the call's
// context ends.
func blockingBackend(release <-chan struct{}) *Backend {
	return &Backend{Fn: func(ctx context.Context, in json.RawMessage) (functions.Result, error) {
		select {
		case <-release:
			return functions.Result{Output: in}, nil
		case <-ctx.Done():
			return functions.Result{}, &functions.CallError{Reason: "call canceled", Err: ctx.Err()}
		}
	}}
}

func mustSchema(tb testing.TB, s string) *schemas.Schema {
	tb.Helper()
	sc, err := schemas.Compile("test.json", []byte(s))
	if err != nil {
		tb.Fatal(err)
	}
	return sc
}

func fn(tb testing.TB, id string, b functions.Backend, opts ...func(*functions.Function)) *functions.Function {
	f := &functions.Function{
		ID:       id,
		Name:     id,
		Metadata: map[string]any{exposure.MetaExpose: true},
		Input:    mustSchema(tb, `{"type":"object"}`),
		Timeout:  10 * time.Second,
		Backend:  b,
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

type env struct {
	svc   *tasks.Service
	store *boltstore.Store
	path  string
	cat   *functions.Catalog
}

func newEnv(tb testing.TB, cfg tasks.Config, fns ...*functions.Function) *env {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "a2ad.db")
	return openEnv(tb, path, cfg, fns...)
}

func openEnv(tb testing.TB, path string, cfg tasks.Config, fns ...*functions.Function) *env {
	tb.Helper()
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	cat := functions.NewCatalog(fns...)
	cfg.Store = store
	cfg.Catalog = func() *functions.Catalog { return cat }
	cfg.Logger = zerolog.Nop()
	svc := tasks.New(cfg)
	if err := svc.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	e := &env{svc: svc, store: store, path: path, cat: cat}
	tb.Cleanup(func() { e.close(tb) })
	return e
}

func (e *env) close(tb testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.svc.Close(ctx); err != nil {
		tb.Error(err)
	}
	if err := e.store.Close(); err != nil {
		tb.Error(err)
	}
}

var ctx = context.Background()

func dataMsg(msgID, skill string, input string) a2a.Message {
	d := fmt.Sprintf(`{"skill":%q,"input":%s}`, skill, input)
	return a2a.Message{MessageID: msgID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(json.RawMessage(d))}}
}

func textMsg(msgID, text string) a2a.Message {
	return a2a.Message{MessageID: msgID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}
}

func send(m a2a.Message) a2a.SendParams { return a2a.SendParams{Message: m} }

func nonBlocking(m a2a.Message) a2a.SendParams {
	f := false
	return a2a.SendParams{Message: m, Blocking: &f}
}

func statusText(t *a2a.Task) string {
	if t.Status.Message == nil || len(t.Status.Message.Parts) == 0 {
		return ""
	}
	return t.Status.Message.Parts[0].Text
}

func waitState(tb testing.TB, e *env, caller tasks.Caller, id string, want a2a.TaskState) *a2a.Task {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		task, err := e.svc.Get(ctx, caller, id, nil)
		if err != nil {
			tb.Fatal(err)
		}
		if task.Status.State == want {
			return task
		}
		if time.Now().After(deadline) {
			tb.Fatalf("task %s is %s, want %s", id, task.Status.State, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBlockingSendCompletesWithArtifact(t *testing.T) {
	e := newEnv(t, tasks.Config{}, fn(t, "demo::echo", echoBackend()))
	for _, tc := range []struct {
		name, input string
		want        a2a.Part
	}{
		{"object", `{"a":1}`, a2a.DataPart(json.RawMessage(`{"a":1}`))},
	} {
		task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m-"+tc.name, "demo::echo", tc.input)))
		if err != nil {
			t.Fatal(err)
		}
		if task.Status.State != a2a.StateCompleted {
			t.Fatalf("%s: state %s (%s)", tc.name, task.Status.State, statusText(task))
		}
		if len(task.Artifacts) != 1 || task.Artifacts[0].Name != "demo::echo" {
			t.Fatalf("%s: artifacts %+v", tc.name, task.Artifacts)
		}
		got, _ := v03.AppendPart(nil, &task.Artifacts[0].Parts[0])
		want, _ := v03.AppendPart(nil, &tc.want)
		if string(got) != string(want) {
			t.Fatalf("%s: part %s, want %s", tc.name, got, want)
		}
		if task.ID == "" || task.ContextID == "" || task.History[0].TaskID != task.ID || task.History[0].ContextID != task.ContextID {
			t.Fatalf("ids not filled in: %+v", task)
		}
	}
}

func TestOutputParts(t *testing.T) {
	outputs := map[string]string{
		`{"a":1}`: `{"kind":"data","data":{"a":1}}`,
		`[1,2]`:   `{"kind":"data","data":{"items":[1,2]}}`,
		`"hello"`: `{"kind":"text","text":"hello"}`,
		`42`:      `{"kind":"text","text":"42"}`,
		`true`:    `{"kind":"text","text":"true"}`,
	}
	for out, want := range outputs {
		b := &Backend{Fn: func(context.Context, json.RawMessage) (functions.Result, error) {
			return functions.Result{Output: json.RawMessage(out)}, nil
		}}
		e := newEnv(t, tasks.Config{}, fn(t, "demo::out", b))
		task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m", "demo::out", `{}`)))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := v03.AppendPart(nil, &task.Artifacts[0].Parts[0])
		if string(got) != want {
			t.Errorf("output %s: part %s, want %s", out, got, want)
		}
	}
}

func TestTextPartNamesFunction(t *testing.T) {
	b := echoBackend()
	e := newEnv(t, tasks.Config{}, fn(t, "text::count", b))
	for _, tc := range []struct{ text, want string }{
		{`text::count {"n": 2}`, `{"n":2}`},
		{`text::count hello world`, `{"text":"hello world"}`},
		{`  text::count  `, `{}`},
	} {
		task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(textMsg("m-"+tc.text, tc.text)))
		if err != nil {
			t.Fatal(err)
		}
		got := string(task.Artifacts[0].Parts[0].Data)
		if got != tc.want {
			t.Errorf("%q: input %s, want %s", tc.text, got, tc.want)
		}
	}
	// "please run text::count" names nothing: the first word must hold "::".
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(textMsg("m-please", "please run text::count")))
	if err != nil || task.Status.State != a2a.StateInputRequired {
		t.Fatalf("please run: %v %v", err, task.Status.State)
	}
	// The iii form.
	iii := a2a.Message{MessageID: "m-iii", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"function_id":"text::count","payload":{"x":1}}`))}}
	task, _, err = e.svc.Send(ctx, tasks.Caller{}, send(iii))
	if err != nil || string(task.Artifacts[0].Parts[0].Data) != `{"x":1}` {
		t.Fatalf("iii form: %v %+v", err, task)
	}
}

func TestConcurrentDuplicatesRunOnce(t *testing.T) {
	release := make(chan struct{})
	b := blockingBackend(release)
	e := newEnv(t, tasks.Config{}, fn(t, "demo::slow", b))
	const n = 50
	var wg sync.WaitGroup
	ids := make([]string, n)
	states := make([]a2a.TaskState, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task, _, err := e.svc.Send(ctx, tasks.Caller{ID: "alice"}, send(dataMsg("same", "demo::slow", `{"k":1}`)))
			if err != nil {
				t.Error(err)
				return
			}
			ids[i], states[i] = task.ID, task.Status.State
		}()
	}
	time.Sleep(100 * time.Millisecond) // let every duplicate reach its wait
	close(release)
	wg.Wait()
	for i := range n {
		if ids[i] != ids[0] || states[i] != a2a.StateCompleted {
			t.Fatalf("send %d: task %s state %s; want %s completed", i, ids[i], states[i], ids[0])
		}
	}
	if c := b.calls.Load(); c != 1 {
		t.Fatalf("backend called %d times, want 1", c)
	}
	// Another caller with the same messageId gets its own task.
	task, _, err := e.svc.Send(ctx, tasks.Caller{ID: "bob"}, send(dataMsg("same", "demo::slow", `{"k":1}`)))
	if err != nil || task.ID == ids[0] {
		t.Fatalf("bob: %v, task %s", err, task.ID)
	}
}

func TestMessageIDReusedWithDifferentMessage(t *testing.T) {
	e := newEnv(t, tasks.Config{}, fn(t, "demo::echo", echoBackend()))
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{"a":1}`))); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{"a":2}`)))
	if !errors.Is(err, tasks.ErrMessageIDReused) {
		t.Fatalf("err = %v, want ErrMessageIDReused", err)
	}
}

func TestSendToTerminalTaskIsRefused(t *testing.T) {
	b := echoBackend()
	e := newEnv(t, tasks.Config{}, fn(t, "demo::echo", b))
	first, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	m := dataMsg("m2", "demo::echo", `{}`)
	m.TaskID = first.ID
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m)); !errors.Is(err, tasks.ErrTaskTerminal) {
		t.Fatalf("message to a terminal task: err = %v, want ErrTaskTerminal", err)
	}
	// A retry of the message that made the task returns it unchanged.
	retry := dataMsg("m1", "demo::echo", `{}`)
	wantReplayed(t, e, retry, first, b)
	// A taskId the caller does not own is not found.
	m.TaskID = first.ID
	if _, _, err := e.svc.Send(ctx, tasks.Caller{ID: "mallory"}, send(m)); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("foreign taskId: %v", err)
	}
}

// wantReplayed sends m again, as the anonymous caller, and fails t unless
// the answer is want, byte for byte, and b has run once in all.
func wantReplayed(t *testing.T, e *env, m a2a.Message, want *a2a.Task, b *Backend) {
	t.Helper()
	again, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(want)
	c, _ := json.Marshal(again)
	if string(a) != string(c) || b.calls.Load() != 1 {
		t.Fatalf("the retried message changed the task or ran again (calls %d):\n%s\n%s", b.calls.Load(), a, c)
	}
}

// TestRetryOfAFollowUpToAFinishedTask: a follow-up message that a task
// took, sent again after the task finished, returns the task (and runs
// nothing); the same messageId with another message is refused.
func TestRetryOfAFollowUpToAFinishedTask(t *testing.T) {
	b := echoBackend()
	e := newEnv(t, tasks.Config{}, fn(t, "demo::echo", b))
	first, _, err := e.svc.Send(ctx, tasks.Caller{}, send(textMsg("m1", "hello")))
	if err != nil || first.Status.State != a2a.StateInputRequired {
		t.Fatalf("first message: %v, %v; want input-required", first, err)
	}
	follow := dataMsg("m2", "demo::echo", `{"a":1}`)
	follow.TaskID = first.ID
	done, _, err := e.svc.Send(ctx, tasks.Caller{}, send(follow))
	if err != nil || done.Status.State != a2a.StateCompleted {
		t.Fatalf("follow-up: %v, %v; want completed", done, err)
	}
	wantReplayed(t, e, follow, done, b)
	other := dataMsg("m2", "demo::echo", `{"a":2}`)
	other.TaskID = first.ID
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(other)); !errors.Is(err, tasks.ErrMessageIDReused) {
		t.Fatalf("messageId reused with another message on a finished task: %v, want ErrMessageIDReused", err)
	}
}

func TestCancelStopsTheRunningCall(t *testing.T) {
	sawCancel := make(chan struct{})
	b := &Backend{Fn: func(ctx context.Context, _ json.RawMessage) (functions.Result, error) {
		<-ctx.Done()
		close(sawCancel)
		return functions.Result{}, &functions.CallError{Reason: "call canceled"}
	}}
	e := newEnv(t, tasks.Config{}, fn(t, "demo::wait", b))
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m", "demo::wait", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, e, tasks.Caller{}, task.ID, a2a.StateWorking)
	got, err := e.svc.Cancel(ctx, tasks.Caller{}, task.ID)
	if err != nil || got.Status.State != a2a.StateCanceled {
		t.Fatalf("Cancel = %v, %v", got, err)
	}
	select {
	case <-sawCancel:
	case <-time.After(5 * time.Second):
		t.Fatal("the running call never saw the cancel")
	}
	time.Sleep(20 * time.Millisecond)
	if final := waitState(t, e, tasks.Caller{}, task.ID, a2a.StateCanceled); len(final.Artifacts) != 0 {
		t.Fatalf("canceled task has artifacts: %+v", final.Artifacts)
	}
	if _, err := e.svc.Cancel(ctx, tasks.Caller{}, task.ID); !errors.Is(err, tasks.ErrNotCancelable) {
		t.Fatalf("second cancel: %v, want ErrNotCancelable", err)
	}
	if _, err := e.svc.Cancel(ctx, tasks.Caller{}, "no-such-task"); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("cancel unknown: %v, want ErrNotFound", err)
	}
	if _, err := e.svc.Cancel(ctx, tasks.Caller{ID: "mallory"}, task.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("cancel foreign: %v, want ErrNotFound", err)
	}
}

// TestCancelCompleteRace runs cancel against completion many times: the
// outcome is one or the other, never a mix, and a cancel that succeeded
// always wins.
func TestCancelCompleteRace(t *testing.T) {
	b := &Backend{Fn: func(ctx context.Context, in json.RawMessage) (functions.Result, error) {
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		return functions.Result{Output: in}, nil
	}}
	e := newEnv(t, tasks.Config{}, fn(t, "demo::quick", b))
	iterations := 300
	if testing.Short() {
		iterations = 50
	}
	var canceled, completed int
	for i := range iterations {
		task, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg(fmt.Sprint("m", i), "demo::quick", `{}`)))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		_, cerr := e.svc.Cancel(ctx, tasks.Caller{}, task.ID)
		// Wait until the run is over, then check the outcome.
		var final *a2a.Task
		for range 1000 {
			final, _ = e.svc.Get(ctx, tasks.Caller{}, task.ID, nil)
			if final.Status.State.Terminal() {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Millisecond)
		final, _ = e.svc.Get(ctx, tasks.Caller{}, task.ID, nil)
		switch {
		case cerr == nil:
			canceled++
			if final.Status.State != a2a.StateCanceled || len(final.Artifacts) != 0 {
				t.Fatalf("iteration %d: cancel succeeded but task is %s with %d artifacts", i, final.Status.State, len(final.Artifacts))
			}
		case errors.Is(cerr, tasks.ErrNotCancelable):
			completed++
			if final.Status.State != a2a.StateCompleted || len(final.Artifacts) != 1 {
				t.Fatalf("iteration %d: cancel refused but task is %s with %d artifacts", i, final.Status.State, len(final.Artifacts))
			}
		default:
			t.Fatalf("iteration %d: cancel: %v", i, cerr)
		}
	}
	t.Logf("%d canceled, %d completed", canceled, completed)
}

func TestInputRequiredWhenNoSkillIsNamed(t *testing.T) {
	hidden := fn(t, "demo::hidden", echoBackend(), func(f *functions.Function) { f.Metadata = nil })
	e := newEnv(t, tasks.Config{}, fn(t, "demo::echo", echoBackend()), hidden)
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(textMsg("m1", "hello there")))
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.StateInputRequired {
		t.Fatalf("state %s, want input-required", task.Status.State)
	}
	hint := statusText(task)
	if !strings.Contains(hint, "demo::echo") || strings.Contains(hint, "demo::hidden") || !strings.Contains(hint, task.ID) {
		t.Fatalf("hint does not list exactly the callable skills and the task id: %q", hint)
	}
	// A follow-up that still names nothing keeps it waiting.
	m := textMsg("m2", "what?")
	m.TaskID = task.ID
	again, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m))
	if err != nil || again.Status.State != a2a.StateInputRequired {
		t.Fatalf("vague follow-up: %v %s", err, again.Status.State)
	}
	m = dataMsg("m3", "demo::echo", `{"x":1}`)
	m.TaskID = task.ID
	done, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m))
	if err != nil || done.Status.State != a2a.StateCompleted || done.ID != task.ID {
		t.Fatalf("follow-up naming a skill: %v %+v", err, done)
	}
	if len(done.History) < 5 {
		t.Fatalf("history has %d messages, want the whole conversation", len(done.History))
	}
}

func TestBackendAsksForInput(t *testing.T) {
	b := approvalBackend(0)
	e := newEnv(t, tasks.Config{}, fn(t, "orders::place", b))
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "orders::place", `{"sku":"a"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.StateInputRequired || statusText(task) != "Approve the order?" {
		t.Fatalf("state %s text %q", task.Status.State, statusText(task))
	}
	// The answer is a plain data part: it is the function's new input.
	m := a2a.Message{MessageID: "m2", TaskID: task.ID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"sku":"a","approved":true}`))}}
	done, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m))
	if err != nil || done.Status.State != a2a.StateCompleted {
		t.Fatalf("answer: %v %s", err, done.Status.State)
	}
	if b.calls.Load() != 2 {
		t.Fatalf("calls = %d, want 2", b.calls.Load())
	}
	// Retrying the answer does not run the function a third time.
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m)); err != nil || b.calls.Load() != 2 {
		t.Fatalf("retried answer: %v, calls %d", err, b.calls.Load())
	}
	// Naming another skill in the answer is refused.
	task2, _, _ := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m3", "orders::place", `{}`)))
	m4 := dataMsg("m4", "other::skill", `{}`)
	m4.TaskID = task2.ID
	var ie *tasks.InputError
	if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m4)); !errors.As(err, &ie) || !errors.Is(err, tasks.ErrInvalidInput) ||
		len(ie.Problems) != 1 || ie.Problems[0].Path != "/message/parts" ||
		ie.Problems[0].Message != `names skill "other::skill", but this task calls "orders::place"` {
		t.Fatalf("answer naming another skill: %v", err)
	}
}

func TestRejectedTexts(t *testing.T) {
	notOptedIn := fn(t, "demo::quiet", echoBackend(), func(f *functions.Function) { f.Metadata = map[string]any{"a2a.expose": "true"} })
	partner := fn(t, "demo::partner", echoBackend(), func(f *functions.Function) {
		f.Metadata = map[string]any{"a2a.expose": true, "a2a.tier": "partner"}
	})
	floor := fn(t, "engine::status", echoBackend())
	e := newEnv(t, tasks.Config{Policy: exposure.Policy{Tier: "internal"}}, notOptedIn, partner, floor)
	texts := map[string]string{}
	for _, id := range []string{"demo::quiet", "demo::partner", "demo::missing", "engine::status"} {
		task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m-"+id, id, `{}`)))
		if err != nil {
			t.Fatal(err)
		}
		if task.Status.State != a2a.StateRejected {
			t.Fatalf("%s: state %s", id, task.Status.State)
		}
		texts[id] = strings.ReplaceAll(statusText(task), id, "ID")
	}
	if texts["demo::quiet"] != texts["demo::missing"] || texts["demo::partner"] != texts["demo::missing"] {
		t.Fatalf("unknown and unexposed functions must read alike: %q", texts)
	}
	if texts["engine::status"] == texts["demo::missing"] {
		t.Fatalf("the hard floor must have its own text: %q", texts)
	}
	if want := "Function 'ID' is not an available skill"; texts["demo::missing"] != want {
		t.Fatalf("denial text %q, want %q", texts["demo::missing"], want)
	}
	if want := "Function 'ID' is in a reserved namespace and is never exposed as an A2A skill"; texts["engine::status"] != want {
		t.Fatalf("floor text %q, want %q", texts["engine::status"], want)
	}
}

func TestInvalidInputStoresNothing(t *testing.T) {
	f := fn(t, "pricing::quote", echoBackend(), func(f *functions.Function) {
		f.Input = mustSchema(t, `{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"},"quantity":{"type":"integer","minimum":1}}}`)
	})
	e := newEnv(t, tasks.Config{}, f)
	_, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "pricing::quote", `{"quantity":0}`)))
	var ie *tasks.InputError
	if !errors.As(err, &ie) || !errors.Is(err, tasks.ErrInvalidInput) || ie.Skill != "pricing::quote" {
		t.Fatalf("err = %v, want an InputError of pricing::quote", err)
	}
	b, _ := json.Marshal(ie.Problems)
	if !strings.Contains(string(b), `"path":"/quantity"`) || !strings.Contains(string(b), `"path":""`) {
		t.Fatalf("errors %s: want /quantity and the missing sku at the root", b)
	}
	if active, _ := e.store.Active(ctx); len(active) != 0 {
		t.Fatalf("an invalid call stored %d tasks", len(active))
	}
	// The messageId was not consumed: a corrected message with it runs.
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "pricing::quote", `{"sku":"a","quantity":1}`)))
	if err != nil || task.Status.State != a2a.StateCompleted {
		t.Fatalf("corrected message: %v", err)
	}
}

func TestFailuresAreSanitised(t *testing.T) {
	failing := &Backend{Fn: func(context.Context, json.RawMessage) (functions.Result, error) {
		return functions.Result{}, &functions.CallError{Reason: "function returned HTTP 500", Err: errors.New("POST http://10.0.0.7:9000/secret?token=abc: 500")}
	}}
	panicky := &Backend{Fn: func(context.Context, json.RawMessage) (functions.Result, error) {
		return functions.Result{}, errors.New("dial tcp 10.0.0.7: refused")
	}}
	badOut := fn(t, "demo::badout", echoBackend(), func(f *functions.Function) { f.Output = mustSchema(t, `{"required":["total"]}`) })
	slow := fn(t, "demo::slow", blockingBackend(make(chan struct{})), func(f *functions.Function) { f.Timeout = 50 * time.Millisecond })
	e := newEnv(t, tasks.Config{}, fn(t, "demo::fail", failing), fn(t, "demo::raw", panicky), badOut, slow)
	for id, want := range map[string]string{
		"demo::fail":   "function returned HTTP 500",
		"demo::raw":    "Function call failed",
		"demo::badout": "Function returned output that does not match its output schema",
		"demo::slow":   "Function call timed out after 50ms",
	} {
		task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m-"+id, id, `{}`)))
		if err != nil {
			t.Fatal(err)
		}
		if task.Status.State != a2a.StateFailed || statusText(task) != want {
			t.Errorf("%s: %s %q, want failed %q", id, task.Status.State, statusText(task), want)
		}
		if b, _ := json.Marshal(task); strings.Contains(string(b), "10.0.0.7") {
			t.Errorf("%s: internal address leaked: %s", id, b)
		}
	}
}

func TestQueueFullIsRefusedAndStoresNothing(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e := newEnv(t, tasks.Config{MaxConcurrent: 1, MaxQueue: 1}, fn(t, "demo::slow", blockingBackend(release)))
	for i := range 2 {
		if _, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg(fmt.Sprint("m", i), "demo::slow", `{}`))); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	_, _, err := e.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m2", "demo::slow", `{}`)))
	if !errors.Is(err, tasks.ErrBusy) {
		t.Fatalf("third send: %v, want ErrBusy", err)
	}
	if active, _ := e.store.Active(ctx); len(active) != 2 {
		t.Fatalf("%d tasks stored, want 2", len(active))
	}
}

func TestPerFunctionConcurrencyCap(t *testing.T) {
	var running, peak atomic.Int64
	b := &Backend{Fn: func(_ context.Context, in json.RawMessage) (functions.Result, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
		return functions.Result{Output: in}, nil
	}}
	e := newEnv(t, tasks.Config{}, fn(t, "demo::capped", b, func(f *functions.Function) { f.MaxConcurrency = 2 }))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg(fmt.Sprint("m", i), "demo::capped", `{}`))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak concurrency %d, want 2", p)
	}
}

func TestBlockingCapReturnsTaskAsItStands(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e := newEnv(t, tasks.Config{BlockingTimeout: 100 * time.Millisecond}, fn(t, "demo::slow", blockingBackend(release)))
	start := time.Now()
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m", "demo::slow", `{}`)))
	if err != nil || task.Status.State != a2a.StateWorking {
		t.Fatalf("blocking send past the cap: %v %v", err, task.Status.State)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Fatalf("returned after %s, want about 100ms", d)
	}
}

func TestHistoryLength(t *testing.T) {
	e := newEnv(t, tasks.Config{}, fn(t, "demo::echo", echoBackend()))
	task, _, _ := e.svc.Send(ctx, tasks.Caller{}, send(textMsg("m1", "hi")))
	for i := 2; i <= 3; i++ {
		m := textMsg(fmt.Sprint("m", i), "still nothing")
		m.TaskID = task.ID
		if _, _, err := e.svc.Send(ctx, tasks.Caller{}, send(m)); err != nil {
			t.Fatal(err)
		}
	}
	full, _ := e.svc.Get(ctx, tasks.Caller{}, task.ID, nil)
	if len(full.History) != 6 {
		t.Fatalf("history %d, want 6 (3 user, 3 agent)", len(full.History))
	}
	for n, want := range map[int]int{0: 0, 1: 1, 4: 4, 100: 6} {
		got, _ := e.svc.Get(ctx, tasks.Caller{}, task.ID, &n)
		if len(got.History) != want {
			t.Errorf("historyLength %d: %d messages, want %d", n, len(got.History), want)
		}
		if want > 0 && got.History[len(got.History)-1].MessageID != full.History[5].MessageID {
			t.Errorf("historyLength %d did not keep the most recent", n)
		}
	}
}

// leftBehind writes recs to a new store file, each with its status
// event and its id as the message id, as a killed process would have
// left them; it returns the file's path.
func leftBehind(tb testing.TB, recs ...*tasks.Record) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "a2ad.db")
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	for _, rec := range recs {
		key := tasks.IdemKey{Owner: rec.Owner, MessageID: rec.Task.ID}
		if _, _, err := store.Create(ctx, key, rec, []tasks.Event{{Status: &rec.Task.Status}}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := store.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestRecoveryAfterCrash simulates what a killed process leaves behind
// (tasks stuck in submitted and working) and checks the start-up sweep.
func TestRecoveryAfterCrash(t *testing.T) {
	now := time.Now()
	stuck := []struct {
		id, fn string
		st     a2a.TaskState
	}{
		{"t-working", "demo::once", a2a.StateWorking},
		{"t-submitted", "demo::once", a2a.StateSubmitted},
		{"t-retry", "demo::retry", a2a.StateWorking},
		{"t-input", "demo::once", a2a.StateInputRequired},
		{"t-gone", "demo::removed", a2a.StateWorking},
	}
	var recs []*tasks.Record
	for _, s := range stuck {
		recs = append(recs, &tasks.Record{
			Task:       a2a.Task{ID: s.id, ContextID: "c", Status: a2a.TaskStatus{State: s.st}},
			FunctionID: s.fn, Input: json.RawMessage(`{"n":1}`), CreatedAt: now, UpdatedAt: now,
		})
	}
	path := leftBehind(t, recs...)
	once, retry := echoBackend(), echoBackend()
	e := openEnv(t, path, tasks.Config{},
		fn(t, "demo::once", once),
		fn(t, "demo::retry", retry, func(f *functions.Function) { f.RetrySafe = true }))
	for _, id := range []string{"t-working", "t-submitted", "t-gone"} {
		task := waitState(t, e, tasks.Caller{}, id, a2a.StateFailed)
		if statusText(task) != "interrupted: server restarted" {
			t.Errorf("%s: %q", id, statusText(task))
		}
	}
	task := waitState(t, e, tasks.Caller{}, "t-retry", a2a.StateCompleted)
	if string(task.Artifacts[0].Parts[0].Data) != `{"n":1}` || retry.calls.Load() != 1 {
		t.Fatalf("retry-safe task: %+v calls %d", task, retry.calls.Load())
	}
	waitState(t, e, tasks.Caller{}, "t-input", a2a.StateInputRequired)
	if once.calls.Load() != 0 {
		t.Fatalf("a function that is not retry-safe ran %d times", once.calls.Load())
	}
}

func TestRetentionSweep(t *testing.T) {
	var now atomic.Pointer[time.Time]
	t0 := time.Now()
	now.Store(&t0)
	clock := func() time.Time { return *now.Load() }
	e := newEnv(t, tasks.Config{Retention: time.Hour, RetentionInterval: time.Hour, Now: clock}, fn(t, "demo::echo", echoBackend()))
	old, _, _ := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{}`)))
	waiting, _, _ := e.svc.Send(ctx, tasks.Caller{}, send(textMsg("m2", "hi")))
	later := t0.Add(2 * time.Hour)
	now.Store(&later)
	fresh, _, _ := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m3", "demo::echo", `{}`)))
	if err := e.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Get(ctx, tasks.Caller{}, old.ID, nil); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("expired task still there: %v", err)
	}
	for _, id := range []string{waiting.ID, fresh.ID} {
		if _, err := e.svc.Get(ctx, tasks.Caller{}, id, nil); err != nil {
			t.Fatalf("task %s should be kept: %v", id, err)
		}
	}
	// Its messageId is free again.
	again, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "demo::echo", `{}`)))
	if err != nil || again.ID == old.ID {
		t.Fatalf("messageId of an expired task: %v", err)
	}
}

// TestCallNamesItsFunction: the call a backend is given names the task,
// the caller and the function called, on the fast path (retry-safe, run
// before its task is stored) and the stored one alike.
func TestCallNamesItsFunction(t *testing.T) {
	seen := make(chan functions.Call, 2)
	b := &Backend{Fn: func(ctx context.Context, in json.RawMessage) (functions.Result, error) {
		c, _ := functions.CallFrom(ctx)
		seen <- c
		return functions.Result{Output: in}, nil
	}}
	safe := fn(t, "demo::safe", b, func(f *functions.Function) { f.RetrySafe = true })
	unsafe := fn(t, "demo::unsafe", b)
	e := newEnv(t, tasks.Config{}, safe, unsafe)
	for _, id := range []string{"demo::safe", "demo::unsafe"} {
		task, _, err := e.svc.Send(ctx, tasks.Caller{ID: "acme"}, send(dataMsg("m-"+id, id, `{}`)))
		if err != nil {
			t.Fatal(err)
		}
		if c := <-seen; c.FunctionID != id || c.TaskID != task.ID || c.Caller != "acme" || c.Attempt != 1 {
			t.Errorf("%s: the backend was given %+v", id, c)
		}
	}
}
