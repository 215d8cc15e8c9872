package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// subscriptions/listen on the real binary: notifications/tools/list_changed
// after a reload (SIGHUP) that changes what the caller sees, and
// notifications/resources/updated for the caller's own task.

// listenCatalog is handleCatalog plus a tool of the internal tier's.
const listenCatalog = handleCatalog + `  - id: ops::status
    description: Says how things are.
    metadata: {"mcp.expose": true, "mcp.tier": internal}
    builtin: echo
`

// listenStream is an open subscriptions/listen: its messages and their
// raw data as they come; both channels close at its end.
type listenStream struct {
	msgs chan map[string]any
	raw  chan string
}

// openListen opens subscriptions/listen (id 9) on base with key and
// params and reads its stream in the background until the test ends.
func openListen(t *testing.T, base, key string, params map[string]any) *listenStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	res, err := http.DefaultClient.Do(mcpRequest(t, base, key, 9, "subscriptions/listen", params).WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("subscriptions/listen: HTTP %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	s := &listenStream{msgs: make(chan map[string]any, 16), raw: make(chan string, 16)}
	go func() {
		defer res.Body.Close()
		defer close(s.msgs)
		defer close(s.raw)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				_ = json.Unmarshal([]byte(data), &m)
				s.raw <- data
				s.msgs <- m
			}
		}
	}()
	return s
}

// next is the stream's next message and its raw data (nil at its end);
// it fails the test after 10 s.
func (s *listenStream) next(t *testing.T) (map[string]any, string) {
	t.Helper()
	select {
	case m := <-s.msgs:
		return m, <-s.raw
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10 s")
		return nil, ""
	}
}

// quiet fails the test if a message comes within d.
func (s *listenStream) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case m := <-s.msgs:
		t.Fatalf("want nothing, got %v", m)
	case <-time.After(d):
	}
}

// reloadWith puts content in the binary's file at path (its catalogue or
// keys) and reloads it by SIGHUP, waiting for the n-th reload in its log.
func reloadWith(t *testing.T, p *process, path, content string, n int) {
	t.Helper()
	putFile(t, path, content)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		p.mu.Lock()
		logs := p.logs.String()
		p.mu.Unlock()
		if strings.Count(logs, `"message":"catalogue reloaded"`) >= n {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("no reload %d in the log:\n%s", n, logs)
		}
	}
}

// TestMCPListenToolsListChanged: two keys of two tiers listen with
// toolsListChanged; a reload that changes only the internal tier's tools
// tells the internal caller alone, one that adds a partner tool the
// partner alone, one that gives the internal key the partner tier the
// internal caller alone; the official Go SDK client, which listens when the
// server offers tools.listChanged, hears it through its handler.
func TestMCPListenToolsListChanged(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	partner := mustAppendKey(t, keys, "acme", "partner")
	internal := mustAppendKey(t, keys, "ops", "internal")
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, listenCatalog)
	p := startBinary(t, catalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--mcp-task-after", "300ms")

	changed := make(chan struct{}, 4)
	c := sdk.NewClient(&sdk.Implementation{Name: "a2ad-interop", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: p.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{partner}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if tc := cs.InitializeResult().Capabilities.Tools; tc == nil || !tc.ListChanged {
		t.Fatalf("the Go client's revision %s: tools capability %+v", cs.InitializeResult().ProtocolVersion, tc)
	}

	want := map[string]any{"notifications": map[string]any{"toolsListChanged": true}}
	streams := map[string]*listenStream{"partner": openListen(t, p.base, partner, want), "internal": openListen(t, p.base, internal, want)}
	for who, s := range streams {
		if m, raw := s.next(t); m["method"] != "notifications/subscriptions/acknowledged" ||
			!strings.Contains(raw, `"notifications":{"toolsListChanged":true}`) || !strings.Contains(raw, `"io.modelcontextprotocol/subscriptionId":9`) {
			t.Fatalf("%s's acknowledgement: %s", who, raw)
		}
	}
	heard := func(who string) {
		t.Helper()
		if m, raw := streams[who].next(t); m["method"] != "notifications/tools/list_changed" || !strings.Contains(raw, `"io.modelcontextprotocol/subscriptionId":9`) {
			t.Fatalf("%s: %s", who, raw)
		}
	}
	stand := strings.Replace(listenCatalog, "Says how things are.", "Says how things stand.", 1)
	reloadWith(t, p, catalog, stand, 1)
	heard("internal")
	streams["partner"].quiet(t, time.Second)
	select {
	case <-changed:
		t.Fatal("the Go client heard of a change it cannot see")
	default:
	}
	reloadWith(t, p, catalog, stand+`  - id: demo::echo
    metadata: {"mcp.expose": true, "mcp.tier": partner}
    builtin: echo
`, 2)
	heard("partner")
	streams["internal"].quiet(t, time.Second)
	// The internal key gains the partner tier: its caller sees more tools.
	b, err := os.ReadFile(keys)
	if err != nil || !strings.Contains(string(b), "tiers: [internal]") {
		t.Fatalf("the keys file: %v\n%s", err, b)
	}
	reloadWith(t, p, keys, strings.Replace(string(b), "tiers: [internal]", "tiers: [internal, partner]", 1), 3)
	heard("internal")
	streams["partner"].quiet(t, time.Second)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the Go SDK client's ToolListChangedHandler was not called")
	}
}

// TestMCPListenResource: a listen naming the URI of the caller's running
// task hears notifications/resources/updated as it goes to completed,
// then the listen's result; another caller naming that URI, and naming
// a task that does not exist, get the same bytes: an acknowledgement of
// nothing and the result.
func TestMCPListenResource(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	owner := mustAppendKey(t, keys, "acme", "partner")
	stranger := mustAppendKey(t, keys, "bob", "partner")
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, listenCatalog)
	p := startBinary(t, catalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--mcp-task-after", "300ms")
	h := callForHandle(t, p.base, owner, "demo.sleep", map[string]any{"seconds": 2})
	id, uri := h["taskId"].(string), "a2ad://tasks/"+h["taskId"].(string)
	if h["status"] != "working" {
		t.Fatalf("the handle: %v", h)
	}
	s := openListen(t, p.base, owner, map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{uri}}})
	if _, raw := s.next(t); !strings.Contains(raw, `"notifications":{"resourceSubscriptions":["`+uri+`"]}`) {
		t.Fatalf("the acknowledgement: %s", raw)
	}
	updates := 0
	for {
		m, raw := s.next(t)
		if m["method"] != "notifications/resources/updated" {
			if m["id"] != float64(9) || !strings.Contains(raw, `"resultType":"complete"`) || updates == 0 {
				t.Fatalf("after %d updates: %s", updates, raw)
			}
			break
		}
		if !strings.Contains(raw, `"uri":"`+uri+`"`) {
			t.Fatalf("an update: %s", raw)
		}
		updates++
	}
	if _, res, _ := mcpRaw(t, p.base, owner, "resources/read", map[string]any{"uri": uri}); !strings.Contains(mustJSON(t, res), `TASK_STATE_COMPLETED`) {
		t.Fatalf("the task after its last update: %v", res)
	}
	var streams []string
	for _, u := range []string{uri, "a2ad://tasks/" + strings.Replace(id, id[len(id)-4:], "0000", 1)} {
		s := openListen(t, p.base, stranger, map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{u}}})
		var all []string
		for m, raw := s.next(t); m != nil; m, raw = s.next(t) {
			all = append(all, raw)
		}
		streams = append(streams, strings.Join(all, "\n"))
	}
	if streams[0] != streams[1] || !strings.Contains(streams[0], `"notifications":{}`) {
		t.Fatalf("another caller's task and none: %q", streams)
	}
}
