package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// testHistoryBytesKeepTheNewestThatFit: a read with Scope.HistoryBytes
// returns the newest of the messages its History asks for whose stored
// encodings fit in it, as tasks.LastFitting counts them (without the
// task's ids, tasks.AppendStored), on every read: Get, List and Update's
// answer.
func testHistoryBytesKeepTheNewestThatFit(t *testing.T, sub *Subject) {
	s := sub.Store
	r := NewRecord("t1", "o", a2a.StateInputRequired, time.Now())
	for i := range 6 {
		m := UserMessage(fmt.Sprintf("m%d", i), strings.Repeat("y", 1000*(i+1)))
		m.TaskID, m.ContextID = r.Task.ID, r.Task.ContextID
		r.Task.History = append(r.Task.History, m)
	}
	Create(t, s, r)
	size := func(i int) int64 {
		b, err := tasks.AppendStored(nil, &r.Task.History[i], r.Task.ID, r.Task.ContextID)
		if err != nil {
			t.Fatal(err)
		}
		return int64(len(b))
	}
	ids := func(rec *tasks.Record) []string {
		var out []string
		for _, m := range rec.Task.History {
			out = append(out, m.MessageID)
		}
		return out
	}
	exact := size(5) + size(4)
	for _, c := range []struct {
		sc   tasks.Scope
		want []string
	}{
		{tasks.Scope{History: -1, HistoryBytes: exact}, []string{"m4", "m5"}},
		{tasks.Scope{History: -1, HistoryBytes: exact + size(3) - 1}, []string{"m4", "m5"}},
		{tasks.Scope{History: 1, HistoryBytes: exact}, []string{"m5"}},
		{tasks.Scope{History: -1, HistoryBytes: size(5) - 1}, nil},
		{tasks.Scope{History: -1, HistoryBytes: 1 << 30}, []string{"m0", "m1", "m2", "m3", "m4", "m5"}},
		{tasks.Scope{History: 0, HistoryBytes: exact}, nil},
	} {
		got, err := s.Get(ctx, "o", "t1", c.sc)
		if err != nil {
			t.Fatalf("Get(%+v): %v", c.sc, err)
		}
		if !slices.Equal(ids(got), c.want) || got.HistoryLen != 6 {
			t.Errorf("Get(%+v) = %v of %d; want %v of 6", c.sc, ids(got), got.HistoryLen, c.want)
		}
		recs, _, _, err := s.List(ctx, "o", tasks.ListFilter{}, nil, 10, c.sc)
		if err != nil || len(recs) != 1 {
			t.Errorf("List(%+v) = %d tasks, %v", c.sc, len(recs), err)
		} else if !slices.Equal(ids(recs[0]), c.want) {
			t.Errorf("List(%+v) history = %v; want %v", c.sc, ids(recs[0]), c.want)
		}
	}
	// An update's answer: the stored history and the appended message,
	// within the budget.
	k := Key("o", "m6", "answer")
	msg := UserMessage("m6", strings.Repeat("z", 500))
	msg.TaskID, msg.ContextID = r.Task.ID, r.Task.ContextID
	b, _ := tasks.AppendStored(nil, &msg, r.Task.ID, r.Task.ContextID)
	rec, _, _, err := s.Update(ctx, "o", "t1", &k, tasks.Scope{History: -1, HistoryBytes: int64(len(b)) + size(5)}, AppendMessage(msg, a2a.StateInputRequired))
	if err != nil || !slices.Equal(ids(rec), []string{"m5", "m6"}) {
		t.Fatalf("Update's answer = %v, %v; want [m5 m6]", ids(rec), err)
	}
	sub.check(t)
}

// testListBytesEndPagesEarly: a List page ends before the task that
// would take it past Scope.ListBytes, with a cursor that goes on from
// there: paging through returns every task once, in order, whatever the
// budget (one smaller than a task gives pages of one), with the same
// total on every page.
func testListBytesEndPagesEarly(t *testing.T, sub *Subject) {
	s := sub.Store
	start := time.Now()
	var want []string
	for i := range 12 {
		r := NewRecord(fmt.Sprintf("t%02d", i), "o", a2a.StateInputRequired, start.Add(time.Duration(i)*time.Millisecond))
		r.Task.History = []a2a.Message{UserMessage(fmt.Sprintf("m%d", i), strings.Repeat("y", 10_000))}
		Create(t, s, r)
		want = append([]string{r.Task.ID}, want...) // newest first
	}
	sc := tasks.Scope{History: -1}
	one, _, _, err := s.List(ctx, "o", tasks.ListFilter{}, nil, 1, sc)
	if err != nil || len(one) != 1 {
		t.Fatalf("List: %d, %v", len(one), err)
	}
	for _, c := range []struct {
		budget  int64
		perPage int // tasks a full page holds
	}{{25_000, 2}, {35_000, 3}, {1, 1}, {0, 5}} {
		sc.ListBytes = c.budget
		var (
			got   []string
			after *tasks.Cursor
		)
		for page := 0; ; page++ {
			if page > len(want) {
				t.Fatalf("budget %d: more pages than tasks", c.budget)
			}
			recs, total, next, err := s.List(ctx, "o", tasks.ListFilter{}, after, 5, sc)
			if err != nil || total != len(want) {
				t.Fatalf("budget %d, page %d: total %d, %v", c.budget, page, total, err)
			}
			if next != nil && len(recs) != c.perPage {
				t.Errorf("budget %d, page %d: %d tasks, want %d", c.budget, page, len(recs), c.perPage)
			}
			for _, r := range recs {
				if len(r.Task.History) != 1 {
					t.Fatalf("budget %d: task %s with %d messages", c.budget, r.Task.ID, len(r.Task.History))
				}
				got = append(got, r.Task.ID)
			}
			if after = next; next == nil {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("budget %d: paged through %v; want each task once, newest first: %v", c.budget, got, want)
		}
	}
	sub.check(t)
}
