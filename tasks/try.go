package tasks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// Try runs fn once with input as a task's call runs: input is checked
// against fn's input schema, the call is bounded by fn's timeout, what it
// reports goes to emit as the events a task would get (a working status
// for a note, an artifact event for a chunk) while it runs, and its
// result becomes the status and artifacts the task would end with (failed
// with the text a caller reads, input-required with the function's
// question, or completed with its artifacts). There is no task and no
// store: it is the dev loop of a function's author (a2ad call). The
// call's log, stderr lines included, goes to log. A cancel of ctx fails
// the call as "call canceled".
//
// It returns an *InputError (ErrInvalidInput), without calling fn, if
// input does not match the input schema.
func Try(ctx context.Context, fn *functions.Function, input json.RawMessage, log zerolog.Logger, emit func(Event)) (a2a.TaskStatus, []a2a.Artifact, error) {
	if err := validateInput(fn, input); err != nil {
		return a2a.TaskStatus{}, nil, err
	}
	// A Service with what a call's steps use, a clock and metrics: no
	// store, no executor.
	s := &Service{cfg: Config{Now: time.Now}, met: nopMetrics{}, sm: machine{now: time.Now}}
	id, contextID := newID(), newID()
	log = log.With().Str("task_id", id).Str("function_id", fn.ID).Logger()
	report := func(p functions.Progress) {
		switch {
		case p.Artifact != nil:
			emit(chunkEvent(p.Artifact))
		case p.Message != "":
			st := s.sm.noteStatus(id, contextID, p.Message)
			emit(Event{Status: &st})
		}
	}
	// The backend is told its call as a task's would be: a first attempt,
	// by the anonymous caller, with a key of its own.
	rec := &Record{Task: a2a.Task{ID: id, ContextID: contextID}, Input: input}
	c := callOf(rec, newID(), 1)
	c.FunctionID = fn.ID
	r := &run{s: s, c: c, fn: fn, input: input, rec: rec, log: log}
	res := r.call(ctx, report, func(functions.ProcessGroup) {})
	return res.status, res.artifacts, nil
}
