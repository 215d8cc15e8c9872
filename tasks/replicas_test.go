package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
)

// Several Services on one PostgreSQL schema stand for replicas: what one
// commits, the others hear of through the store's notices (or, if one is
// lost, through their poll).

// deaf is a store that never passes on the notices of other processes:
// its Service hears of their commits through its poll alone.
type deaf struct{ *pgstore.Store }

func (deaf) Follow(func(string, uint64, uint64)) {}

// replica is one Service on a shared store.
type replica struct {
	svc   *tasks.Service
	store *pgstore.Store
}

// openReplica starts a Service on its own store in the schema at dsn.
// With hearing false, its store passes on no notices (see deaf).
func openReplica(tb testing.TB, dsn string, hearing bool, cfg tasks.Config, fns ...*functions.Function) *replica {
	tb.Helper()
	store, err := pgstore.Open(context.Background(), dsn, pgstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	cat := functions.NewCatalog(fns...)
	cfg.Store = store
	if !hearing {
		cfg.Store = deaf{store}
	}
	cfg.Catalog = func() *functions.Catalog { return cat }
	cfg.Logger = zerolog.Nop()
	svc := tasks.New(cfg)
	if err := svc.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := svc.Close(ctx); err != nil {
			tb.Error(err)
		}
		if err := store.Close(); err != nil {
			tb.Error(err)
		}
	})
	return &replica{svc: svc, store: store}
}

// awaitState polls r until task id is in state want.
func awaitState(tb testing.TB, r *replica, id string, want a2a.TaskState) *a2a.Task {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		t, err := r.svc.Get(ctx, tasks.Caller{}, id, nil)
		if err == nil && t.Status.State == want {
			return t
		}
		if time.Now().After(deadline) {
			tb.Fatalf("task %s: %v, state %v; want %s", id, err, t, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hangingBackend is an HTTP function backend that answers no call: it
// tells of each request on started, and of the time its context ended
// (the client aborted it) on aborted.
func hangingBackend(tb testing.TB) (b *functions.HTTPBackend, started chan struct{}, aborted chan time.Time) {
	started, aborted = make(chan struct{}, 1), make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices a closed connection once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		started <- struct{}{}
		select {
		case <-r.Context().Done():
			aborted <- time.Now()
		case <-time.After(10 * time.Second): // the test failed: let it end
		}
	}))
	tb.Cleanup(srv.Close)
	return &functions.HTTPBackend{URL: srv.URL}, started, aborted
}

// cancelElsewhere runs an HTTP call on a, cancels it on b, and returns
// how long after the cancel's answer a's request to the backend ended.
func cancelElsewhere(t *testing.T, a, b *replica, started chan struct{}, aborted chan time.Time) time.Duration {
	t.Helper()
	task, _, err := a.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::hang", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the call never reached its backend")
	}
	got, err := b.svc.Cancel(ctx, tasks.Caller{}, task.ID)
	if err != nil || got.Status.State != a2a.StateCanceled {
		t.Fatalf("Cancel on B = %v, %v", got, err)
	}
	answered := time.Now()
	select {
	case at := <-aborted:
		// Canceled stays: A's call, cut short, stores nothing.
		time.Sleep(50 * time.Millisecond)
		awaitState(t, a, task.ID, a2a.StateCanceled)
		return at.Sub(answered)
	case <-time.After(5 * time.Second):
		t.Fatal("A's call was never aborted")
		return 0
	}
}

// TestCancelOnAnotherReplicaAbortsTheCall: a cancel answered by replica B
// aborts the HTTP request of the call replica A runs, within 1s (at once:
// B's commit is a notice A listens for).
func TestCancelOnAnotherReplicaAbortsTheCall(t *testing.T) {
	dsn := pgtest.Schema(t)
	hb, started, aborted := hangingBackend(t)
	a := openReplica(t, dsn, true, tasks.Config{}, fn(t, "demo::hang", hb))
	b := openReplica(t, dsn, true, tasks.Config{}, fn(t, "demo::hang", hb))
	d := cancelElsewhere(t, a, b, started, aborted)
	t.Logf("cross-replica cancel: the call was aborted %v after the cancel's answer", d)
	if d > time.Second {
		t.Fatalf("the call was aborted %v after the cancel, want within 1s", d)
	}
}

// TestCancelOnAnotherReplicaWithoutNotices: a replica that hears no
// notice (its listener lost them) still aborts a call canceled elsewhere,
// through its poll, within about SharedPoll.
func TestCancelOnAnotherReplicaWithoutNotices(t *testing.T) {
	dsn := pgtest.Schema(t)
	hb, started, aborted := hangingBackend(t)
	a := openReplica(t, dsn, false, tasks.Config{SharedPoll: time.Second}, fn(t, "demo::hang", hb))
	b := openReplica(t, dsn, true, tasks.Config{}, fn(t, "demo::hang", hb))
	d := cancelElsewhere(t, a, b, started, aborted)
	t.Logf("cross-replica cancel without the notice: the call was aborted %v after the cancel's answer", d)
	if d > 2*time.Second {
		t.Fatalf("the call was aborted %v after the cancel, want within about 1s", d)
	}
}

// arrival is when a watcher got an event.
type arrival struct {
	desc string
	at   time.Time
}

// watchAll watches id on r from after to its final event.
func watchAll(r *replica, id string, after *uint64) ([]arrival, error) {
	var out []arrival
	err := r.svc.Watch(ctx, tasks.Caller{}, id, after, func(ev tasks.StreamEvent) error {
		out = append(out, arrival{describe(ev), time.Now()})
		return nil
	})
	return out, err
}

func descs(as []arrival) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.desc
	}
	return out
}

// TestStreamOnAnotherReplica: a stream on replica B of a task running on
// A gets every event, in order, with no gap and no duplicate; a stream
// resumed on C after event N gets exactly the rest. It logs how long
// after A's own subscriber B's got each event (the commit's notice, the
// read and the publish).
func TestStreamOnAnotherReplica(t *testing.T) {
	const notes = 200
	dsn := pgtest.Schema(t)
	step := make(chan struct{})
	slow := fn(t, "demo::progress", progressBackend(notes, step))
	a := openReplica(t, dsn, true, tasks.Config{}, slow)
	b := openReplica(t, dsn, true, tasks.Config{}, slow)
	c := openReplica(t, dsn, true, tasks.Config{}, slow)
	task, _, err := a.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::progress", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var onA, onB []arrival
	var errA, errB error
	wg.Add(2)
	go func() { defer wg.Done(); onA, errA = watchAll(a, task.ID, nil) }()
	go func() { defer wg.Done(); onB, errB = watchAll(b, task.ID, nil) }()
	time.Sleep(100 * time.Millisecond) // both watching
	for range notes {
		step <- struct{}{}
		time.Sleep(2 * time.Millisecond)
	}
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("watch on A: %v; on B: %v", errA, errB)
	}
	want := descs(onA)
	if got := descs(onB); !slices.Equal(got, want) {
		t.Fatalf("stream on B:\n%v\nwant (A's):\n%v", got, want)
	}
	// A's stream is the task's whole log: contiguous, ending final.
	var first uint64
	if _, err := fmt.Sscanf(want[0], "%d:", &first); err != nil {
		t.Fatal(err)
	}
	for i, d := range want[1:] {
		var seq uint64
		if _, err := fmt.Sscanf(d, "%d:", &seq); err != nil || seq != first+uint64(i)+1 {
			t.Fatalf("event %d is %q, want sequence %d", i+1, d, first+uint64(i)+1)
		}
	}
	if len(want) < notes+3 || want[len(want)-1] != fmt.Sprintf("%d:status:completed:final", first+uint64(len(want)-1)) {
		t.Fatalf("A's stream has %d events, ending %q", len(want), want[len(want)-1])
	}
	// Resume on C after the 100th event: exactly the rest.
	after := first + 100
	rest, err := watchAll(c, task.ID, &after)
	if err != nil {
		t.Fatal(err)
	}
	if got := descs(rest); !slices.Equal(got, want[101:]) {
		t.Fatalf("resumed on C after %d:\n%v\nwant:\n%v", after, got, want[101:])
	}
	lag := make([]time.Duration, 0, len(onA)-1)
	for i := 1; i < len(onA); i++ {
		lag = append(lag, onB[i].at.Sub(onA[i].at))
	}
	sort.Slice(lag, func(i, j int) bool { return lag[i] < lag[j] })
	t.Logf("cross-replica stream: %d events, B's subscriber after A's: p50 %v, p99 %v, max %v",
		len(lag), lag[len(lag)/2], lag[len(lag)*99/100], lag[len(lag)-1])
}

// TestFollowUpOnAnotherReplica: the answer to input-required sent to
// replica B runs the next call on B, whose blocking send waits for it;
// the same answer sent again to A waits for B's call too, and a stream on
// A hears of it.
func TestFollowUpOnAnotherReplica(t *testing.T) {
	dsn := pgtest.Schema(t)
	ba, bb := approvalBackend(300*time.Millisecond), approvalBackend(300*time.Millisecond)
	a := openReplica(t, dsn, true, tasks.Config{}, fn(t, "orders::place", ba))
	b := openReplica(t, dsn, true, tasks.Config{}, fn(t, "orders::place", bb))
	task, _, err := a.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "orders::place", `{"sku":"a"}`)))
	if err != nil || task.Status.State != a2a.StateInputRequired {
		t.Fatalf("send on A: %v, %v", task, err)
	}
	m := a2a.Message{MessageID: "m2", TaskID: task.ID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"sku":"a","approved":true}`))}}
	type answer struct {
		task *a2a.Task
		err  error
	}
	onB := make(chan answer, 1)
	go func() {
		done, _, err := b.svc.Send(ctx, tasks.Caller{}, send(m))
		onB <- answer{done, err}
	}()
	awaitState(t, a, task.ID, a2a.StateWorking)
	streamed := make(chan []string, 1)
	go func() {
		as, err := watchAll(a, task.ID, nil)
		if err != nil {
			t.Error(err)
		}
		streamed <- descs(as)
	}()
	again, _, err := a.svc.Send(ctx, tasks.Caller{}, send(m)) // a retry: waits for B's call
	if err != nil || again.Status.State != a2a.StateCompleted {
		t.Fatalf("the answer again on A: %v, %v", again, err)
	}
	if got := <-onB; got.err != nil || got.task.Status.State != a2a.StateCompleted {
		t.Fatalf("answer on B: %v, %v", got.task, got.err)
	}
	if ba.calls.Load() != 1 || bb.calls.Load() != 1 {
		t.Fatalf("calls on A %d, on B %d; want 1 and 1", ba.calls.Load(), bb.calls.Load())
	}
	select {
	case got := <-streamed:
		var n uint64
		if len(got) > 0 {
			_, _ = fmt.Sscanf(got[0], "%d:", &n)
		}
		want := []string{fmt.Sprintf("%d:task:working", n), fmt.Sprintf("%d:artifact:", n+1), fmt.Sprintf("%d:status:completed:final", n+2)}
		if len(got) != 3 || got[0] != want[0] || !strings.HasPrefix(got[1], want[1]) || got[2] != want[2] {
			t.Fatalf("stream on A: %v, want %v (the artifact's id is new)", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream on A never heard of the call's end on B")
	}
}
