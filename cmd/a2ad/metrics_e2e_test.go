package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
)

// scrape is one parsed GET /metrics, with its raw text.
type scrape struct {
	raw  string
	fams map[string]*dto.MetricFamily
}

// scrapeMetrics GETs /metrics from the admin listener and parses it.
func scrapeMetrics(tb testing.TB, m *Main) scrape {
	tb.Helper()
	return scrapeAdmin(tb, "http://"+m.AdminAddr())
}

// scrapeAdmin GETs /metrics from the admin listener at the base URL admin
// (a binary's, say) and parses it.
func scrapeAdmin(tb testing.TB, admin string) scrape {
	tb.Helper()
	resp, raw := httpGet(tb, admin+"/metrics")
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET /metrics: HTTP %d: %s", resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		tb.Errorf("GET /metrics: Content-Type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		tb.Fatalf("GET /metrics: not the text format: %v\n%s", err, raw)
	}
	return scrape{raw: string(raw), fams: fams}
}

// has reports whether the scrape has the metric family name.
func (s scrape) has(name string) bool { _, ok := s.fams[name]; return ok }

// value is the value of the series of name with exactly labels (name=value
// pairs): a counter's or gauge's value, a histogram's sample count. A
// series that is not there is 0.
func (s scrape) value(name string, labels ...string) float64 {
	f, ok := s.fams[name]
	if !ok {
		return 0
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(want) {
			continue
		}
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// sum is the sum of a histogram series' samples.
func (s scrape) sum(name string) float64 {
	if f, ok := s.fams[name]; ok && len(f.Metric) == 1 && f.Metric[0].Histogram != nil {
		return f.Metric[0].Histogram.GetSampleSum()
	}
	return 0
}

// labelValues returns every label value in the scrape.
func (s scrape) labelValues() []string {
	var out []string
	for _, f := range s.fams {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				out = append(out, l.GetValue())
			}
		}
	}
	sort.Strings(out)
	return out
}

// metricsCatalog has echo, and sleep with one slot so that a second call
// queues.
const metricsCatalog = `functions:
  - id: demo::echo
    metadata: {"a2a.expose": true}
    retry_safe: true
    builtin: echo
  - id: demo::sleep
    metadata: {"a2a.expose": true}
    max_concurrency: 1
    timeout: 60s
    builtin: sleep
`

// openMetricsMain runs the real server on store; the caller closes it.
func openMetricsMain(tb testing.TB, catalog, store string) *Main {
	tb.Helper()
	cfg := testConfig(store)
	cfg.Catalog = catalog
	cfg.PushAllow = pushAllowLoopback
	// Every anonymous address gets 50 requests, refilled at one every
	// 1000 s: none within the test.
	cfg.RatePerSecond = 0.001
	cfg.RateBurst = 50
	return openMain(tb, &Main{Config: cfg, Logger: zerolog.Nop()})
}

// fromAddr is a client whose requests come from the loopback address ip,
// so that they have a rate bucket of their own (Linux routes all of
// 127.0.0.0/8 to the loopback interface).
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 10 * time.Second}
}

// TestMetricsUnderLoad runs a real workload through the real server and
// checks, by scraping the admin listener before and after, that each
// metric is there and moved by what the workload did; and that no label
// holds a task id or a string a caller sent.
func TestMetricsUnderLoad(t *testing.T) {
	dir := t.TempDir()
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, metricsCatalog)
	store := filepath.Join(dir, "a2ad.db")
	m := openMetricsMain(t, catalog, store)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = m.Close()
		}
	})
	base := "http://" + m.Addr()
	evil := rand.Text()

	before := scrapeMetrics(t, m)
	for _, name := range []string{
		"a2ad_build_info", "a2ad_tasks", "a2ad_task_transitions_total", "a2ad_store_commit_duration_seconds",
		"a2ad_store_writes_per_commit", "a2ad_idempotent_replays_total", "a2ad_stream_subscribers",
		"a2ad_stream_replayed_events_total", "a2ad_stream_slow_subscribers_dropped_total",
		"a2ad_push_attempts_total", "a2ad_push_attempt_duration_seconds", "a2ad_push_dead_lettered_total",
		"a2ad_push_outbox_depth", "a2ad_push_dead_letters", "a2ad_rate_limit_rejections_total",
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if !before.has(name) {
			t.Errorf("a fresh server's scrape has no %s", name)
		}
	}
	if v := before.value("a2ad_build_info", "version", Version()); v != 1 {
		t.Errorf("a2ad_build_info{version=%q} = %v, want 1", Version(), v)
	}

	var taskIDs []string
	sendP := func(params map[string]any) map[string]any {
		t.Helper()
		task := resultTask(t, rpc(t, base, "message/send", params))
		taskIDs = append(taskIDs, task["id"].(string))
		return task
	}
	send := func(msgID, skill string, input any, blocking bool) map[string]any {
		t.Helper()
		return sendP(sendParams(msgID, skill, input, blocking))
	}

	// Five echo calls, then one of them again: a replay, nothing runs.
	for i := range 5 {
		if task := send(fmt.Sprintf("echo-%d", i), "demo::echo", map[string]any{"message": "hi"}, true); state(task) != "completed" {
			t.Fatalf("echo %d: %s", i, state(task))
		}
	}
	if again := send("echo-2", "demo::echo", map[string]any{"message": "hi"}, true); again["id"] != taskIDs[2] {
		t.Fatalf("duplicate messageId: task %v, want %s", again["id"], taskIDs[2])
	}
	// A message naming no skill waits for input; one naming a function
	// that does not exist is rejected.
	if task := sendP(map[string]any{"message": map[string]any{"kind": "message", "messageId": "no-skill", "role": "user",
		"parts": []any{map[string]any{"kind": "text", "text": "hello"}}}}); state(task) != "input-required" {
		t.Fatalf("no skill: %s", state(task))
	}
	if task := send("unknown-fn", "x-"+evil+"::fn", map[string]any{}, true); state(task) != "rejected" {
		t.Fatalf("unknown function: %s", state(task))
	}
	// A method a caller made up.
	if code, _ := rpcError(t, rpc(t, base, "x-evil-"+evil, map[string]any{})); code != -32601 {
		t.Fatalf("made-up method: code %d", code)
	}

	// One sleep runs, a second waits for its slot.
	running := send("sleep-1", "demo::sleep", map[string]any{"seconds": 30}, false)
	queued := send("sleep-2", "demo::sleep", map[string]any{"seconds": 30}, false)
	var mid scrape
	eventually(t, 5*time.Second, "one sleep running, one queued", func() bool {
		mid = scrapeMetrics(t, m)
		return mid.value("a2ad_calls_running", "function", "demo::sleep") == 1 &&
			mid.value("a2ad_calls_queued", "function", "demo::sleep") == 1
	})
	for st, want := range map[string]float64{"working": 1, "submitted": 1, "input-required": 1, "auth-required": 0} {
		if got := mid.value("a2ad_tasks", "state", st); got != want {
			t.Errorf("mid-run a2ad_tasks{state=%q} = %v, want %v", st, got, want)
		}
	}
	// A stream watches the running task meanwhile.
	watch := openStream(t, nil, base, 1, "tasks/resubscribe", map[string]any{"id": running["id"]}, nil)
	if _, ok := watch.next(t, 5*time.Second); !ok {
		t.Fatal("resubscribe: no first event")
	}
	eventually(t, 5*time.Second, "one stream subscriber", func() bool {
		return scrapeMetrics(t, m).value("a2ad_stream_subscribers") == 1
	})
	for _, task := range []map[string]any{queued, running} {
		if got := resultTask(t, rpc(t, base, "tasks/cancel", map[string]any{"id": task["id"]})); state(got) != "canceled" {
			t.Fatalf("cancel: %s", state(got))
		}
	}
	checkFinal(t, watch.rest(t), "canceled")

	// A streamed echo, then its events again from the store.
	live := openStream(t, nil, base, 2, "message/stream", sendParams("stream-1", "demo::echo", map[string]any{"message": "s"}, true), nil).rest(t)
	checkFinal(t, live, "completed")
	streamed := result(t, live[0]).ID
	taskIDs = append(taskIDs, streamed)
	replay := openStream(t, nil, base, 3, "tasks/resubscribe", map[string]any{"id": streamed}, lastEventID(0)).rest(t)
	checkFinal(t, replay, "completed")

	// Two webhooks: one takes the notification, one refuses it for good.
	hook := newHookReceiver(t, nil)
	refusing := newHookReceiver(t, func(int) int { return http.StatusBadRequest })
	for i, url := range []string{hook.URL, refusing.URL} {
		task := resultTask(t, rpc(t, base, "message/send", pushSendParams(fmt.Sprintf("push-%d", i), "demo::echo",
			map[string]any{"message": "p"}, true, map[string]any{"url": url})))
		taskIDs = append(taskIDs, task["id"].(string))
	}
	eventually(t, 10*time.Second, "both webhooks called", func() bool {
		return len(hook.delivered()) == 1 && len(refusing.requests()) == 1
	})

	// A caller from another address spends its 50 requests, then is
	// refused twice.
	other := fromAddr("127.0.0.2")
	refused := 0
	for range 52 {
		resp, err := other.Post(base+"/a2a", "application/json",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"nope"}}`))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("127.0.0.2 was refused %d times of 52, want 2", refused)
	}

	// Every call is counted once its audit record is written, which
	// follows its answer: wait for the last ones.
	const calls = 5 + 1 + // echoes and the replay
		3 + // no skill, an unknown function, a made-up method
		2 + 1 + 2 + // sleeps, the stream watching one, the cancels
		2 + 2 + // the streamed echo and its replay, the pushes
		52 // from 127.0.0.2
	var after scrape
	eventually(t, 5*time.Second, "every call counted", func() bool {
		after = scrapeMetrics(t, m)
		total := 0.0
		for _, f := range after.fams["a2ad_requests_total"].GetMetric() {
			total += f.Counter.GetValue()
		}
		return total-sumFamily(before, "a2ad_requests_total") == calls &&
			after.value("a2ad_push_dead_letters") == 1 && after.value("a2ad_calls_running", "function", "demo::sleep") == 0 &&
			after.value("a2ad_stream_subscribers") == 0
	})

	delta := func(name string, labels ...string) float64 {
		return after.value(name, labels...) - before.value(name, labels...)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		// 5 echoes, the replay, 2 pushes.
		{"a2ad_requests_total", []string{"transport", "jsonrpc", "method", "message/send", "outcome", "ok", "reason", "completed"}, 8},
		{"a2ad_requests_total", []string{"transport", "jsonrpc", "method", "message/send", "outcome", "ok", "reason", "input_required"}, 1},
		{"a2ad_requests_total", []string{"transport", "jsonrpc", "method", "message/send", "outcome", "ok", "reason", "accepted"}, 2},
		{"a2ad_requests_total", []string{"transport", "jsonrpc", "method", "message/send", "outcome", "policy_denied", "reason", "denied_unknown"}, 1},
		{"a2ad_requests_total", []string{"transport", "jsonrpc", "method", "other", "outcome", "client_error", "reason", "invalid_request"}, 1},
		{"a2ad_requests_total", []string{"transport", "jsonrpc", "method", "tasks/cancel", "outcome", "ok", "reason", "canceled"}, 2},
		{"a2ad_requests_total", []string{"transport", "jsonrpc", "method", "message/stream", "outcome", "ok", "reason", "completed"}, 1},
		{"a2ad_requests_total", []string{"transport", "jsonrpc", "method", "tasks/resubscribe", "outcome", "ok", "reason", "canceled"}, 1},
		{"a2ad_requests_total", []string{"transport", "jsonrpc", "method", "tasks/resubscribe", "outcome", "ok", "reason", "completed"}, 1},
		{"a2ad_requests_total", []string{"transport", "jsonrpc", "method", "tasks/get", "outcome", "client_error", "reason", "not_found"}, 50},
		// Refused before the body is read, so before the method is known.
		{"a2ad_requests_total", []string{"transport", "jsonrpc", "method", "other", "outcome", "transport_denied", "reason", "rate_limited"}, 2},
		{"a2ad_request_duration_seconds", []string{"transport", "jsonrpc", "method", "message/send", "outcome", "ok"}, 11},
		{"a2ad_request_duration_seconds", []string{"transport", "jsonrpc", "method", "tasks/get", "outcome", "client_error"}, 50},
		{"a2ad_rate_limit_rejections_total", []string{"limit", "rate"}, 2},
		{"a2ad_rate_limit_rejections_total", []string{"limit", "caller_in_flight"}, 0},
		{"a2ad_idempotent_replays_total", nil, 1},
		// 8 echoes (5, the stream, 2 pushes) complete; the rest as sent.
		{"a2ad_task_transitions_total", []string{"state", "completed"}, 8},
		{"a2ad_task_transitions_total", []string{"state", "canceled"}, 2},
		{"a2ad_task_transitions_total", []string{"state", "rejected"}, 1},
		{"a2ad_task_transitions_total", []string{"state", "input-required"}, 1},
		// Every task created is born submitted: the 8, the 2 canceled, the
		// rejected and the one waiting for input.
		{"a2ad_task_transitions_total", []string{"state", "submitted"}, 12},
		{"a2ad_tasks", []string{"state", "input-required"}, 1},
		{"a2ad_tasks", []string{"state", "working"}, 0},
		{"a2ad_tasks", []string{"state", "submitted"}, 0},
		{"a2ad_calls_running", []string{"function", "demo::echo"}, 0},
		{"a2ad_calls_queued", []string{"function", "demo::sleep"}, 0},
		{"a2ad_stream_subscribers", nil, 0},
		{"a2ad_stream_slow_subscribers_dropped_total", nil, 0},
		{"a2ad_push_attempts_total", []string{"outcome", "delivered"}, 1},
		{"a2ad_push_attempts_total", []string{"outcome", "permanent_error"}, 1},
		{"a2ad_push_attempts_total", []string{"outcome", "transient_error"}, 0},
		{"a2ad_push_attempt_duration_seconds", nil, 2},
		{"a2ad_push_dead_lettered_total", nil, 1},
		{"a2ad_push_dead_letters", nil, 1},
		{"a2ad_push_outbox_depth", nil, 0},
	} {
		if got := delta(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v moved by %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The running sleep was stored working; an echo slower than the
	// speculation window is too.
	if got := delta("a2ad_task_transitions_total", "state", "working"); got < 1 || got > 9 {
		t.Errorf("a2ad_task_transitions_total{state=working} moved by %v, want 1 to 9", got)
	}
	// The replay sent the stored events of the streamed task: all of them.
	if got, want := delta("a2ad_stream_replayed_events_total"), float64(len(replay)); got != want {
		t.Errorf("a2ad_stream_replayed_events_total moved by %v, want %v (the resubscribe's events)", got, want)
	}
	// Every write was committed, several to a commit at times; the store
	// timed each commit.
	commits := delta("a2ad_store_commit_duration_seconds")
	writes := after.sum("a2ad_store_writes_per_commit") - before.sum("a2ad_store_writes_per_commit")
	if commits < 10 || delta("a2ad_store_writes_per_commit") != commits || writes < commits {
		t.Errorf("store: %v commits timed, %v counted, %v writes; want at least 10, as many, and no fewer writes",
			commits, delta("a2ad_store_writes_per_commit"), writes)
	}
	if s := after.sum("a2ad_store_commit_duration_seconds"); s <= 0 {
		t.Errorf("store commits took %v s in all", s)
	}

	// No label holds a task id or anything a caller made up.
	for _, v := range after.labelValues() {
		if strings.Contains(v, evil) || strings.HasPrefix(v, "x-") {
			t.Errorf("label value %q comes from a request", v)
		}
	}
	for _, id := range taskIDs {
		if strings.Contains(after.raw, id) {
			t.Errorf("the scrape holds task id %s", id)
		}
	}
	if strings.Contains(after.raw, evil) || strings.Contains(after.raw, "127.0.0.") {
		t.Errorf("the scrape holds a caller's string or address")
	}

	// After a restart, the tasks by state are read back from the store.
	closed = true
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := openMetricsMain(t, catalog, store)
	defer m2.Close()
	again := scrapeMetrics(t, m2)
	if got := again.value("a2ad_tasks", "state", "input-required"); got != 1 {
		t.Errorf("after a restart a2ad_tasks{state=input-required} = %v, want 1", got)
	}
	if got := again.value("a2ad_push_dead_letters"); got != 1 {
		t.Errorf("after a restart a2ad_push_dead_letters = %v, want 1", got)
	}
}

func sumFamily(s scrape, name string) float64 {
	total := 0.0
	for _, m := range s.fams[name].GetMetric() {
		total += m.Counter.GetValue()
	}
	return total
}

// TestMetricsAnswerAnyAddress: /metrics, like the probes, answers callers
// beyond loopback; the other admin routes still refuse them. The request
// is served in process, with a remote address from the documentation
// range: no traffic leaves loopback.
func TestMetricsAnswerAnyAddress(t *testing.T) {
	m := startMain(t, nil)
	h := m.admin.Handler // the admin listener's, as wired
	for path, want := range map[string]int{
		"/metrics":                 http.StatusOK,
		"/healthz":                 http.StatusOK,
		"/admin/push/dead-letters": http.StatusForbidden,
	} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = "203.0.113.7:40000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("GET %s from 203.0.113.7: HTTP %d %s, want %d", path, rec.Code, rec.Body, want)
		}
	}
}
