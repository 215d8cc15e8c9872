//go:build gen

package pgstore_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
	st "github.com/a2ad/a2ad/tasks/storetest"
	"github.com/jackc/pgx/v5"
)

// TestGenSchema2 wrote testdata/schema2.sql, run at 4c9d02e (schema 2):
//
//	go test -tags gen -run TestGenSchema2 ./tasks/pgstore
//	pg_dump "$DSN" --schema=a2ad_gen_schema2 --inserts --no-owner --no-privileges --no-comments
//
// then psql's \restrict lines, CREATE SCHEMA, the search_path setting
// and the schema's name taken out. The code of a later schema writes
// other rows: it is kept to say how the dump was made, not to run again.
func TestGenSchema2(t *testing.T) {
	conn, err := pgx.Connect(ctx, pgtest.DSN())
	if err != nil {
		t.Fatal(err)
	}
	conn.Exec(ctx, "DROP SCHEMA IF EXISTS a2ad_gen_schema2 CASCADE")
	if _, err := conn.Exec(ctx, "CREATE SCHEMA a2ad_gen_schema2"); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.Open(ctx, pgtest.WithSearchPath(t, pgtest.DSN(), "a2ad_gen_schema2"), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Unix(1_790_000_000, 0).UTC()
	// An echo: created completed, with its message, artifact and events.
	r := st.NewRecord("t-echo", "alice", a2a.StateCompleted, at)
	r.FunctionID = "demo::echo"
	r.Task.History = []a2a.Message{st.UserMessage("m-echo", "hello")}
	r.Task.Artifacts = []a2a.Artifact{{ArtifactID: "a-echo", Parts: []a2a.Part{a2a.TextPart("hello")}}}
	r.Input = json.RawMessage(`{"text":"hello"}`)
	if _, ok, err := s.Create(ctx, st.Key("alice", "m-echo", "hello"), r, []tasks.Event{st.StatusEvent(a2a.StateSubmitted),
		{Artifact: &r.Task.Artifacts[0]}, st.StatusEvent(a2a.StateCompleted)}); err != nil || !ok {
		t.Fatal(err, ok)
	}
	// A task through working, input-required, a follow-up bound to a key
	// of its own, chunks appended and an artifact replaced, a webhook.
	r = st.NewRecord("t-long", "bob", a2a.StateWorking, at)
	r.FunctionID = "demo::long"
	r.Task.History = []a2a.Message{st.UserMessage("m-long", "start")}
	r.PushConfigs = []a2a.PushConfig{{ID: "hook", URL: "https://hooks.example/x"}}
	if _, ok, err := s.Create(ctx, st.Key("bob", "m-long", "start"), r, []tasks.Event{st.StatusEvent(a2a.StateWorking)}); err != nil || !ok {
		t.Fatal(err, ok)
	}
	st.MustUpdate(t, s, "bob", "t-long", st.ArtifactChunk("a1", false, "one"))
	st.MustUpdate(t, s, "bob", "t-long", st.ArtifactChunk("a1", true, "two"))
	st.MustUpdate(t, s, "bob", "t-long", st.ArtifactChunk("a2", false, "x"))
	st.MustUpdate(t, s, "bob", "t-long", st.ArtifactChunk("a2", true, "y"))
	st.MustUpdate(t, s, "bob", "t-long", st.ArtifactChunk("a2", false, "z"))
	st.MustUpdate(t, s, "bob", "t-long", st.Flip(a2a.StateInputRequired))
	k := st.Key("bob", "m-more", "more")
	if _, _, _, err := s.Update(ctx, "bob", "t-long", &k, tasks.Whole, st.AppendMessage(st.UserMessage("m-more", "more"), a2a.StateWorking)); err != nil {
		t.Fatal(err)
	}
	// Still working, its input kept.
	r = st.NewRecord("t-open", "bob", a2a.StateSubmitted, at.Add(time.Second))
	r.FunctionID = "demo::long"
	r.Input = json.RawMessage(`{"n":1}`)
	st.Create(t, s, r)
}
