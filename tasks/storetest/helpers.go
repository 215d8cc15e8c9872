package storetest

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/push"
	"github.com/a2ad/a2ad/tasks"
)

// Key is the idempotency key of owner's message msgID, whose content is
// body.
func Key(owner, msgID, body string) tasks.IdemKey {
	return tasks.IdemKey{Owner: owner, MessageID: msgID, Hash: sha256.Sum256([]byte(body))}
}

// NewRecord is task id of owner in state st, in context "ctx-"+id,
// created and last updated at at.
func NewRecord(id, owner string, st a2a.TaskState, at time.Time) *tasks.Record {
	return &tasks.Record{
		Task:      a2a.Task{ID: id, ContextID: "ctx-" + id, Status: a2a.TaskStatus{State: st}},
		Owner:     owner,
		CreatedAt: at,
		UpdatedAt: at,
	}
}

// StatusEvent is the event of a change to st.
func StatusEvent(st a2a.TaskState) tasks.Event {
	return tasks.Event{Status: &a2a.TaskStatus{State: st}}
}

// UserMessage is a user's message with one text part.
func UserMessage(id, text string) a2a.Message {
	return a2a.Message{MessageID: id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}
}

// Create stores r with the event of its state, bound to message "m-" +
// its id, and fails tb unless that created the task.
func Create(tb testing.TB, s tasks.Store, r *tasks.Record) {
	tb.Helper()
	if _, created, err := s.Create(ctx, Key(r.Owner, "m-"+r.Task.ID, r.Task.ID), r, []tasks.Event{StatusEvent(r.State())}); err != nil || !created {
		tb.Fatalf("Create %q: %v, created %v", r.Task.ID, err, created)
	}
}

// Flip is an UpdateFunc that moves a task to st.
func Flip(st a2a.TaskState) tasks.UpdateFunc {
	return func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = st
		return []tasks.Event{StatusEvent(st)}, nil
	}
}

// FlipAt is Flip that also sets the time of the update to at.
func FlipAt(st a2a.TaskState, at time.Time) tasks.UpdateFunc {
	return func(r *tasks.Record) ([]tasks.Event, error) {
		r.UpdatedAt = at
		return Flip(st)(r)
	}
}

// AppendMessage is an UpdateFunc that appends msg and moves the task to
// st.
func AppendMessage(msg a2a.Message, st a2a.TaskState) tasks.UpdateFunc {
	return func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.History = append(r.Task.History, msg)
		r.Task.Status = a2a.TaskStatus{State: st}
		return []tasks.Event{StatusEvent(st)}, nil
	}
}

// ArtifactChunk is an UpdateFunc that reports one chunk of artifact id,
// with a text part per element of parts, appended to the artifact if
// appendParts.
func ArtifactChunk(id string, appendParts bool, parts ...string) tasks.UpdateFunc {
	return func(*tasks.Record) ([]tasks.Event, error) {
		a := &a2a.Artifact{ArtifactID: id, Name: "n-" + id}
		for _, p := range parts {
			a.Parts = append(a.Parts, a2a.TextPart(p))
		}
		return []tasks.Event{{Artifact: a, Append: appendParts}}, nil
	}
}

// MustUpdate applies fn to task id of owner and returns the whole task
// after the change.
func MustUpdate(tb testing.TB, s tasks.Store, owner, id string, fn tasks.UpdateFunc) *tasks.Record {
	tb.Helper()
	r, _, _, err := s.Update(ctx, owner, id, nil, tasks.Whole, fn)
	if err != nil {
		tb.Fatalf("Update %q: %v", id, err)
	}
	return r
}

// WithHooks creates task id of owner "o", working, with n webhooks c0 to
// c(n-1).
func WithHooks(tb testing.TB, s tasks.Store, id string, n int) {
	tb.Helper()
	rec := NewRecord(id, "o", a2a.StateWorking, time.Now())
	for i := range n {
		rec.PushConfigs = append(rec.PushConfigs, a2a.PushConfig{ID: fmt.Sprintf("c%d", i), URL: fmt.Sprintf("https://x.example/%s/%d", id, i)})
	}
	Create(tb, s, rec)
}

// GiveUp creates task id of owner "o" with webhook "c-"+id, which holds
// a token ("tok-secret") and credentials ("cred-secret"), completes it
// and dead-letters its delivery after 3 attempts.
func GiveUp(tb testing.TB, s Store, id string) {
	tb.Helper()
	r := NewRecord(id, "o", a2a.StateWorking, time.Now())
	r.PushConfigs = []a2a.PushConfig{{ID: "c-" + id, URL: "https://hooks.example/" + id, Token: "tok-secret",
		Authentication: &a2a.PushAuth{Schemes: []string{"Bearer"}, Credentials: "cred-secret"}}}
	Create(tb, s, r)
	d := Queued(tb, s, id, Flip(a2a.StateCompleted), 1)[0]
	if err := s.Request(ctx, &d); err != nil {
		tb.Fatal(err)
	}
	if err := s.Dead(ctx, d.ID, d.URL, 3, "HTTP 503"); err != nil {
		tb.Fatal(err)
	}
}

// Queued applies fn to task id of owner "o" and returns the deliveries
// due then of that task, failing tb unless there are n of them.
func Queued(tb testing.TB, s Store, id string, fn tasks.UpdateFunc, n int) []push.Delivery {
	tb.Helper()
	MustUpdate(tb, s, "o", id, fn)
	due, err := s.Due(ctx, time.Now(), 1000)
	if err != nil {
		tb.Fatal(err)
	}
	due = slices.DeleteFunc(due, func(d push.Delivery) bool { return d.TaskID != id })
	if len(due) != n {
		tb.Fatalf("deliveries of %s due: %+v, want %d", id, due, n)
	}
	return due
}

// ListIDs lists every task of owner that matches f, limit per page, and
// checks the total on each page and the cursor on the last.
func ListIDs(tb testing.TB, s tasks.Store, owner string, f tasks.ListFilter, limit int) []string {
	tb.Helper()
	var (
		ids   []string
		after *tasks.Cursor
		total = -1
	)
	for page := 0; ; page++ {
		recs, n, next, err := s.List(ctx, owner, f, after, limit, tasks.Whole)
		if err != nil {
			tb.Fatalf("List page %d: %v", page, err)
		}
		if total >= 0 && n != total {
			tb.Fatalf("page %d: total %d, was %d", page, n, total)
		}
		total = n
		if len(recs) > limit {
			tb.Fatalf("page %d: %d tasks, limit %d", page, len(recs), limit)
		}
		for _, r := range recs {
			if r.Owner != owner {
				tb.Fatalf("page %d: task %q of owner %q", page, r.Task.ID, r.Owner)
			}
			ids = append(ids, r.Task.ID)
		}
		if next == nil {
			break
		}
		if len(recs) != limit {
			tb.Fatalf("page %d: %d tasks and a next cursor, limit %d", page, len(recs), limit)
		}
		after = next
	}
	if len(ids) != total {
		tb.Fatalf("listed %d tasks, total %d", len(ids), total)
	}
	return ids
}

// idRunes are code points whose UTF-8 encodings, together, hold every
// byte that can occur in a JSON string (all but 0xc0, 0xc1 and 0xf5 to
// 0xff): ids are JSON strings, so no other byte reaches a store.
func idRunes() []rune {
	var rs []rune
	for r := rune(0); r < 0xc0; r++ { // ASCII, then 0xc2 0x80..0xbf
		rs = append(rs, r)
	}
	for lead := rune(0xc3); lead <= 0xdf; lead++ {
		rs = append(rs, (lead&0x1f)<<6)
	}
	for lead := rune(0xe0); lead <= 0xef; lead++ {
		rs = append(rs, max(0x800, (lead&0x0f)<<12))
	}
	rs = append(rs, 0x10000, 0x40000, 0x80000, 0xc0000, 0x100000)
	return rs
}
