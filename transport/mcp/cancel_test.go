package mcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/a2ad/a2ad/tasks"
)

// TestFlights: a cancel reaches a running call (its context, then
// finish reports it), or the task of one that answered with its task
// still running, within flightKeep; never another caller's call, nor an
// ended call whose task had settled, nor one past its time.
func TestFlights(t *testing.T) {
	now := time.Unix(1000, 0)
	acme, bob := tasks.Caller{ID: "acme"}, tasks.Caller{ID: "bob"}
	id := json.RawMessage(`7`)
	var f flights

	ctx, cancel := context.WithCancelCause(context.Background())
	f.start(flightKey(acme, id), cancel)
	if got := f.cancelled(flightKey(bob, id), now); got != "" || ctx.Err() != nil {
		t.Fatal("another caller's cancel reached acme's call")
	}
	if got := f.cancelled(flightKey(acme, id), now); got != "" || context.Cause(ctx) != errCancelled {
		t.Fatalf("a running call's cancel: %q, cause %v", got, context.Cause(ctx))
	}
	if !f.finish(flightKey(acme, id), "t1", true, now) {
		t.Error("finish did not report the cancel that came while the call ran")
	}

	f.start(flightKey(acme, id), func(error) {})
	if f.finish(flightKey(acme, id), "t2", true, now) {
		t.Error("finish reported a cancel that never came")
	}
	if got := f.cancelled(flightKey(acme, id), now.Add(time.Second)); got != "t2" {
		t.Errorf("a cancel after the call answered: %q, want its task t2", got)
	}
	if got := f.cancelled(flightKey(acme, id), now.Add(time.Second)); got != "" {
		t.Errorf("a second cancel: %q, want nothing", got)
	}

	f.start(flightKey(acme, id), func(error) {})
	f.finish(flightKey(acme, id), "t3", false, now) // settled: nothing to cancel
	f.start(flightKey(acme, json.RawMessage(`8`)), func(error) {})
	f.finish(flightKey(acme, json.RawMessage(`8`)), "t4", true, now)
	if got := f.cancelled(flightKey(acme, id), now); got != "" {
		t.Errorf("the cancel of a call whose task settled: %q", got)
	}
	if got := f.cancelled(flightKey(acme, json.RawMessage(`8`)), now.Add(flightKeep+time.Second)); got != "" {
		t.Errorf("a cancel past flightKeep: %q", got)
	}
	if f.ended != 0 || len(f.m) != 0 {
		t.Errorf("%d ended, %d kept; want none", f.ended, len(f.m))
	}
}
