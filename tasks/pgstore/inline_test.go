package pgstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	st "github.com/a2ad/a2ad/tasks/storetest"
)

// TestNewTaskIsOneRow: a small new task's events, message and artifact
// are held in its row, none in the tables; a bigger one's are rows, as a
// later write's are. An artifact held in the row and replaced later reads
// as the replacement, with the chunks appended after it, and the store
// checks clean.
func TestNewTaskIsOneRow(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.Schema(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	create := func(id, text string) {
		r := st.NewRecord(id, "o", a2a.StateCompleted, time.Now())
		r.Task.History = []a2a.Message{st.UserMessage("m-"+id, text)}
		r.Task.Artifacts = []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart(text)}}}
		evs := []tasks.Event{st.StatusEvent(a2a.StateSubmitted), {Artifact: &r.Task.Artifacts[0]}, st.StatusEvent(a2a.StateCompleted)}
		if _, ok, err := s.Create(ctx, st.Key("o", "m-"+id, text), r, evs); err != nil || !ok {
			t.Fatalf("Create %s: %v, %v", id, ok, err)
		}
	}
	create("small", "hello")
	create("big", strings.Repeat("x", maxInline))
	for id, want := range map[string]int{"small": 0, "big": 3 + 1 + 1} {
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM events WHERE task_id = $1) + (SELECT count(*) FROM messages WHERE task_id = $1)
			+ (SELECT count(*) FROM artifacts WHERE task_id = $1)`, []byte(id)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("task %s has %d rows in events, messages and artifacts, want %d", id, n, want)
		}
	}
	st.MustUpdate(t, s, "o", "small", st.ArtifactChunk("a", false, "new"))
	st.MustUpdate(t, s, "o", "small", st.ArtifactChunk("a", true, "more"))
	st.MustUpdate(t, s, "o", "small", st.ArtifactChunk("b", false, "b"))
	r, err := s.Get(ctx, "o", "small", tasks.Whole)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range r.Task.Artifacts {
		for _, p := range a.Parts {
			got = append(got, a.ArtifactID+":"+p.Text)
		}
	}
	if strings.Join(got, " ") != "a:new a:more b:b" || len(r.Task.History) != 1 || r.Task.History[0].Parts[0].Text != "hello" {
		t.Errorf("small reads artifacts %q, history %v", got, r.Task.History)
	}
	evs, err := s.Events(ctx, "small", 1)
	if err != nil || len(evs) != 5 || evs[0].Seq != 2 || evs[4].Seq != 6 {
		t.Fatalf("events of small after 1: %d, %v", len(evs), err)
	}
	problems, err := s.Check(ctx)
	if err != nil || len(problems) > 0 {
		t.Errorf("check: %v, %v", problems, err)
	}
}

// besideOld opens two stores while a replica of schema (2: a lease
// without its schema, as those write) holds a live lease: s, which
// heartbeats after it, and one opened meanwhile. gone deletes that lease
// and heartbeats s again.
func besideOld(t *testing.T, schema int) (s, opened *Store, gone func()) {
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	lease := `INSERT INTO leases (replica, until) VALUES ('old', now() + interval '1 minute')`
	if schema > 2 {
		lease = fmt.Sprintf(`INSERT INTO leases (replica, until, schema) VALUES ('old', now() + interval '1 minute', %d)`, schema)
	}
	if _, err := s.pool.Exec(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if err := s.Heartbeat(ctx, "new", time.Minute); err != nil {
		t.Fatal(err)
	}
	if opened, err = Open(ctx, dsn, Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = opened.Close() })
	return s, opened, func() {
		if _, err := s.pool.Exec(ctx, `DELETE FROM leases WHERE replica = 'old'`); err != nil {
			t.Fatal(err)
		}
		if err := s.Heartbeat(ctx, "new", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBesideAnOldReplica: while a replica of schema 2 (whose lease has
// no schema of its own) holds a live lease, a store writes new tasks as
// schema 2 did, which that replica reads: events and message as rows; a
// store opened meanwhile knows it too. Once that lease is gone, the next
// heartbeat puts them in the task's row.
func TestBesideAnOldReplica(t *testing.T) {
	ctx := context.Background()
	s, opened, gone := besideOld(t, 2)
	create := func(s *Store, id string) {
		r := st.NewRecord(id, "o", a2a.StateCompleted, time.Now())
		r.Task.History = []a2a.Message{st.UserMessage("m-"+id, id)}
		if _, ok, err := s.Create(ctx, st.Key("o", "m-"+id, id), r, []tasks.Event{st.StatusEvent(a2a.StateCompleted)}); err != nil || !ok {
			t.Fatalf("Create %s: %v, %v", id, ok, err)
		}
	}
	// rows is what task id has in events, messages and idem.
	rows := func(id string) string {
		var ev, msg, keys int
		if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM events WHERE task_id = $1), (SELECT count(*) FROM messages WHERE task_id = $1),
			(SELECT count(*) FROM idem WHERE task_id = $1)`, []byte(id)).Scan(&ev, &msg, &keys); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("events %d, messages %d, idem %d", ev, msg, keys)
	}
	create(s, "beside")
	create(opened, "beside-opened")
	for _, id := range []string{"beside", "beside-opened"} {
		if got, want := rows(id), "events 1, messages 1, idem 1"; got != want {
			t.Errorf("%s, written beside a schema 2 replica: %s, want %s", id, got, want)
		}
	}
	gone()
	create(s, "after")
	if got, want := rows("after"), "events 0, messages 0, idem 1"; got != want {
		t.Errorf("after, written once the old lease is gone: %s, want %s", got, want)
	}
	for _, id := range []string{"beside", "beside-opened", "after"} {
		if r, err := s.Lookup(ctx, st.Key("o", "m-"+id, id)); err != nil || r.Task.ID != id || len(r.Task.History) != 1 {
			t.Errorf("Lookup of %s's key: %v, %v", id, r, err)
		}
	}
	problems, err := s.Check(ctx)
	if err != nil || len(problems) > 0 {
		t.Errorf("check: %v, %v", problems, err)
	}
}

// TestBesideASchema3Replica: while a replica of schema 3 holds a live
// lease, a store writes record v1, messages and events with their task's
// ids, which that replica answers with (it does not fill them in); a
// store opened meanwhile knows it too. New tasks still go in one row,
// which schema 3 reads. Once that lease is gone, the next heartbeat
// writes record v2: the ids are stored once, in the task's row. Every
// task reads back alike, and the store checks clean.
func TestBesideASchema3Replica(t *testing.T) {
	ctx := context.Background()
	s, opened, gone := besideOld(t, 3)
	msgOf := func(id, text string) a2a.Message {
		m := st.UserMessage("m-"+id+text, text)
		m.TaskID, m.ContextID = id, "ctx-"+id
		return m
	}
	// write creates task id and moves it to input-required with a
	// status message, as a call asking for input does.
	write := func(s *Store, id string) {
		r := st.NewRecord(id, "o", a2a.StateWorking, time.Now())
		r.Task.History = []a2a.Message{msgOf(id, "first")}
		if _, ok, err := s.Create(ctx, st.Key("o", "m-"+id, id), r, []tasks.Event{st.StatusEvent(a2a.StateWorking)}); err != nil || !ok {
			t.Fatalf("Create %s: %v, %v", id, ok, err)
		}
		ask := msgOf(id, "ask")
		if _, _, _, err := s.Update(ctx, "o", id, nil, tasks.Head, func(r *tasks.Record) ([]tasks.Event, error) {
			r.Task.Status = a2a.TaskStatus{State: a2a.StateInputRequired, Message: &ask}
			r.Task.History = append(r.Task.History, ask)
			return []tasks.Event{{Status: &r.Task.Status}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// ids counts the context ids in what task id stores: its head, its
	// events and messages, in its row or the tables.
	ids := func(id string) (heads, bodies int) {
		if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM tasks WHERE id = $1 AND position($2 in head) > 0),
			(SELECT count(*) FROM task_events WHERE task_id = $1 AND position($2 in body) > 0)
			+ (SELECT count(*) FROM task_messages WHERE task_id = $1 AND position($2 in body) > 0)`,
			[]byte(id), []byte(`"contextId":"ctx-`+id+`"`)).Scan(&heads, &bodies); err != nil {
			t.Fatal(err)
		}
		return heads, bodies
	}
	write(s, "beside")
	write(opened, "beside-opened")
	for _, id := range []string{"beside", "beside-opened"} {
		// The task's own and its status message's; the ask's event and
		// both messages.
		if heads, bodies := ids(id); heads != 1 || bodies != 3 {
			t.Errorf("%s, written beside a schema 3 replica: the context id in %d heads and %d bodies, want 1 and 3", id, heads, bodies)
		}
	}
	gone()
	write(s, "after")
	if heads, bodies := ids("after"); heads != 1 || bodies != 0 {
		t.Errorf("after, written once the old lease is gone: the context id in %d heads and %d bodies, want 1 and 0", heads, bodies)
	}
	var head []byte
	if err := s.pool.QueryRow(ctx, `SELECT head FROM tasks WHERE id = 'after'::bytea`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(head), `"contextId"`); n != 1 {
		t.Errorf("after's head holds %d context ids, want 1 (the task's): %s", n, head)
	}
	for _, id := range []string{"beside", "beside-opened", "after"} {
		r, err := s.Get(ctx, "o", id, tasks.Whole)
		if err != nil {
			t.Fatal(err)
		}
		want := []a2a.Message{msgOf(id, "first"), msgOf(id, "ask")}
		if len(r.Task.History) != 2 || r.Task.History[0].ContextID != want[0].ContextID || r.Task.History[1].TaskID != id ||
			r.Task.Status.Message == nil || r.Task.Status.Message.ContextID != want[1].ContextID || r.Task.Status.Message.TaskID != id {
			t.Errorf("%s read back: %+v", id, r.Task)
		}
		evs, err := s.Events(ctx, id, 0)
		if err != nil || len(evs) != 2 || evs[1].Status.Message == nil || evs[1].Status.Message.ContextID != "ctx-"+id || evs[1].Status.Message.TaskID != id {
			t.Errorf("%s's events read back: %+v, %v", id, evs, err)
		}
	}
	problems, err := s.Check(ctx)
	if err != nil || len(problems) > 0 {
		t.Errorf("check: %v, %v", problems, err)
	}
}
