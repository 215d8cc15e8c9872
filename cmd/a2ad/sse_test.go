package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// An SSE reader for the stream tests.

// sseEvent is one event of a stream, as read off the wire.
type sseEvent struct {
	ID        string // the id field
	HasID     bool
	Data      string // the data field
	DataLines int
	Other     []string // any other line: there must be none
}

// seq is the event's id as a task sequence number.
func (ev sseEvent) seq(tb testing.TB) uint64 {
	tb.Helper()
	n, err := strconv.ParseUint(ev.ID, 10, 64)
	if !ev.HasID || err != nil {
		tb.Fatalf("event id %q (present %v) is not a sequence number", ev.ID, ev.HasID)
	}
	return n
}

// sseStream is an open event stream, read in the background so that every
// read can be bounded.
type sseStream struct {
	Resp       *http.Response
	events     chan sseEvent // closed when the body ends
	err        error         // why the body ended; set before events is closed
	keepAlives atomic.Int64
	cancel     context.CancelFunc
	done       chan struct{}
}

// streamBody is a JSON-RPC request with the given id.
func streamBody(id any, method string, params any) []byte {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return b
}

// dialStream posts one JSON-RPC request that accepts text/event-stream and
// starts reading the answer as events. Close the stream when done.
func dialStream(hc *http.Client, base string, id any, method string, params any, header http.Header) (*sseStream, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/a2a", bytes.NewReader(streamBody(id, method, params)))
	if err != nil {
		cancel()
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &sseStream{Resp: resp, events: make(chan sseEvent, 1024), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.read(ctx)
	}()
	return s, nil
}

// openStream is dialStream for the test goroutine; the stream is closed
// at the end of the test.
func openStream(tb testing.TB, hc *http.Client, base string, id any, method string, params any, header http.Header) *sseStream {
	tb.Helper()
	s, err := dialStream(hc, base, id, method, params, header)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.close)
	return s
}

// close stops reading and waits for the reader. It is safe to call more
// than once.
func (s *sseStream) close() {
	s.cancel()
	_ = s.Resp.Body.Close()
	<-s.done
}

func (s *sseStream) read(ctx context.Context) {
	defer close(s.events)
	br := bufio.NewReaderSize(s.Resp.Body, 64<<10)
	var ev sseEvent
	inEvent := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			s.err = err
			if line != "" || inEvent {
				s.err = fmt.Errorf("body ends inside an event (%q): %w", line, err)
			}
			return
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if !inEvent {
				continue // the end of a comment
			}
			select {
			case s.events <- ev:
			case <-ctx.Done():
				s.err = ctx.Err()
				return
			}
			ev, inEvent = sseEvent{}, false
		case line == ": keep-alive" && !inEvent:
			s.keepAlives.Add(1)
		case strings.HasPrefix(line, "id: "):
			ev.ID, ev.HasID, inEvent = strings.TrimPrefix(line, "id: "), true, true
		case strings.HasPrefix(line, "data: "):
			ev.Data, inEvent = strings.TrimPrefix(line, "data: "), true
			ev.DataLines++
		default:
			ev.Other, inEvent = append(ev.Other, line), true
		}
	}
}

// next returns the next event, or false when the body has ended.
func (s *sseStream) next(tb testing.TB, within time.Duration) (sseEvent, bool) {
	tb.Helper()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case ev, ok := <-s.events:
		return ev, ok
	case <-t.C:
		tb.Fatalf("no event within %s", within)
		return sseEvent{}, false
	}
}

// collect reads the remaining events until the body ends, and returns why
// it ended (io.EOF for a clean end).
func (s *sseStream) collect(within time.Duration) ([]sseEvent, error) {
	t := time.NewTimer(within)
	defer t.Stop()
	var evs []sseEvent
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return evs, s.err
			}
			evs = append(evs, ev)
		case <-t.C:
			return evs, fmt.Errorf("stream still open after %s, %d events read", within, len(evs))
		}
	}
}

// rest reads the remaining events up to the body's clean end.
func (s *sseStream) rest(tb testing.TB) []sseEvent {
	tb.Helper()
	evs, err := s.collect(20 * time.Second)
	if !errors.Is(err, io.EOF) {
		tb.Fatalf("stream did not end cleanly: %v", err)
	}
	return evs
}

// rpcFrame is the JSON-RPC response an event's data carries.
type rpcFrame struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// streamResult is what the tests look at in a result.
type streamResult struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`     // a task's
	TaskID string `json:"taskId"` // an update's
	Status struct {
		State string `json:"state"`
	} `json:"status"`
	Final bool `json:"final"`
}

// decodeEvent checks an event's form (one data line of one JSON-RPC
// response, no other field) and decodes it.
func decodeEvent(tb testing.TB, ev sseEvent) (rpcFrame, streamResult) {
	tb.Helper()
	if ev.DataLines != 1 || len(ev.Other) != 0 {
		tb.Fatalf("event %+v: want one data line and no other field", ev)
	}
	if !json.Valid([]byte(ev.Data)) {
		tb.Fatalf("event data is not JSON: %s", ev.Data)
	}
	var f rpcFrame
	if err := json.Unmarshal([]byte(ev.Data), &f); err != nil {
		tb.Fatal(err)
	}
	if f.JSONRPC != "2.0" {
		tb.Fatalf("event data %s: jsonrpc %q", ev.Data, f.JSONRPC)
	}
	var r streamResult
	if f.Error == nil {
		if err := json.Unmarshal(f.Result, &r); err != nil {
			tb.Fatalf("event data %s: result: %v", ev.Data, err)
		}
	}
	return f, r
}

// firstTask reads the first event of s, which must be the task itself.
func (s *sseStream) firstTask(tb testing.TB) (sseEvent, streamResult) {
	tb.Helper()
	first, ok := s.next(tb, 10*time.Second)
	if !ok {
		tb.Fatalf("stream ended at once: %v", s.err)
	}
	task := result(tb, first)
	if task.Kind != "task" {
		tb.Fatalf("first event %s", first.Data)
	}
	return first, task
}

// result is decodeEvent's result; it fails on an error event.
func result(tb testing.TB, ev sseEvent) streamResult {
	tb.Helper()
	f, r := decodeEvent(tb, ev)
	if f.Error != nil {
		tb.Fatalf("error event: %s", ev.Data)
	}
	return r
}

// lastEventID is a header resuming after seq.
func lastEventID(seq uint64) http.Header {
	return http.Header{"Last-Event-Id": {strconv.FormatUint(seq, 10)}}
}

// after returns the events of log with a sequence above seq.
func after(tb testing.TB, log []sseEvent, seq uint64) []sseEvent {
	tb.Helper()
	var out []sseEvent
	for _, ev := range log {
		if ev.seq(tb) > seq {
			out = append(out, ev)
		}
	}
	return out
}

// sameEvents compares two lists of events by id and result, ignoring the
// JSON-RPC id.
func sameEvents(tb testing.TB, got, want []sseEvent) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d events %v, want %d %v", len(got), eventIDs(got), len(want), eventIDs(want))
	}
	for i := range got {
		gf, _ := decodeEvent(tb, got[i])
		wf, _ := decodeEvent(tb, want[i])
		if got[i].ID != want[i].ID || !bytes.Equal(gf.Result, wf.Result) {
			tb.Fatalf("event %d:\n got id %s %s\nwant id %s %s", i, got[i].ID, gf.Result, want[i].ID, wf.Result)
		}
	}
}

func eventIDs(evs []sseEvent) []string {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids
}

// checkFinal checks that the last event is the final status in state want.
func checkFinal(tb testing.TB, evs []sseEvent, want string) {
	tb.Helper()
	if len(evs) == 0 {
		tb.Fatal("no events")
	}
	for _, ev := range evs[:len(evs)-1] {
		if r := result(tb, ev); r.Final {
			tb.Fatalf("final event %s before the last one", ev.Data)
		}
	}
	last := result(tb, evs[len(evs)-1])
	if last.Kind != "status-update" || !last.Final || last.Status.State != want {
		tb.Fatalf("last event %s, want a final status-update %s", evs[len(evs)-1].Data, want)
	}
}
