package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.servers, ",") != "a2ad,js,sdk,floor" || joinInts(o.clients) != "16,64" ||
		o.duration != 10*time.Second || o.warmup != 2*time.Second || o.mode != "send" {
		t.Fatalf("defaults = %+v", o)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-servers", "a2ad,nginx"}, `unknown server "nginx"`},
		{[]string{"-servers", ","}, "name at least one server"},
		{[]string{"-clients", "16,x"}, `"x" is not a number of clients`},
		{[]string{"-clients", "0"}, `"0" is not a number of clients`},
		{[]string{"-duration", "0s"}, "-duration must be positive"},
		{[]string{"-duration", "3m"}, "over the limit of 10m0s"},
		{[]string{"-a2ad-log-level", "loud"}, "is not debug, info, warn or error"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		_, err := parseFlags(tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestParseFlagsStreamMode(t *testing.T) {
	o, err := parseFlags([]string{"-mode", "stream"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.mode != "stream" || joinInts(o.clients) != "16" || strings.Join(o.servers, ",") != "a2ad,js,sdk,floor" ||
		o.duration != 10*time.Second || o.warmup != 2*time.Second {
		t.Fatalf("stream defaults = %+v", o)
	}
	o, err = parseFlags([]string{"-mode", "stream", "-clients", "4,16,64", "-servers", "a2ad,sdk", "-duration", "2s", "-warmup", "1s"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if joinInts(o.clients) != "4,16,64" || strings.Join(o.servers, ",") != "a2ad,sdk" || o.planned() != 18*time.Second {
		t.Fatalf("stream with flags = %+v", o)
	}
	// The 1.0 SDK server and a2ad on tmpfs, by name, in the order given.
	o, err = parseFlags([]string{"-servers", "a2ad, a2ad-tmpfs,js,sdk2,sdk,floor,sdk2"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.servers, ","); got != "a2ad,a2ad-tmpfs,js,sdk2,sdk,floor" {
		t.Fatalf("servers %q", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-mode", "streams"}, `-mode: "streams" is not send or stream`},
		{[]string{"-mode", ""}, `-mode: "" is not send or stream`},
		{[]string{"-mode", "stream", "-clients", "0"}, `"0" is not a number of clients`},
		{[]string{"-mode", "stream", "-duration", "0s"}, "-duration must be positive"},
		{[]string{"-mode", "stream", "-clients", "16,32,64", "-duration", "2m"}, "over the limit of 10m0s"},
	} {
		_, err := parseFlags(tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	// A bad mode exits with status 2 before anything is built.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-mode", "bogus"}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if got := strings.TrimSpace(stderr.String()); got != `a2abench: -mode: "bogus" is not send or stream` || stdout.Len() != 0 {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), got)
	}
}

// readAllEvents reads a stream to its end with sseReader.
func readAllEvents(t *testing.T, in string) ([]sseEvent, *sseReader, error) {
	t.Helper()
	p := newSSEReader(nil)
	p.reset(strings.NewReader(in))
	var out []sseEvent
	for {
		ev, err := p.next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, p, err
		}
		ev.data = append([]byte(nil), ev.data...) // valid until the next call only
		out = append(out, ev)
	}
}

func TestSSEReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []sseEvent
	}{
		{"single data line", "data: {\"a\":1}\n\n", []sseEvent{{data: []byte(`{"a":1}`)}}},
		{"no space after the colon", "data:{\"a\":1}\n\n", []sseEvent{{data: []byte(`{"a":1}`)}}},
		{"only the first space is dropped", "data:  x\n\n", []sseEvent{{data: []byte(" x")}}},
		{"multiple events with ids", "id: 1\ndata: one\n\nid: 2\ndata: two\n\nid: 3\ndata: three\n\n",
			[]sseEvent{{id: "1", data: []byte("one")}, {id: "2", data: []byte("two")}, {id: "3", data: []byte("three")}}},
		{"uuid ids and CRLF", "id: 5e0f\r\ndata: x\r\n\r\n", []sseEvent{{id: "5e0f", data: []byte("x")}}},
		{"several data lines", "data: a\ndata: b\ndata:\n\n", []sseEvent{{data: []byte("a\nb\n")}}},
		{"comments and keep-alives", ": keep-alive\n\n:x\ndata: a\n: inside\n\n: keep-alive\n\n",
			[]sseEvent{{data: []byte("a")}}},
		{"event type, retry and unknown fields", "event: update\nretry: 10\nfoo: bar\nfoo\ndata: a\n\n",
			[]sseEvent{{event: "update", data: []byte("a")}}},
		{"id without data is not an event", "id: 7\n\ndata: a\n\n", []sseEvent{{data: []byte("a")}}},
		{"an event cut off is dropped", "data: a\n\ndata: b\n", []sseEvent{{data: []byte("a")}}},
		{"an unterminated line is dropped", "data: a\n\ndata: b", []sseEvent{{data: []byte("a")}}},
		{"empty stream", "", nil},
	} {
		got, _, err := readAllEvents(t, tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
			t.Errorf("%s: events %q, want %q", tc.name, got, tc.want)
		}
	}

	// A line longer than the reader's buffer.
	long := strings.Repeat("x", 10000)
	got, _, err := readAllEvents(t, "data: "+long+"\n\n")
	if err != nil || len(got) != 1 || string(got[0].data) != long {
		t.Fatalf("long line: %d events, %v", len(got), err)
	}
	// A line over the limit is an error.
	if _, _, err := readAllEvents(t, "data: "+strings.Repeat("x", maxSSELine)+"\n\n"); err == nil {
		t.Fatal("a line over the limit was read")
	}

	// The time of the first data line: not set by comments alone.
	_, p, _ := readAllEvents(t, ": keep-alive\n\n")
	if !p.firstData.IsZero() {
		t.Fatal("firstData set without a data line")
	}
	before := time.Now()
	_, p, _ = readAllEvents(t, ": keep-alive\n\ndata: a\n\n")
	if p.firstData.Before(before) {
		t.Fatalf("firstData %v, before the read began (%v)", p.firstData, before)
	}
	p.reset(strings.NewReader(""))
	if !p.firstData.IsZero() {
		t.Fatal("reset kept firstData")
	}
}

func TestReadStream(t *testing.T) {
	const (
		task   = `{"jsonrpc":"2.0","id":7,"result":{"kind":"task","id":"t","status":{"state":"submitted"}}}`
		art    = `{"jsonrpc":"2.0","id":7,"result":{"kind":"artifact-update","taskId":"t","artifact":{"artifactId":"a","parts":[]}}}`
		work   = `{"jsonrpc":"2.0","id":7,"result":{"kind":"status-update","taskId":"t","status":{"state":"working"},"final":false}}`
		done   = `{"jsonrpc":"2.0","id":7,"result":{"kind":"status-update","taskId":"t","status":{"state":"completed"},"final":true}}`
		failed = `{"jsonrpc":"2.0","id":7,"result":{"kind":"status-update","taskId":"t","status":{"state":"failed"},"final":true}}`
		rpcErr = `{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"Task not found"}}`
	)
	ev := func(id, data string) string {
		if id != "" {
			return "id: " + id + "\ndata: " + data + "\n\n"
		}
		return "data: " + data + "\n\n"
	}
	checkReadStream(t, a2a03, []streamCase{
		{"a2ad: task, artifact, final", ev("1", task) + ev("3", art) + ev("4", done), 3, ""},
		{"sdk: 4 events with uuid ids", ev("0b1e", task) + ev("1c2f", work) + ev("2d3a", art) + ev("3e4b", done), 4, ""},
		{"keep-alives between events", ": keep-alive\n\n" + ev("", task) + ": keep-alive\n\n" + ev("", done), 2, ""},
		{"no final event", ev("1", task) + ev("2", work), 2, "without a final status-update"},
		{"final:false is not final", ev("1", task) + ev("2", strings.Replace(done, `"final":true`, `"final":false`, 1)), 2, "without a final"},
		{"the final event cut off", ev("1", task) + "id: 2\ndata: " + done + "\n", 1, "without a final"},
		{"an event after the final one", ev("1", done) + ev("2", work), 2, "after the final status-update"},
		{"a final failed task", ev("1", task) + ev("2", failed), 2, `in state "failed"`},
		{"a JSON-RPC error", ev("", rpcErr), 1, "JSON-RPC error -32001: Task not found"},
		{"another request's id", ev("", strings.Replace(task, `"id":7`, `"id":8`, 1)), 1, "event id 8, want 7"},
		{"not JSON", ev("", "{"), 1, "decode event"},
		{"empty stream", "", 0, "after 0 events without a final"},
	})
}

func TestPrintStreamResults(t *testing.T) {
	o := options{mode: "stream", servers: []string{"a2ad", "sdk", "sdk2", "floor"}, clients: []int{16}}
	results := []result{
		{"a2ad", 16, stats{ok: 1000, events: 3000, elapsed: time.Second, p50: time.Millisecond, p99: 4 * time.Millisecond, max: 9 * time.Millisecond}},
		{"sdk", 16, stats{ok: 100, events: 400, elapsed: time.Second, p99: 20 * time.Millisecond, errors: 1, firstErr: "boom"}},
		{"sdk2", 16, stats{ok: 500, events: 2000, elapsed: time.Second}},
		{"floor", 16, stats{ok: 3000, events: 9000, elapsed: time.Second}},
	}
	var b bytes.Buffer
	printResults(&b, o, results)
	var lines []string // whitespace condensed
	for _, l := range strings.Split(b.String(), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	out := strings.Join(lines, "\n")
	for _, want := range []string{
		"server clients streams/s events/s ev/stream TTFE p50 TTFE p99 TTFE max errors\n",
		"\na2ad 16 1000 3000 3.00 1.00ms 4.00ms 9.00ms 0\n",
		"\nsdk 16 100 400 4.00 0.00ms 20.00ms 0.00ms 1\n",
		"\nfirst error of sdk at 16 clients: boom\n",
		"\nclients events/s a2ad/sdk target >= 5x events/s a2ad/sdk2 events/s a2ad/floor a2ad TTFE p99 target < 10.00ms at 16 clients\n",
		"\n16 7.50x met 1.50x 0.33x 4.00ms met\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// Missed targets; the TTFE target is for 16 clients only.
	o.servers, o.clients = []string{"a2ad", "sdk"}, []int{16, 64}
	results = []result{
		{"a2ad", 16, stats{ok: 100, events: 300, elapsed: time.Second, p99: 12 * time.Millisecond}},
		{"a2ad", 64, stats{ok: 100, events: 300, elapsed: time.Second, p99: 40 * time.Millisecond}},
		{"sdk", 16, stats{ok: 50, events: 200, elapsed: time.Second}},
	}
	b.Reset()
	printResults(&b, o, results)
	out = strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{" 16 1.50x missed - - 12.00ms missed ", " 64 - - - - 40.00ms -"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

func TestBaseURLFrom(t *testing.T) {
	line := `{"level":"info","listen":"127.0.0.1:4242","base_url":"http://127.0.0.1:4242","message":"a2ad serving"}`
	if got, ok := baseURLFrom("a2ad", []byte(line)); !ok || got != "http://127.0.0.1:4242" {
		t.Fatalf("a2ad serving line: %q %v", got, ok)
	}
	if _, ok := baseURLFrom("a2ad", []byte(`{"message":"task created"}`)); ok {
		t.Fatal("another a2ad line gave an address")
	}
	if got, ok := baseURLFrom("sdk", []byte("http://127.0.0.1:5000\n")); !ok || got != "http://127.0.0.1:5000" {
		t.Fatalf("sdk line: %q %v", got, ok)
	}
	for _, h := range []string{"127.0.0.1:80", "[::1]:80", "127.0.0.1"} {
		if !isLoopback(h) {
			t.Errorf("isLoopback(%q) = false", h)
		}
	}
	for _, h := range []string{"10.0.0.1:80", "example.com:80", "0.0.0.0:80"} {
		if isLoopback(h) {
			t.Errorf("isLoopback(%q) = true", h)
		}
	}
}

func TestServerCmd(t *testing.T) {
	cmd, fixed, admin, err := serverCmd("js", "/src", "/src/cmd/a2abench/jsserver/server.mjs", "", "info")
	if err != nil || fixed != "" || admin != "" || strings.Join(cmd.Args, " ") != "node /src/cmd/a2abench/jsserver/server.mjs -listen 127.0.0.1:0" {
		t.Fatalf("js: %q %q %v", cmd.Args, fixed, err)
	}
	cmd, fixed, _, err = serverCmd("sdk2", "/src", "/tmp/sdk2", "", "info")
	if err != nil || fixed != "" || strings.Join(cmd.Args, " ") != "/tmp/sdk2 -listen 127.0.0.1:0" {
		t.Fatalf("sdk2: %q %q %v", cmd.Args, fixed, err)
	}
	// a2ad-tmpfs is a2ad with another store.
	cmd, _, _, err = serverCmd("a2ad-tmpfs", "/src", "/tmp/a2ad", "/dev/shm/a2abench-1/a2ad-tmpfs.db", "info")
	if err != nil || !strings.HasPrefix(strings.Join(cmd.Args, " "),
		"/tmp/a2ad serve --catalog /src/examples/catalog.yaml --store /dev/shm/a2abench-1/a2ad-tmpfs.db --listen 127.0.0.1:0 ") {
		t.Fatalf("a2ad-tmpfs: %q %v", cmd.Args, err)
	}
	cmd, fixed, _, err = serverCmd("floor", "/src", "/tmp/floor", "", "info")
	if err != nil || fixed != "" || strings.Join(cmd.Args, " ") != "/tmp/floor -listen 127.0.0.1:0" {
		t.Fatalf("floor: %q %q %v", cmd.Args, fixed, err)
	}
	cmd, fixed, admin, err = serverCmd("a2ad", "/src", "/tmp/a2ad", "/tmp/a2ad.db", "info")
	if err != nil || fixed != "" || !strings.HasPrefix(strings.Join(cmd.Args, " "),
		"/tmp/a2ad serve --catalog /src/examples/catalog.yaml --store /tmp/a2ad.db --listen 127.0.0.1:0 --log-level info ") {
		t.Fatalf("a2ad: %q %q %v", cmd.Args, fixed, err)
	}
	// Its admin listener, for /metrics, on a free loopback port.
	if !isLoopback(admin) || !strings.Contains(strings.Join(cmd.Args, " "), " --admin-listen "+admin+" ") {
		t.Fatalf("a2ad's admin listener: %q in %q", admin, cmd.Args)
	}
	// Without the info line that reports the address, a2ad gets a free
	// port picked beforehand.
	cmd, fixed, _, err = serverCmd("a2ad", "/src", "/tmp/a2ad", "/tmp/a2ad.db", "warn")
	if err != nil || !isLoopback(fixed) || cmd.Args[7] != fixed {
		t.Fatalf("a2ad at warn: %q %q %v", cmd.Args, fixed, err)
	}
}
