package pgstore_test

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	st "github.com/a2ad/a2ad/tasks/storetest"
)

// schema2 is a store that a2ad wrote with schema 2, before the task row
// held its first events, messages, artifacts and key: testdata says how
// it was made.
//
//go:embed testdata/schema2.sql
var schema2 string

// TestStoreOfSchema2Migrates opens a store that schema 2 wrote: Open
// migrates it, and every task reads back as written (history, artifacts
// with their appended chunks and a replaced one, events, input), each key
// answers its task, a resend is idempotent, a reused message id is
// refused, and the store then takes writes of both kinds and checks
// clean.
func TestStoreOfSchema2Migrates(t *testing.T) {
	dsn := pgtest.Schema(t)
	exec(t, dsn, schema2)
	s := mustOpen(t, dsn)

	echo := get(t, s, "alice", "t-echo")
	if got, want := summary(echo), "completed h[m-echo:hello] a[a-echo:hello]"; got != want {
		t.Errorf("t-echo reads %q, want %q", got, want)
	}
	long := get(t, s, "bob", "t-long")
	if got, want := summary(long), "working h[m-long:start m-more:more] a[a1:one,two a2:z]"; got != want {
		t.Errorf("t-long reads %q, want %q", got, want)
	}
	for id, want := range map[string]string{
		"t-echo": "submitted artifact completed",
		"t-long": "working artifact artifact artifact artifact artifact input-required working",
		"t-open": "submitted",
	} {
		if got := events(t, s, id, 0); got != want {
			t.Errorf("events of %s: %q, want %q", id, got, want)
		}
	}
	if got := events(t, s, "t-long", 6); got != "input-required working" {
		t.Errorf("events of t-long after 6: %q", got)
	}
	active, err := s.Active(ctx)
	if err != nil || len(active) != 2 {
		t.Fatalf("Active: %d tasks, %v; want t-long and t-open", len(active), err)
	}
	for _, r := range active {
		if r.Task.ID == "t-open" && string(r.Input) != `{"n":1}` {
			t.Errorf("t-open's input reads %s", r.Input)
		}
	}

	for _, k := range []struct{ owner, msg, body, task string }{
		{"alice", "m-echo", "hello", "t-echo"}, {"bob", "m-long", "start", "t-long"},
		{"bob", "m-more", "more", "t-long"}, {"bob", "m-t-open", "t-open", "t-open"},
	} {
		r, err := s.Lookup(ctx, st.Key(k.owner, k.msg, k.body))
		if err != nil || r.Task.ID != k.task {
			t.Errorf("Lookup %s/%s: %v, %v; want %s", k.owner, k.msg, r, err, k.task)
		}
		again := st.NewRecord("t-new-"+k.msg, k.owner, a2a.StateSubmitted, echo.CreatedAt)
		r, created, err := s.Create(ctx, st.Key(k.owner, k.msg, k.body), again, []tasks.Event{st.StatusEvent(a2a.StateSubmitted)})
		if err != nil || created || r.Task.ID != k.task {
			t.Errorf("resend of %s/%s: %v, created %v, %v; want %s", k.owner, k.msg, r, created, err, k.task)
		}
		_, _, err = s.Create(ctx, st.Key(k.owner, k.msg, "other"), again, []tasks.Event{st.StatusEvent(a2a.StateSubmitted)})
		if !errors.Is(err, tasks.ErrMessageIDReused) {
			t.Errorf("reuse of %s/%s: %v, want ErrMessageIDReused", k.owner, k.msg, err)
		}
	}

	// New writes beside the old rows: a chunk appended to an old
	// artifact, a replaced one, and a new task.
	st.MustUpdate(t, s, "bob", "t-long", st.ArtifactChunk("a1", true, "three"))
	st.MustUpdate(t, s, "bob", "t-long", st.ArtifactChunk("a2", false, "w"))
	if got, want := summary(get(t, s, "bob", "t-long")), "working h[m-long:start m-more:more] a[a1:one,two,three a2:w]"; got != want {
		t.Errorf("t-long after two writes reads %q, want %q", got, want)
	}
	st.Create(t, s, st.NewRecord("t-after", "alice", a2a.StateWorking, echo.CreatedAt))
	if got := events(t, s, "t-after", 0); got != "working" {
		t.Errorf("events of t-after: %q", got)
	}
}

func get(t *testing.T, s tasks.Store, owner, id string) *tasks.Record {
	t.Helper()
	r, err := s.Get(ctx, owner, id, tasks.Whole)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return r
}

// summary is r's state, history and artifacts in a line.
func summary(r *tasks.Record) string {
	var h, a []string
	for _, m := range r.Task.History {
		h = append(h, m.MessageID+":"+texts(m.Parts))
	}
	for _, x := range r.Task.Artifacts {
		a = append(a, x.ArtifactID+":"+texts(x.Parts))
	}
	return fmt.Sprintf("%s h[%s] a[%s]", r.State(), strings.Join(h, " "), strings.Join(a, " "))
}

func texts(ps []a2a.Part) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Text)
	}
	return strings.Join(out, ",")
}

// events is what task id's events after seq after report, in a line.
func events(t *testing.T, s tasks.Store, id string, after uint64) string {
	t.Helper()
	evs, err := s.Events(ctx, id, after)
	if err != nil {
		t.Fatalf("Events %s: %v", id, err)
	}
	var out []string
	for i, e := range evs {
		if e.Seq != after+uint64(i)+1 {
			t.Errorf("event %d of %s has seq %d", i, id, e.Seq)
		}
		switch {
		case e.Status != nil:
			out = append(out, string(e.Status.State))
		case e.Artifact != nil:
			out = append(out, "artifact")
		default:
			out = append(out, "other")
		}
	}
	return strings.Join(out, " ")
}
