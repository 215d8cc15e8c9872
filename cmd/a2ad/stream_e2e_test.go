package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
)

func TestOfficialClientStreams(t *testing.T) {
	m := startMain(t, nil)
	client := officialClient(t, "http://"+m.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// checkEvents checks a stream's events: the task first, then updates
	// of that task, the last one final and completed.
	checkEvents := func(events []a2a.Event) {
		t.Helper()
		if len(events) < 2 {
			t.Fatalf("%d events: %#v", len(events), events)
		}
		task, ok := events[0].(*a2a.Task)
		if !ok {
			t.Fatalf("first event %T, want *a2a.Task", events[0])
		}
		for _, ev := range events[1 : len(events)-1] {
			if st, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && st.Final {
				t.Fatalf("final event before the last: %+v", st)
			}
			if ev.TaskInfo().TaskID != task.ID {
				t.Fatalf("event %T of task %s, want %s", ev, ev.TaskInfo().TaskID, task.ID)
			}
		}
		last, ok := events[len(events)-1].(*a2a.TaskStatusUpdateEvent)
		if !ok || !last.Final || last.Status.State != a2a.TaskStateCompleted || last.TaskID != task.ID {
			t.Fatalf("last event %#v, want a final completed status", events[len(events)-1])
		}
	}

	var events []a2a.Event
	for ev, err := range client.SendStreamingMessage(ctx, &a2a.MessageSendParams{
		Message: skillMessage("demo::sleep", map[string]any{"seconds": 1}),
	}) {
		if err != nil {
			t.Fatalf("SendStreamingMessage after %d events: %v", len(events), err)
		}
		if events = append(events, ev); len(events) > 100 {
			t.Fatal("more than 100 events")
		}
	}
	checkEvents(events)
	artifacts := 0
	for _, ev := range events {
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			artifacts++
			if d, ok := a.Artifact.Parts[0].(a2a.DataPart); !ok || d.Data["slept"] != float64(1) {
				t.Fatalf("artifact %#v", a.Artifact.Parts)
			}
		}
	}
	if artifacts == 0 {
		t.Fatal("no artifact update")
	}

	// Resubscribe to a running task.
	running := startSleep(t, client, 2)
	events = nil
	for ev, err := range client.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: running.ID}) {
		if err != nil {
			t.Fatalf("ResubscribeToTask after %d events: %v", len(events), err)
		}
		if events = append(events, ev); len(events) > 100 {
			t.Fatal("more than 100 events")
		}
	}
	checkEvents(events)
	if first := events[0].(*a2a.Task); first.ID != running.ID || first.Status.State.Terminal() {
		t.Fatalf("resubscribe's task %s in %s, want %s running", first.ID, first.Status.State, running.ID)
	}
}

func TestStreamWireFormat(t *testing.T) {
	m := startMain(t, nil)
	base := "http://" + m.Addr()

	s := openStream(t, nil, base, "abc", "message/stream",
		sendParams("wire-1", "demo::sleep", map[string]any{"seconds": 0.3}, true), nil)
	if s.Resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", s.Resp.StatusCode)
	}
	if ct, cc := s.Resp.Header.Get("Content-Type"), s.Resp.Header.Get("Cache-Control"); ct != "text/event-stream" || cc != "no-cache" {
		t.Fatalf("Content-Type %q, Cache-Control %q", ct, cc)
	}
	evs := s.rest(t)
	checkWire := func(evs []sseEvent, wantID string) {
		t.Helper()
		var prev uint64
		for i, ev := range evs {
			f, _ := decodeEvent(t, ev)
			if string(f.ID) != wantID || f.Error != nil {
				t.Fatalf("event %d: %s, want a result with id %s", i, ev.Data, wantID)
			}
			if !strings.HasPrefix(ev.Data, `{"jsonrpc":"2.0",`) {
				t.Fatalf("event %d: %s", i, ev.Data)
			}
			seq := ev.seq(t)
			if i > 1 && seq <= prev {
				t.Fatalf("event %d: id %d after %d", i, seq, prev)
			}
			prev = seq
		}
		if first := result(t, evs[0]); first.Kind != "task" {
			t.Fatalf("first event kind %q", first.Kind)
		}
	}
	checkWire(evs, `"abc"`)
	checkFinal(t, evs, "completed")
	if a, b := evs[0].seq(t), evs[1].seq(t); a >= b {
		t.Fatalf("a running task's first two events have ids %d, %d", a, b)
	}
	taskID := result(t, evs[0]).ID

	// A settled task's stream: the task and its final status, with one id;
	// a number id is echoed as a number.
	s = openStream(t, nil, base, 42, "tasks/resubscribe", map[string]any{"id": taskID}, nil)
	settled := s.rest(t)
	checkWire(settled, `42`)
	if len(settled) != 2 || settled[0].ID != settled[1].ID || settled[1].ID != evs[len(evs)-1].ID {
		t.Fatalf("settled task's events %v, want two with id %s", eventIDs(settled), evs[len(evs)-1].ID)
	}
	checkFinal(t, settled, "completed")
}

func TestStreamCancelEndsWithCanceled(t *testing.T) {
	m := startMain(t, nil)
	base := "http://" + m.Addr()
	s := openStream(t, nil, base, 1, "message/stream",
		sendParams("cancel-1", "demo::sleep", map[string]any{"seconds": 30}, true), nil)
	_, task := s.firstTask(t)
	if got := resultTask(t, rpc(t, base, "tasks/cancel", map[string]any{"id": task.ID})); state(got) != "canceled" {
		t.Fatalf("tasks/cancel: %s", state(got))
	}
	start := time.Now()
	evs := s.rest(t)
	checkFinal(t, evs, "canceled")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stream ended %s after the cancel", d)
	}
}

// postRaw posts body to /a2a with header and returns the response and
// its body.
func postRaw(tb testing.TB, base string, body []byte, header http.Header) (*http.Response, []byte) {
	tb.Helper()
	return postURL(tb, nil, base+"/a2a", body, header)
}

func TestStreamErrorsBeforeTheStream(t *testing.T) {
	m := startMain(t, nil)
	base := "http://" + m.Addr()
	sse := http.Header{"Accept": {"text/event-stream"}}

	// An unknown task, to a client that does not take events: plain JSON.
	resp, body := postRaw(t, base, streamBody(7, "tasks/resubscribe", map[string]any{"id": "no-such-task"}), nil)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "application/json" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
	}
	if want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"Task not found"}}`; string(body) != want {
		t.Fatalf("body %s\nwant %s", body, want)
	}
	// To one that does: a single event without an id.
	resp, body = postRaw(t, base, streamBody("req-x", "tasks/resubscribe", map[string]any{"id": "no-such-task"}), sse)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
	}
	if want := "data: " + `{"jsonrpc":"2.0","id":"req-x","error":{"code":-32001,"message":"Task not found"}}` + "\n\n"; string(body) != want {
		t.Fatalf("body %q\nwant %q", body, want)
	}

	// Bad resume points, on a task that exists.
	done := resultTask(t, rpc(t, base, "message/send", sendParams("err-1", "demo::echo", map[string]any{"message": "x"}, true)))
	id := done["id"].(string)
	invalid := func(name string, body []byte, header http.Header) {
		t.Helper()
		resp, b := postRaw(t, base, body, header)
		var f rpcFrame
		if ct := resp.Header.Get("Content-Type"); ct == "text/event-stream" {
			if !bytes.HasPrefix(b, []byte("data: ")) || !bytes.HasSuffix(b, []byte("\n\n")) || bytes.Count(b, []byte("\n")) != 2 {
				t.Fatalf("%s: body %q, want one event", name, b)
			}
			b = bytes.TrimSpace(bytes.TrimPrefix(b, []byte("data: ")))
		}
		if err := json.Unmarshal(b, &f); err != nil || f.Error == nil || f.Error.Code != -32602 || f.Result != nil {
			t.Fatalf("%s: %s, want error -32602", name, b)
		}
	}
	resub := streamBody(3, "tasks/resubscribe", map[string]any{"id": id})
	invalid("header abc", resub, http.Header{"Last-Event-Id": {"abc"}})
	invalid("header abc, event-stream", resub, http.Header{"Last-Event-Id": {"abc"}, "Accept": {"text/event-stream"}})
	invalid("header -1", resub, http.Header{"Last-Event-Id": {"-1"}})
	invalid("metadata abc", streamBody(3, "tasks/resubscribe",
		map[string]any{"id": id, "metadata": map[string]any{"a2ad.lastEventId": "abc"}}), nil)
	invalid("metadata -1", streamBody(3, "tasks/resubscribe",
		map[string]any{"id": id, "metadata": map[string]any{"a2ad.lastEventId": -1}}), nil)
	invalid("metadata 1.5", streamBody(3, "tasks/resubscribe",
		map[string]any{"id": id, "metadata": map[string]any{"a2ad.lastEventId": 1.5}}), nil)
	invalid("message/stream header abc", streamBody(3, "message/stream",
		sendParams("err-1", "demo::echo", map[string]any{"message": "x"}, true)), http.Header{"Last-Event-Id": {"abc"}})
}

func TestStreamKeepAlive(t *testing.T) {
	m := startMain(t, func(c *Config) { c.KeepAlive = 100 * time.Millisecond })
	base := "http://" + m.Addr()
	s := openStream(t, nil, base, 1, "message/stream",
		sendParams("ka-1", "demo::sleep", map[string]any{"seconds": 2}, true), nil)
	evs := s.rest(t)
	checkFinal(t, evs, "completed")
	// About 20 are due; ask for one, as the brief's contract does, and
	// report how many came.
	if n := s.keepAlives.Load(); n < 1 {
		t.Fatalf("%d keep-alive comments during a 2 s task at a 100 ms interval", n)
	} else {
		t.Logf("%d keep-alive comments", n)
	}
}

// TestStreamResumeAfterCrash SIGKILLs the real binary while a retry-safe
// task streams, restarts it on the same store, and resumes the stream from
// the last event id seen: the client gets exactly the events it missed,
// then the live ones, up to the rerun's completion.
func TestStreamResumeAfterCrash(t *testing.T) {
	catalog, store := crashSetup(t, `functions:
  - id: work::slow
    metadata: {"a2a.expose": true}
    retry_safe: true
    builtin: sleep
`)
	p := startBinary(t, catalog, store)

	s := openStream(t, nil, p.base, "crash", "message/stream",
		sendParams("slow-1", "work::slow", map[string]any{"seconds": 3}, true), nil)
	first, task := s.firstTask(t)
	last := first.seq(t)
	wait := time.NewTimer(time.Second)
	select {
	case ev, ok := <-s.events:
		if ok {
			last = ev.seq(t)
		}
	case <-wait.C:
	}
	wait.Stop()
	p.kill(t)
	s.close()

	p2 := startBinary(t, catalog, store)
	resumed := openStream(t, nil, p2.base, "again", "tasks/resubscribe", map[string]any{"id": task.ID}, lastEventID(last)).rest(t)
	checkFinal(t, resumed, "completed")
	full := openStream(t, nil, p2.base, "full", "tasks/resubscribe", map[string]any{"id": task.ID}, lastEventID(0)).rest(t)
	checkFinal(t, full, "completed")
	sameEvents(t, resumed, after(t, full, last))
	for i := 1; i < len(full); i++ {
		if full[i].seq(t) <= full[i-1].seq(t) {
			t.Fatalf("stored log ids %v do not increase", eventIDs(full))
		}
	}
	// The rerun is in the log: resubmitted after the restart, then working
	// (progress reports may come before and after).
	var states []string
	for _, ev := range resumed {
		if r := result(t, ev); r.Kind == "status-update" {
			states = append(states, r.Status.State)
		}
	}
	if !rerunStates(states) {
		t.Fatalf("resumed states %v, want submitted then working (the rerun), ..., completed", states)
	}
}

// rerunStates reports whether states show a rerun: a submitted status
// after any working ones, and a working one after it.
func rerunStates(states []string) bool {
	for i, st := range states {
		if st == "submitted" {
			for _, later := range states[i+1:] {
				if later == "working" {
					return true
				}
			}
			return false
		}
	}
	return false
}

func TestStreamResumeFinishedTask(t *testing.T) {
	m := startMain(t, nil)
	base := "http://" + m.Addr()
	params := sendParams("fin-1", "demo::sleep", map[string]any{"seconds": 0.2}, true)
	live := openStream(t, nil, base, 1, "message/stream", params, nil).rest(t)
	checkFinal(t, live, "completed")
	task := result(t, live[0])
	final := live[len(live)-1].seq(t)

	full := openStream(t, nil, base, 2, "tasks/resubscribe", map[string]any{"id": task.ID}, lastEventID(0)).rest(t)
	if full[0].seq(t) != 1 {
		t.Fatalf("stored log starts at %s", full[0].ID)
	}
	// What the live stream sent after the task is what the log holds.
	sameEvents(t, live[1:], after(t, full, live[0].seq(t)))

	want := after(t, full, 1)
	for _, tc := range []struct {
		name   string
		method string
		params any
		header http.Header
	}{
		{"header", "tasks/resubscribe", map[string]any{"id": task.ID}, lastEventID(1)},
		{"metadata number", "tasks/resubscribe",
			map[string]any{"id": task.ID, "metadata": map[string]any{"a2ad.lastEventId": 1}}, nil},
		{"metadata string", "tasks/resubscribe",
			map[string]any{"id": task.ID, "metadata": map[string]any{"a2ad.lastEventId": "1"}}, nil},
		{"message resent", "message/stream", params, lastEventID(1)},
	} {
		got := openStream(t, nil, base, 3, tc.method, tc.params, tc.header).rest(t)
		for _, ev := range got {
			if f, _ := decodeEvent(t, ev); string(f.ID) != "3" {
				t.Fatalf("%s: JSON-RPC id %s", tc.name, f.ID)
			}
		}
		sameEvents(t, got, want)
	}

	// Resuming at the final event: nothing is left, the stream is empty.
	start := time.Now()
	s := openStream(t, nil, base, 4, "tasks/resubscribe", map[string]any{"id": task.ID}, lastEventID(final))
	if ct := s.Resp.Header.Get("Content-Type"); s.Resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		_, err := s.collect(time.Second) // a JSON body is not an event: err holds it
		t.Fatalf("Last-Event-ID %d of a finished task: status %d, Content-Type %q, want an empty event stream; body: %v",
			final, s.Resp.StatusCode, ct, err)
	}
	if evs := s.rest(t); len(evs) != 0 {
		t.Fatalf("Last-Event-ID %d of a finished task: %d events, want none; first: id %q data %s",
			final, len(evs), evs[0].ID, evs[0].Data)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("empty stream took %s to end", d)
	}
}

// eventKey is what subscribers of one task must agree on.
type eventKey struct {
	ID, Kind, State string
}

func TestManySubscribersSeeTheSameSequence(t *testing.T) {
	m := startMain(t, nil)
	base := "http://" + m.Addr()
	tr := &http.Transport{MaxIdleConnsPerHost: 128}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}

	task := resultTask(t, rpc(t, base, "message/send", sendParams("many-1", "demo::sleep", map[string]any{"seconds": 2}, false)))
	id := task["id"].(string)

	const n = 100
	got := make([][]sseEvent, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := dialStream(hc, base, i, "tasks/resubscribe", map[string]any{"id": id}, nil)
			if err != nil {
				t.Errorf("subscriber %d: %v", i, err)
				return
			}
			defer s.close()
			evs, err := s.collect(15 * time.Second)
			if !errors.Is(err, io.EOF) {
				t.Errorf("subscriber %d: stream ended with %v after %d events", i, err, len(evs))
				return
			}
			got[i] = evs
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	full := openStream(t, hc, base, 0, "tasks/resubscribe", map[string]any{"id": id}, lastEventID(0)).rest(t)
	checkFinal(t, full, "completed")
	key := func(ev sseEvent) eventKey {
		r := result(t, ev)
		return eventKey{ev.ID, r.Kind, r.Status.State}
	}
	finalID := full[len(full)-1].ID
	for i, evs := range got {
		if len(evs) < 2 {
			t.Fatalf("subscriber %d: %d events", i, len(evs))
		}
		first := result(t, evs[0])
		if first.Kind != "task" || first.ID != id {
			t.Fatalf("subscriber %d: first event %s", i, evs[0].Data)
		}
		if first.Status.State == "completed" {
			t.Fatalf("subscriber %d subscribed after the task ended", i)
		}
		want := after(t, full, evs[0].seq(t))
		if len(evs)-1 != len(want) {
			t.Fatalf("subscriber %d: ids %v after its task, want %v", i, eventIDs(evs[1:]), eventIDs(want))
		}
		for j, ev := range evs[1:] {
			if g, w := key(ev), key(want[j]); g != w {
				t.Fatalf("subscriber %d event %d: %+v, want %+v", i, j+1, g, w)
			}
		}
		if last := evs[len(evs)-1].ID; last != finalID {
			t.Fatalf("subscriber %d ends at %s, want %s", i, last, finalID)
		}
	}
}

// TestShutdownEndsStreams closes the server under an open stream: the
// stream ends at once, without a final event, and Close does not wait for
// it; a new server on the same store resumes the stream where it ended.
func TestShutdownEndsStreams(t *testing.T) {
	m := startMain(t, nil) // ShutdownGrace 2s: Close waits that long for the run
	base := "http://" + m.Addr()
	s := openStream(t, nil, base, 1, "message/stream",
		sendParams("shut-1", "demo::sleep", map[string]any{"seconds": 30}, true), nil)
	first, task := s.firstTask(t)
	last := first.seq(t)

	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	evs, err := s.collect(5 * time.Second)
	ended := time.Since(start)
	if err == nil || strings.Contains(err.Error(), "still open") {
		t.Fatalf("stream did not end on shutdown: %v", err)
	}
	if ended > time.Second {
		t.Fatalf("stream ended %s after Close began: it waited for the run", ended)
	}
	for _, ev := range evs {
		if result(t, ev).Final {
			t.Fatalf("final event on shutdown: %s", ev.Data)
		}
		last = ev.seq(t)
	}
	awaitNil(t, closed, 3*time.Second, "Close")
	t.Logf("stream ended %s after Close began, Close took %s", ended, time.Since(start))

	// A new server on the same store: recovery runs the retry-safe task
	// again, and the stream resumes after the last event seen.
	m2 := startMain(t, func(c *Config) { c.Store = m.Config.Store })
	base2 := "http://" + m2.Addr()
	r := openStream(t, nil, base2, 2, "tasks/resubscribe", map[string]any{"id": task.ID}, lastEventID(last))
	// The run went on during the grace period (progress reports may come
	// first); then recovery resubmitted it and it runs again.
	var states []string
	for !rerunStates(states) {
		ev, ok := r.next(t, 10*time.Second)
		if !ok {
			t.Fatalf("resumed stream ended after states %v: %v", states, r.err)
		}
		if seq := ev.seq(t); seq <= last {
			t.Fatalf("resumed stream repeats event %d (resumed after %d)", seq, last)
		} else {
			last = seq
		}
		res := result(t, ev)
		if res.Final {
			t.Fatalf("final event %s before the rerun, after states %v", ev.Data, states)
		}
		if res.Kind == "status-update" {
			states = append(states, res.Status.State)
		}
	}
	// The rerun sleeps 30 s; cancel it to reach the final event now.
	if got := resultTask(t, rpc(t, base2, "tasks/cancel", map[string]any{"id": task.ID})); state(got) != "canceled" {
		t.Fatalf("tasks/cancel: %s", state(got))
	}
	checkFinal(t, r.rest(t), "canceled")
}
