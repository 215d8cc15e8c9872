package mcp_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/mcp"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// listenFixture serves MCP with streams (the fake's Watch), the keys of
// server_test.go, and a revocation switch per caller id.
type listenFixture struct {
	url     string
	srv     *mcp.Server
	core    *transport.Core
	fake    *transporttest.Service
	cat     atomic.Pointer[functions.Catalog]
	revoked sync.Map // caller id → true
	tiers   sync.Map // caller id → the tiers its key has now
}

func newListenFixture(t *testing.T) *listenFixture {
	f := &listenFixture{fake: &transporttest.Service{TB: t}}
	f.cat.Store(testCatalog(t))
	revoked := func(p transport.Principal) bool { _, ok := f.revoked.Load(p.Caller.ID); return ok }
	f.core = transport.New(transport.Config{Tasks: f.fake, Lister: f.fake, Streams: f.fake, Auth: keys, Revoked: revoked, Logger: zerolog.Nop()})
	tiers := func(p transport.Principal) []string {
		if t, ok := f.tiers.Load(p.Caller.ID); ok {
			return t.([]string)
		}
		return p.Caller.Tiers
	}
	f.srv = mcp.New(mcp.Config{Core: f.core, Catalog: f.cat.Load, Version: "test", TaskAfter: 50 * time.Millisecond, Tiers: tiers})
	hs := httptest.NewServer(f.srv)
	t.Cleanup(hs.Close)
	t.Cleanup(f.core.CloseStreams) // first: Close waits for open listens
	f.url = hs.URL
	return f
}

// stream is an open listen: its messages as they come, closed at its end.
type stream struct {
	msgs chan map[string]any
	raw  chan string // each message's data, as it came
}

// listen opens subscriptions/listen (id 7) with key and params and reads
// its stream in the background.
func (f *listenFixture) listen(t *testing.T, key, params string) *stream {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":`+params+`}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("listen %s: %s", params, res.Header.Get("Content-Type"))
	}
	s := &stream{msgs: make(chan map[string]any, 16), raw: make(chan string, 16)}
	go func() {
		defer res.Body.Close()
		defer close(s.msgs)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) != nil {
					t.Errorf("an event that is not JSON: %s", data)
				}
				s.raw <- data
				s.msgs <- m
			}
		}
	}()
	return s
}

// next is the stream's next message; nil once it ended. It fails the
// test after a bound.
func (s *stream) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m := <-s.msgs:
		if m != nil {
			<-s.raw
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5s")
		return nil
	}
}

// quiet fails the test if a message comes within d.
func (s *stream) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case m := <-s.msgs:
		t.Fatalf("want nothing, got %v", m)
	case <-time.After(d):
	}
}

// wantMethod checks m is a notification of method with the listen's
// subscription id, and returns its params.
func wantMethod(t *testing.T, m map[string]any, method string) map[string]any {
	t.Helper()
	p, _ := m["params"].(map[string]any)
	meta, _ := p["_meta"].(map[string]any)
	if m["method"] != method || meta["io.modelcontextprotocol/subscriptionId"] != float64(7) {
		t.Fatalf("want %s for subscription 7, got %v", method, m)
	}
	return p
}

// wantEnd checks m is the listen's result and the stream then ends.
func wantEnd(t *testing.T, s *stream, m map[string]any) {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	if m["id"] != float64(7) || res["resultType"] != "complete" {
		t.Fatalf("want the listen's result, got %v", m)
	}
	if m := s.next(t); m != nil {
		t.Fatalf("after the result: %v", m)
	}
}

// without is testCatalog without the function id, plus extra.
func without(t *testing.T, id string, extra ...*functions.Function) *functions.Catalog {
	var fns []*functions.Function
	for _, fn := range testCatalog(t).Functions {
		if fn.ID != id {
			fns = append(fns, fn)
		}
	}
	return functions.NewCatalog(append(fns, extra...)...)
}

// TestListenToolsListChanged: a listen with toolsListChanged is
// acknowledged for it, then hears notifications/tools/list_changed after
// each reload that changes the tools its caller sees, and nothing after
// one that changes only what others see; a drain ends it with its
// result.
func TestListenToolsListChanged(t *testing.T) {
	f := newListenFixture(t)
	partner := f.listen(t, "partner-key", `{"notifications":{"toolsListChanged":true,"promptsListChanged":true}}`)
	internal := f.listen(t, "internal-key", `{"notifications":{"toolsListChanged":true}}`)
	for _, s := range []*stream{partner, internal} {
		if p := wantMethod(t, s.next(t), "notifications/subscriptions/acknowledged"); mustMarshal(t, p["notifications"]) != `{"toolsListChanged":true}` {
			t.Fatalf("the acknowledgement: %v", p)
		}
	}
	// A reload that changes no MCP tool anyone sees: nothing.
	f.cat.Store(without(t, "demo::private"))
	f.srv.Reloaded()
	partner.quiet(t, 200*time.Millisecond)
	internal.quiet(t, 0)
	// demo::echo is partner's alone.
	f.cat.Store(without(t, "demo::echo"))
	f.srv.Reloaded()
	wantMethod(t, partner.next(t), "notifications/tools/list_changed")
	internal.quiet(t, 200*time.Millisecond)
	// A changed description is a changed list.
	changed := without(t, "demo::echo")
	changed.Functions[0].Description = "Quotes, now better."
	f.cat.Store(changed)
	f.srv.Reloaded()
	wantMethod(t, internal.next(t), "notifications/tools/list_changed")
	partner.quiet(t, 200*time.Millisecond)
	// The partner key gains the internal tier (Config.Tiers): its caller
	// sees more; a reload after that changes nothing more.
	f.tiers.Store("p", []string{"partner", "internal"})
	f.srv.Reloaded()
	wantMethod(t, partner.next(t), "notifications/tools/list_changed")
	f.srv.Reloaded()
	partner.quiet(t, 200*time.Millisecond)
	internal.quiet(t, 0)
	f.core.CloseStreams()
	wantEnd(t, partner, partner.next(t))
	wantEnd(t, internal, internal.next(t))
}

// TestListenRevoked: the listen of a key revoked meanwhile ends with the
// core's -32054 as its answer; a listen of another key stays open.
func TestListenRevoked(t *testing.T) {
	f := newListenFixture(t)
	partner := f.listen(t, "partner-key", `{"notifications":{"toolsListChanged":true}}`)
	internal := f.listen(t, "internal-key", `{"notifications":{"toolsListChanged":true}}`)
	partner.next(t)
	internal.next(t)
	f.revoked.Store("p", true)
	// The listen writes its acknowledgement before its stream is
	// registered with the core: one not registered yet is not counted here,
	// and the core ends it as it registers. Either way it ends as revoked.
	if n := f.core.EndRevokedStreams(); n > 1 {
		t.Fatalf("EndRevokedStreams = %d, want at most 1 (the partner's)", n)
	}
	m := partner.next(t)
	e, _ := m["error"].(map[string]any)
	if m["id"] != float64(7) || e["code"] != float64(-32054) {
		t.Fatalf("the revoked listen's end: %v", m)
	}
	if m := partner.next(t); m != nil {
		t.Fatalf("after the error: %v", m)
	}
	internal.quiet(t, 100*time.Millisecond)
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// taskStates is a task of caller p's that goes through states as Watch
// tells them; Get reads it as it stands, and another caller gets
// ErrNotFound.
type taskStates struct {
	mu      sync.Mutex
	status  a2a.TaskStatus
	caller  string
	watches int
}

func (ts *taskStates) serve(f *listenFixture, states ...a2a.TaskState) {
	ts.status = a2a.TaskStatus{State: a2a.StateWorking, Timestamp: "2026-11-29T06:00:01.000Z"}
	f.fake.Caller = func(c tasks.Caller) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.caller = c.ID
	}
	f.fake.GetFn = func(id string, _ *int) (*a2a.Task, error) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if id != taskID || ts.caller != "p" {
			return nil, tasks.ErrNotFound
		}
		return &a2a.Task{ID: taskID, Status: ts.status}, nil
	}
	f.fake.WatchFn = func(id string, _ *uint64, emit func(tasks.StreamEvent) error) error {
		ts.mu.Lock()
		ts.watches++
		ts.mu.Unlock()
		t, _ := f.fake.GetFn(id, nil)
		if err := emit(tasks.StreamEvent{Task: t}); err != nil {
			return err
		}
		for i, s := range states {
			ts.mu.Lock()
			ts.status = a2a.TaskStatus{State: s, Timestamp: "2026-11-29T06:00:0" + string(rune('2'+i)) + ".000Z"}
			st := ts.status
			ts.mu.Unlock()
			if err := emit(tasks.StreamEvent{Status: &a2a.StatusUpdateEvent{TaskID: id, Status: st}}); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestListenResource: a listen naming the URI of the caller's task is
// acknowledged for it and hears notifications/resources/updated for each
// change of the task (not for the state it had when agreed), then its
// result once the task ended. Another caller's URI, a URI of no task and
// one that is no task's URI at all get the same bytes: an
// acknowledgement of nothing, the result, and no watch.
func TestListenResource(t *testing.T) {
	f := newListenFixture(t)
	var ts taskStates
	ts.serve(f, a2a.StateWorking, a2a.StateInputRequired, a2a.StateCompleted)
	uri := mcp.TaskURIPrefix + taskID
	s := f.listen(t, "partner-key", `{"notifications":{"resourceSubscriptions":["a2ad://tasks/nope","`+uri+`","a2ad://other"]}}`)
	if p := wantMethod(t, s.next(t), "notifications/subscriptions/acknowledged"); mustMarshal(t, p["notifications"]) != `{"resourceSubscriptions":["`+uri+`"]}` {
		t.Fatalf("the acknowledgement: %v", p)
	}
	for range 3 { // working again (a new time), input-required, completed
		if p := wantMethod(t, s.next(t), "notifications/resources/updated"); p["uri"] != uri {
			t.Fatalf("resources/updated: %v", p)
		}
	}
	wantEnd(t, s, s.next(t))

	var acks []string
	for _, c := range []struct{ key, uri string }{{"internal-key", uri}, {"partner-key", mcp.TaskURIPrefix + "nope"}, {"partner-key", "a2ad://elsewhere/" + taskID}} {
		s := f.listen(t, c.key, `{"notifications":{"resourceSubscriptions":["`+c.uri+`"]}}`)
		if m := <-s.msgs; m == nil {
			t.Fatalf("%s: no acknowledgement", c.uri)
		}
		acks = append(acks, <-s.raw)
		wantEnd(t, s, s.next(t))
	}
	want := `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{}}}`
	for i, a := range acks {
		if a != want {
			t.Errorf("acknowledgement %d: %s\nwant %s", i, a, want)
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.watches != 1 {
		t.Errorf("%d watches, want 1 (the caller's own task alone)", ts.watches)
	}
}

// TestListenSeveralKinds: one listen asking for tools, a resource and
// tasks is one stream carrying all three; the task's end does not end it
// (reloads are still heard), a drain does.
func TestListenSeveralKinds(t *testing.T) {
	f := newListenFixture(t)
	var ts taskStates
	ts.serve(f, a2a.StateCompleted)
	uri := mcp.TaskURIPrefix + taskID
	s := f.listen(t, "partner-key", `{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["`+uri+`"],"taskIds":["`+taskID+`"]},`+declared+`}`)
	p := wantMethod(t, s.next(t), "notifications/subscriptions/acknowledged")
	if got := mustMarshal(t, p["notifications"]); got != `{"resourceSubscriptions":["`+uri+`"],"taskIds":["`+taskID+`"],"toolsListChanged":true}` {
		t.Fatalf("the acknowledgement: %s", got)
	}
	var got []string
	for range 3 { // the task as agreed, then completed, and its resource updated once
		m := s.next(t)
		p, _ := m["params"].(map[string]any)
		got = append(got, m["method"].(string)+" "+mustMarshal(t, p["status"]))
		// every message on the stream names the listen (its request id, 7)
		if meta := mustMarshal(t, p["_meta"]); !strings.Contains(meta, `"io.modelcontextprotocol/subscriptionId":7`) {
			t.Errorf("%s: _meta %s names no subscription 7", m["method"], meta)
		}
	}
	want := []string{"notifications/tasks \"working\"", "notifications/tasks \"completed\"", "notifications/resources/updated null"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("the task's notifications: %q, want %q", got, want)
	}
	s.quiet(t, 100*time.Millisecond) // the task ended, the stream did not
	f.cat.Store(without(t, "text::wordcount"))
	f.srv.Reloaded()
	wantMethod(t, s.next(t), "notifications/tools/list_changed")
	f.core.CloseStreams()
	wantEnd(t, s, s.next(t))
}

// TestListenCapabilities: a client of revision 2026-07-28 is offered
// tools.listChanged and resources.subscribe (it listens for them); one of
// 2025-11-25 neither (it would wait on a session's stream, or send
// resources/subscribe).
func TestListenCapabilities(t *testing.T) {
	f := newFixture(t, nil)
	res, e, raw := f.rpc(t, "partner-key", "initialize",
		`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	if e != nil || !strings.Contains(string(res), `"resources":{},"tools":{}`) {
		t.Errorf("initialize: %s", raw)
	}
	meta := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}`
	status, _, b := f.post(t, "partner-key", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":`+meta+`}`, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover")
	if status != http.StatusOK || !strings.Contains(string(b), `"resources":{"subscribe":true},"tools":{"listChanged":true}`) {
		t.Errorf("server/discover: HTTP %d %s", status, b)
	}
}
