package tasks_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// createTasks has caller send n messages that name no skill (each makes a
// task waiting for input), from several goroutines so that the store
// groups the commits. contextOf(i), when not nil, sets message i's
// contextId. It returns the task ids, newest list time first.
func createTasks(tb testing.TB, e *env, caller tasks.Caller, n int, contextOf func(int) string) []string {
	tb.Helper()
	var (
		mu   sync.Mutex
		recs []*tasks.Record
		wg   sync.WaitGroup
		errs = make(chan error, n)
		work = make(chan int)
	)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				m := textMsg(fmt.Sprintf("%s-m%d", caller.ID, i), "hello")
				if contextOf != nil {
					m.ContextID = contextOf(i)
				}
				task, _, err := e.svc.Send(ctx, caller, send(m))
				if err == nil && task.Status.State != a2a.StateInputRequired {
					err = fmt.Errorf("task %d is %s, want input-required", i, task.Status.State)
				}
				if err != nil {
					errs <- err
					continue
				}
				r, err := e.store.Get(ctx, caller.ID, task.ID, tasks.Whole)
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				recs = append(recs, r)
				mu.Unlock()
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	return newestFirst(recs)
}

func newestFirst(recs []*tasks.Record) []string {
	slices.SortFunc(recs, func(a, b *tasks.Record) int {
		return cmp.Or(cmp.Compare(tasks.ListTime(b), tasks.ListTime(a)), cmp.Compare(b.Task.ID, a.Task.ID))
	})
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.Task.ID
	}
	return ids
}

// listAll pages through caller's listing for q, checking every page's
// size, total and token, and returns the task ids in order. q's token, if
// any, continues a listing whose first skipped tasks were listed.
func listAll(tb testing.TB, e *env, caller tasks.Caller, q tasks.ListQuery, wantTotal, skipped int) []string {
	tb.Helper()
	size := cmp.Or(q.PageSize, tasks.DefaultPageSize)
	var ids []string
	for page := 0; ; page++ {
		p, err := e.svc.List(ctx, caller, q)
		if err != nil {
			tb.Fatalf("page %d: %v", page, err)
		}
		if p.TotalSize != wantTotal || p.PageSize != size {
			tb.Fatalf("page %d: totalSize %d pageSize %d, want %d and %d", page, p.TotalSize, p.PageSize, wantTotal, size)
		}
		wantLen := min(size, wantTotal-skipped-len(ids))
		if len(p.Tasks) != wantLen {
			tb.Fatalf("page %d: %d tasks, want %d", page, len(p.Tasks), wantLen)
		}
		for _, t := range p.Tasks {
			ids = append(ids, t.ID)
		}
		last := skipped+len(ids) == wantTotal
		if last != (p.NextPageToken == "") {
			tb.Fatalf("page %d: nextPageToken %q with %d of %d tasks listed", page, p.NextPageToken, skipped+len(ids), wantTotal)
		}
		if last {
			return ids
		}
		q.PageToken = p.NextPageToken
	}
}

func TestListPagesThrough250Tasks(t *testing.T) {
	e := newEnv(t, tasks.Config{})
	alice := tasks.Caller{ID: "alice"}
	want := createTasks(t, e, alice, 250, nil)
	for _, size := range []int{0, 1, 7, 50, 100} {
		t.Run(fmt.Sprintf("pageSize=%d", size), func(t *testing.T) {
			got := listAll(t, e, alice, tasks.ListQuery{PageSize: size}, 250, 0)
			if !slices.Equal(got, want) {
				t.Fatalf("listed %d tasks not newest first:\n got %v\nwant %v", len(got), got, want)
			}
		})
	}
	// Over the maximum, the service clamps (the decoders reject it).
	p, err := e.svc.List(ctx, alice, tasks.ListQuery{PageSize: 1000})
	if err != nil || len(p.Tasks) != tasks.MaxPageSize || p.PageSize != tasks.MaxPageSize {
		t.Fatalf("pageSize 1000: %d tasks, pageSize %d, err %v", len(p.Tasks), p.PageSize, err)
	}
}

func TestListIsolation(t *testing.T) {
	e := newEnv(t, tasks.Config{})
	alice, bob := tasks.Caller{ID: "alice"}, tasks.Caller{ID: "bob", Tiers: []string{"partner"}}
	// Same context ids on both sides: the filter does not cross owners.
	sameCtx := func(i int) string { return fmt.Sprintf("ctx-%d", i%3) }
	wantA := createTasks(t, e, alice, 30, sameCtx)
	first, err := e.svc.List(ctx, alice, tasks.ListQuery{PageSize: 7})
	if err != nil || first.TotalSize != 30 {
		t.Fatalf("alice's first page: total %d, err %v", first.TotalSize, err)
	}
	wantB := createTasks(t, e, bob, 45, sameCtx)

	if got := listAll(t, e, alice, tasks.ListQuery{PageSize: 7}, 30, 0); !slices.Equal(got, wantA) {
		t.Fatalf("alice lists %v\nwant %v", got, wantA)
	}
	if got := listAll(t, e, bob, tasks.ListQuery{PageSize: 7}, 45, 0); !slices.Equal(got, wantB) {
		t.Fatalf("bob lists %v\nwant %v", got, wantB)
	}
	if got := listAll(t, e, alice, tasks.ListQuery{ListFilter: tasks.ListFilter{ContextID: "ctx-1"}}, 10, 0); len(got) != 10 {
		t.Fatalf("alice's ctx-1: %d tasks, want 10", len(got))
	}
	// Bob's tasks never changed alice's totalSize, nor her pages: her
	// first page's token still continues her listing.
	q := tasks.ListQuery{PageSize: 7, PageToken: first.NextPageToken}
	if got := listAll(t, e, alice, q, 30, 7); !slices.Equal(got, wantA[7:]) {
		t.Fatalf("alice's listing after bob's tasks: %v\nwant %v", got, wantA[7:])
	}
	// Her token is no use to bob, nor to the anonymous caller.
	for _, c := range []tasks.Caller{bob, {}} {
		if _, err := e.svc.List(ctx, c, tasks.ListQuery{PageSize: 7, PageToken: first.NextPageToken}); !errors.Is(err, tasks.ErrPageTokenQuery) {
			t.Fatalf("caller %q with alice's token: err = %v, want ErrPageTokenQuery", c.ID, err)
		}
	}
	p, err := e.svc.List(ctx, tasks.Caller{ID: "carol"}, tasks.ListQuery{})
	if err != nil || len(p.Tasks) != 0 || p.TotalSize != 0 || p.NextPageToken != "" || p.PageSize != 50 {
		t.Fatalf("carol's listing: %+v, %v", p, err)
	}
}

func TestListFiltersAndShapes(t *testing.T) {
	var (
		mu  sync.Mutex
		now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	)
	clock := func() time.Time { // a second per reading
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	e := newEnv(t, tasks.Config{Now: clock}, fn(t, "demo::echo", echoBackend()))
	alice := tasks.Caller{ID: "alice"}
	// In order: two completed (with an artifact) in ctx A, one waiting
	// for input in ctx A, one rejected in ctx B, one canceled in ctx B.
	sendOne := func(m a2a.Message, ctxID string) *a2a.Task {
		t.Helper()
		m.ContextID = ctxID
		task, _, err := e.svc.Send(ctx, alice, send(m))
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	done1 := sendOne(dataMsg("m1", "demo::echo", `{"n":1}`), "A")
	done2 := sendOne(dataMsg("m2", "demo::echo", `{"n":2}`), "A")
	waiting := sendOne(textMsg("m3", "hello"), "A")
	rejected := sendOne(dataMsg("m4", "nope::missing", `{}`), "B")
	canceled := sendOne(textMsg("m5", "hello"), "B")
	if _, err := e.svc.Cancel(ctx, alice, canceled.ID); err != nil {
		t.Fatal(err)
	}
	if done1.Status.State != a2a.StateCompleted || len(done1.Artifacts) != 1 || rejected.Status.State != a2a.StateRejected {
		t.Fatalf("setup: %s with %d artifacts, %s", done1.Status.State, len(done1.Artifacts), rejected.Status.State)
	}
	ids := func(q tasks.ListQuery) []string {
		t.Helper()
		p, err := e.svc.List(ctx, alice, q)
		if err != nil {
			t.Fatal(err)
		}
		if p.TotalSize != len(p.Tasks) {
			t.Fatalf("List(%+v): totalSize %d for %d tasks on one page", q, p.TotalSize, len(p.Tasks))
		}
		var out []string
		for _, t := range p.Tasks {
			out = append(out, t.ID)
		}
		return out
	}
	after := func(task *a2a.Task) time.Time {
		at, err := time.Parse(time.RFC3339Nano, task.Status.Timestamp)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	tests := []struct {
		f    tasks.ListFilter
		want []string
	}{
		{tasks.ListFilter{}, []string{canceled.ID, rejected.ID, waiting.ID, done2.ID, done1.ID}},
		{tasks.ListFilter{ContextID: "A"}, []string{waiting.ID, done2.ID, done1.ID}},
		{tasks.ListFilter{ContextID: "B"}, []string{canceled.ID, rejected.ID}},
		{tasks.ListFilter{State: a2a.StateCompleted}, []string{done2.ID, done1.ID}},
		{tasks.ListFilter{State: a2a.StateCompleted, ContextID: "B"}, nil},
		{tasks.ListFilter{State: a2a.StateCanceled}, []string{canceled.ID}},
		{tasks.ListFilter{StatusAfter: after(waiting)}, []string{canceled.ID, rejected.ID, waiting.ID}},
		{tasks.ListFilter{StatusAfter: after(waiting).Add(time.Millisecond)}, []string{canceled.ID, rejected.ID}},
		{tasks.ListFilter{StatusAfter: after(waiting), ContextID: "A"}, []string{waiting.ID}},
	}
	for _, tc := range tests {
		if got := ids(tasks.ListQuery{ListFilter: tc.f}); !slices.Equal(got, tc.want) {
			t.Errorf("filter %+v: %v, want %v", tc.f, got, tc.want)
		}
	}

	// Artifacts only when asked; history per historyLength.
	byID := func(q tasks.ListQuery) map[string]a2a.Task {
		p, err := e.svc.List(ctx, alice, q)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]a2a.Task{}
		for _, t := range p.Tasks {
			m[t.ID] = t
		}
		return m
	}
	full, err := e.svc.Get(ctx, alice, waiting.ID, nil)
	if err != nil || len(full.History) < 2 {
		t.Fatalf("Get: %d history messages, %v", len(full.History), err)
	}
	if got := byID(tasks.ListQuery{})[done1.ID]; len(got.Artifacts) != 0 {
		t.Errorf("default: %d artifacts, want 0", len(got.Artifacts))
	}
	if got := byID(tasks.ListQuery{})[waiting.ID]; got.History != nil {
		t.Errorf("default: %d history messages, want none (a page leaves them out unless asked)", len(got.History))
	}
	all := 100
	if got := byID(tasks.ListQuery{HistoryLength: &all})[waiting.ID]; len(got.History) != len(full.History) {
		t.Errorf("historyLength 100: %d history messages, want all %d", len(got.History), len(full.History))
	}
	if got := byID(tasks.ListQuery{IncludeArtifacts: true})[done1.ID]; len(got.Artifacts) != 1 || got.Artifacts[0].ArtifactID != done1.Artifacts[0].ArtifactID {
		t.Errorf("includeArtifacts: artifacts %+v", got.Artifacts)
	}
	zero, one := 0, 1
	if got := byID(tasks.ListQuery{HistoryLength: &zero})[waiting.ID]; got.History != nil {
		t.Errorf("historyLength 0: %d messages", len(got.History))
	}
	if got := byID(tasks.ListQuery{HistoryLength: &one})[waiting.ID]; len(got.History) != 1 || got.History[0].MessageID != full.History[len(full.History)-1].MessageID {
		t.Errorf("historyLength 1: %+v, want the last message", got.History)
	}

	// A token from one filter does not page another.
	p, err := e.svc.List(ctx, alice, tasks.ListQuery{PageSize: 1, ListFilter: tasks.ListFilter{ContextID: "A"}})
	if err != nil || p.NextPageToken == "" {
		t.Fatalf("first page: %+v, %v", p, err)
	}
	if _, err := e.svc.List(ctx, alice, tasks.ListQuery{PageSize: 1, PageToken: p.NextPageToken, ListFilter: tasks.ListFilter{ContextID: "B"}}); !errors.Is(err, tasks.ErrPageTokenQuery) {
		t.Fatalf("token of context A used for B: err = %v, want ErrPageTokenQuery", err)
	}
	if _, err := e.svc.List(ctx, alice, tasks.ListQuery{PageToken: "not-a-token"}); !errors.Is(err, tasks.ErrPageToken) {
		t.Fatalf("malformed token: err = %v, want ErrPageToken", err)
	}
}

// TestListPagesStayStableWhileTasksArrive: tasks created between pages
// appear above the cursor; the later pages list exactly the rest.
func TestListPagesStayStableWhileTasksArrive(t *testing.T) {
	e := newEnv(t, tasks.Config{})
	alice := tasks.Caller{ID: "alice"}
	want := createTasks(t, e, alice, 60, nil)
	p, err := e.svc.List(ctx, alice, tasks.ListQuery{PageSize: 25})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, t := range p.Tasks {
		got = append(got, t.ID)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 20 {
			if _, _, err := e.svc.Send(ctx, alice, send(textMsg(fmt.Sprintf("late-%d", i), "hi"))); err != nil {
				t.Error(err)
			}
		}
	})
	for q := (tasks.ListQuery{PageSize: 25, PageToken: p.NextPageToken}); q.PageToken != ""; {
		p, err := e.svc.List(ctx, alice, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, t := range p.Tasks {
			got = append(got, t.ID)
		}
		q.PageToken = p.NextPageToken
	}
	wg.Wait()
	if !slices.Equal(got, want) {
		t.Fatalf("pages while tasks arrive:\n got %v\nwant %v", got, want)
	}
}
