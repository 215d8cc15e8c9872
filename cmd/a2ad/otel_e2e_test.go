package main

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP collector run in the test: it decodes the
// protobuf ExportTraceServiceRequest of each POST /v1/traces and keeps
// the spans, with their resource's service.name.
type otlpReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string // service.name of each export's resource
	errs    []string // what the receiver could not take
}

func startOTLPReceiver(tb testing.TB) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.export))
	tb.Cleanup(rc.srv.Close)
	return rc
}

func (rc *otlpReceiver) export(w http.ResponseWriter, r *http.Request) {
	fail := func(msg string) {
		rc.mu.Lock()
		rc.errs = append(rc.errs, msg)
		rc.mu.Unlock()
		http.Error(w, msg, http.StatusBadRequest)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		fail(fmt.Sprintf("%s %s as %q", r.Method, r.URL.Path, r.Header.Get("Content-Type")))
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			fail(err.Error())
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		fail(err.Error())
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		fail(err.Error())
		return
	}
	rc.mu.Lock()
	for _, rs := range req.ResourceSpans {
		rc.service = append(rc.service, attrString(rs.GetResource().GetAttributes(), "service.name"))
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attrString(attrs []*commonpb.KeyValue, key string) string {
	for _, kv := range attrs {
		if kv.Key == key {
			if s, ok := kv.Value.Value.(*commonpb.AnyValue_StringValue); ok {
				return s.StringValue
			}
			return kv.Value.String()
		}
	}
	return ""
}

// TestOTelTraces: a2ad run with --otel-endpoint pointing at an OTLP/HTTP
// receiver, called with a W3C traceparent, exports a server span that is
// the caller's span's child, with the store's commits, the queue wait and
// the backend call as its children; the backend gets the trace context
// of the backend call's span. No attribute holds the payload or the key.
// The spans arrive because a2ad flushes them at SIGTERM.
func TestOTelTraces(t *testing.T) {
	const (
		traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
		parentID = "00f067aa0ba902b7"
		state    = "vendor=opaque"
		payload  = "secret-payload-7f3a"
	)
	rc := startOTLPReceiver(t)
	var (
		mu        sync.Mutex
		backendTP string
		backendTS string
	)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		backendTP, backendTS = r.Header.Get("traceparent"), r.Header.Get("tracestate")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"price":42}`)
	}))
	defer backend.Close()
	catalog, store := crashSetup(t, fmt.Sprintf(`functions:
  - id: pricing::quote
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    http: {url: %q}
`, backend.URL))
	keys := filepath.Join(filepath.Dir(catalog), "keys.yaml")
	key := mustAppendKey(t, keys, "acme", "partner")
	p := startBinary(t, catalog, store, "--keys", keys, "--otel-endpoint", rc.srv.URL)

	h := http.Header{
		"Authorization": {"Bearer " + key},
		"Traceparent":   {"00-" + traceID + "-" + parentID + "-01"},
		"Tracestate":    {state},
	}
	_, body := postRaw(t, p.base, rpcBody("message/send", sendParams("m-1", "pricing::quote", map[string]any{"note": payload}, true)), h)
	if !strings.Contains(string(body), `"state":"completed"`) {
		t.Fatalf("send: %s", body)
	}
	taskID := between(string(body), `"id":"`, `"`)
	if err := p.terminate(t, 15*time.Second); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.logs)
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.errs) > 0 {
		t.Fatalf("receiver refused exports: %v", rc.errs)
	}
	for _, s := range rc.service {
		if s != "a2ad" {
			t.Errorf("service.name %q, want a2ad", s)
		}
	}
	server := findSpans(rc.spans, "message/send")
	if len(server) != 1 {
		t.Fatalf("%d message/send spans, want 1; spans: %s", len(server), spanNames(rc.spans))
	}
	srv := server[0]
	if got := hex.EncodeToString(srv.TraceId); got != traceID {
		t.Errorf("server span's trace id %s, want the caller's %s", got, traceID)
	}
	if got := hex.EncodeToString(srv.ParentSpanId); got != parentID {
		t.Errorf("server span's parent %s, want the caller's span %s", got, parentID)
	}
	if srv.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span kind %v", srv.Kind)
	}
	wantAttrs(t, srv, map[string]string{
		"a2a.method": "message/send", "a2a.transport": "jsonrpc", "a2a.caller": "acme",
		"a2a.task_id": taskID, "a2a.outcome": "ok", "a2a.reason": "completed", "a2a.function_id": "pricing::quote",
	})

	// The children: the task's creation and its result (store commits),
	// the slot, and the backend call.
	children := map[string][]*tracepb.Span{}
	for _, s := range rc.spans {
		if hex.EncodeToString(s.TraceId) != traceID {
			t.Errorf("span %s in trace %x, want %s", s.Name, s.TraceId, traceID)
		}
		if string(s.ParentSpanId) == string(srv.SpanId) {
			children[s.Name] = append(children[s.Name], s)
		}
	}
	commits := children["a2ad.store.commit"]
	var ops []string
	for _, c := range commits {
		ops = append(ops, attrString(c.Attributes, "a2ad.store.op"))
		wantAttrs(t, c, map[string]string{"a2a.task_id": taskID})
	}
	if strings.Join(ops, ",") != "create,update" {
		t.Errorf("store commits under the server span: %v, want create,update", ops)
	}
	if q := children["a2ad.queue.wait"]; len(q) != 1 {
		t.Errorf("%d queue wait spans under the server span, want 1", len(q))
	} else {
		wantAttrs(t, q[0], map[string]string{"a2a.function_id": "pricing::quote", "a2ad.queued": "false"})
	}
	calls := children["a2ad.backend.call"]
	if len(calls) != 1 {
		t.Fatalf("%d backend call spans under the server span, want 1; spans: %s", len(calls), spanNames(rc.spans))
	}
	call := calls[0]
	if call.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("backend call span kind %v", call.Kind)
	}
	wantAttrs(t, call, map[string]string{
		"a2a.task_id": taskID, "a2a.function_id": "pricing::quote", "a2ad.backend": "http", "a2ad.backend.outcome": "ok",
	})
	mu.Lock()
	defer mu.Unlock()
	if want := "00-" + traceID + "-" + hex.EncodeToString(call.SpanId) + "-01"; backendTP != want {
		t.Errorf("backend saw traceparent %q, want %q (the backend call's span)", backendTP, want)
	}
	if backendTS != state {
		t.Errorf("backend saw tracestate %q, want %q", backendTS, state)
	}

	// Nothing of the payload or the key in any attribute.
	for _, s := range rc.spans {
		for _, kv := range s.Attributes {
			if v := kv.Value.String(); strings.Contains(v, payload) || strings.Contains(v, key) {
				t.Errorf("span %s: attribute %s holds the payload or the key", s.Name, kv.Key)
			}
		}
	}
}

func findSpans(spans []*tracepb.Span, name string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func spanNames(spans []*tracepb.Span) string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// wantAttrs checks that span s has the attributes want, as strings.
func wantAttrs(tb testing.TB, s *tracepb.Span, want map[string]string) {
	tb.Helper()
	for k, v := range want {
		got := ""
		for _, kv := range s.Attributes {
			if kv.Key != k {
				continue
			}
			switch x := kv.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				got = x.StringValue
			case *commonpb.AnyValue_BoolValue:
				got = fmt.Sprint(x.BoolValue)
			case *commonpb.AnyValue_IntValue:
				got = fmt.Sprint(x.IntValue)
			}
		}
		if got != v {
			tb.Errorf("span %s: %s = %q, want %q", s.Name, k, got, v)
		}
	}
}

// between is the text of s after the first prefix, up to end.
func between(s, prefix, end string) string {
	_, rest, ok := strings.Cut(s, prefix)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, end)
	return v
}

// TestOTelTracesFromTheEnvironment: without --otel-endpoint, the standard
// OTEL_EXPORTER_OTLP_ENDPOINT turns traces on, and OTEL_SERVICE_NAME
// names the service; an HTTP+JSON call is traced as over JSON-RPC.
func TestOTelTracesFromTheEnvironment(t *testing.T) {
	rc := startOTLPReceiver(t)
	catalog, store := crashSetup(t, "functions: []\n")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "a2ad-edge")
	p := startBinary(t, catalog, store)
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	resp, body := postURL(t, nil, p.base+"/a2a/rest/message:send",
		[]byte(`{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello"}]}}`), h)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("message:send = %d %s", resp.StatusCode, body)
	}
	if err := p.terminate(t, 15*time.Second); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.logs)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	spans := findSpans(rc.spans, "SendMessage")
	if len(spans) != 1 || len(rc.errs) > 0 {
		t.Fatalf("%d SendMessage spans (receiver errors %v); spans: %s", len(spans), rc.errs, spanNames(rc.spans))
	}
	wantAttrs(t, spans[0], map[string]string{"a2a.transport": "rest", "a2a.method": "SendMessage", "a2a.outcome": "ok", "a2a.reason": "input_required"})
	if got := hex.EncodeToString(spans[0].ParentSpanId); got != "00f067aa0ba902b7" {
		t.Errorf("parent %s, want the caller's span", got)
	}
	for _, s := range rc.service {
		if s != "a2ad-edge" {
			t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", s)
		}
	}
}
