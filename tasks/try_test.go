package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// TestTry runs a call with no task: its progress comes as the events a
// task would get, its result as the status and artifact it would end with.
func TestTry(t *testing.T) {
	text := "page 1"
	b := &Backend{Fn: func(ctx context.Context, in json.RawMessage) (functions.Result, error) {
		functions.ReportProgress(ctx, functions.Progress{Message: "Fetched 1 of 2 pages"})
		functions.ReportProgress(ctx, functions.Progress{Artifact: &functions.ProgressArtifact{ArtifactID: "r", Text: &text, LastChunk: true}})
		return functions.Result{Output: in}, nil
	}}
	f := fn(t, "t::try", b, func(f *functions.Function) { f.Input = mustSchema(t, `{"type":"object","required":["q"]}`) })
	var events []tasks.Event
	st, art, err := tasks.Try(context.Background(), f, json.RawMessage(`{"q":1}`), zerolog.Nop(), func(e tasks.Event) { events = append(events, e) })
	if err != nil || st.State != a2a.StateCompleted || len(art) != 1 || art[0].Name != "t::try" || string(art[0].Parts[0].Data) != `{"q":1}` {
		t.Fatalf("Try = %+v, %+v, %v", st, art, err)
	}
	if len(events) != 2 || events[0].Status == nil || events[0].Status.State != a2a.StateWorking ||
		events[0].Status.Message.Parts[0].Text != "Fetched 1 of 2 pages" ||
		events[1].Artifact == nil || events[1].Artifact.ArtifactID != "r" || events[1].Artifact.Parts[0].Text != "page 1" || !events[1].LastChunk {
		t.Fatalf("events = %+v", events)
	}

	// An input the schema refuses is an InputError, and nothing runs.
	calls := b.calls.Load()
	_, _, err = tasks.Try(context.Background(), f, json.RawMessage(`{}`), zerolog.Nop(), func(tasks.Event) {})
	var ie *tasks.InputError
	if !errors.Is(err, tasks.ErrInvalidInput) || !errors.As(err, &ie) || ie.Skill != "t::try" || b.calls.Load() != calls {
		t.Fatalf("Try with a refused input: %v (%d calls, want %d)", err, b.calls.Load(), calls)
	}

	// A failure is the status a caller reads.
	b.Fn = func(context.Context, json.RawMessage) (functions.Result, error) {
		return functions.Result{}, &functions.CallError{Reason: "function returned invalid JSON"}
	}
	st, art, err = tasks.Try(context.Background(), f, json.RawMessage(`{"q":1}`), zerolog.Nop(), func(tasks.Event) {})
	if err != nil || st.State != a2a.StateFailed || art != nil || st.Message.Parts[0].Text != "function returned invalid JSON" {
		t.Fatalf("failed Try = %+v, %+v, %v", st, art, err)
	}
}
