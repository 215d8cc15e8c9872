package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2ad/a2ad/internal/testkit"
)

// limitRefusal is a limit's refusal as every binding answers it (429 or
// RESOURCE_EXHAUSTED, the same message, scope and ErrorInfo reason), and
// the audit's reason and the metric's label for it.
type limitRefusal struct {
	reason  string // the audit record's
	code    int    // the JSON-RPC error's
	message string
	scope   string // data.scope, and ErrorInfo's metadata
	info    string // ErrorInfo's reason (REST, gRPC)
	limit   string // a2ad_rate_limit_rejections_total's label
}

// The refusals of a caller's own limits, pinned word for word.
var (
	rateRefusal = limitRefusal{"rate_limited", -32052,
		"Rate limit exceeded; retry after data.retryAfterMs milliseconds", "caller", "RATE_LIMITED", "rate"}
	inFlightRefusal = limitRefusal{"over_capacity", -32053,
		"Too many requests in flight for this caller; retry after data.retryAfterMs milliseconds", "caller", "TOO_MANY_IN_FLIGHT", "caller_in_flight"}
	bytesRefusal = limitRefusal{"bytes_rate_limited", -32052,
		"Request bytes rate exceeded; retry after data.retryAfterMs milliseconds", "bytes", "RATE_LIMITED", "bytes"}
)

// The bindings floodRefusals sends over, in its order.
var floodBindings = [3]string{"jsonrpc", "rest", "grpc"}

// floodRefusals sends n[i] gets of task x as the caller of key over each
// of floodBindings in turn. Each answer is want, every field checked
// (retryAfterMs only for being a number), or the task's absence; it
// returns the refusals of each binding and how long the flood took.
func floodRefusals(t *testing.T, p *process, key string, n [3]int, want limitRefusal) (refused [3]int, took time.Duration) {
	t.Helper()
	q := regexp.QuoteMeta
	rpcWant := regexp.MustCompile(`^` + q(fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":%q,"data":{"retryAfterMs":`, want.code, want.message)) +
		`[1-9][0-9]*` + q(fmt.Sprintf(`,"scope":%q}}}`, want.scope)) + `$`)
	restWant := regexp.MustCompile(`^` + q(fmt.Sprintf(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":%q,"details":[`+
		`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":%q,"domain":"github.com/a2ad/a2ad","metadata":{"retryAfterMs":"`, want.message, want.info)) +
		`[1-9][0-9]*` + q(fmt.Sprintf(`","scope":%q}}]}}`, want.scope)) + `$`)
	h := http.Header{"Authorization": {"Bearer " + key}}
	start := time.Now()
	for range n[0] {
		resp, body := postRaw(t, p.base, rpcBody("tasks/get", map[string]any{"id": "x"}), h)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests && rpcWant.Match(body) && resp.Header.Get("Retry-After") != "":
			refused[0]++
		case resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"code":-32001`):
			t.Fatalf("JSON-RPC tasks/get: HTTP %d Retry-After %q %s\nwant 429 with %s, or -32001", resp.StatusCode, resp.Header.Get("Retry-After"), body, rpcWant)
		}
	}
	for range n[1] {
		req, _ := http.NewRequest(http.MethodGet, p.base+"/a2a/rest/tasks/x", nil)
		req.Header = h.Clone()
		resp, body := testkit.RoundTrip(t, nil, req)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests && restWant.Match(body) && resp.Header.Get("Retry-After") != "":
			refused[1]++
		case resp.StatusCode != http.StatusNotFound:
			t.Fatalf("HTTP+JSON GET /tasks/x: HTTP %d Retry-After %q %s\nwant 429 with %s, or 404", resp.StatusCode, resp.Header.Get("Retry-After"), body, restWant)
		}
	}
	cl := dialGRPC(t, grpcListenOf(t, p))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
	for range n[2] {
		_, err := cl.GetTask(ctx, &a2apb.GetTaskRequest{Id: "x"})
		switch st := status.Convert(err); st.Code() {
		case codes.ResourceExhausted:
			checkGRPCRefusal(t, st, want)
			refused[2]++
		case codes.NotFound:
		default:
			t.Fatalf("gRPC GetTask: %v, want RESOURCE_EXHAUSTED %q or NOT_FOUND", err, want.message)
		}
	}
	return refused, time.Since(start)
}

// checkGRPCRefusal checks a gRPC refusal's message and ErrorInfo.
func checkGRPCRefusal(t *testing.T, st *status.Status, want limitRefusal) {
	t.Helper()
	details := st.Details()
	var info *errdetails.ErrorInfo
	if len(details) > 0 {
		info, _ = details[0].(*errdetails.ErrorInfo)
	}
	if st.Message() != want.message || info == nil || info.Reason != want.info || info.Domain != "github.com/a2ad/a2ad" ||
		info.Metadata["scope"] != want.scope || info.Metadata["retryAfterMs"] == "" {
		t.Fatalf("gRPC GetTask refused with %q %v\nwant %q and ErrorInfo %s scope %s", st.Message(), details, want.message, want.info, want.scope)
	}
}

// TestRefusalsAuditedInSummary runs the floods of issue 25 item 3, one
// limit each, against binaries of their own, side by side: each waits
// out the summary window (10 s), which they then share.
func TestRefusalsAuditedInSummary(t *testing.T) {
	skipShort(t, "runs the real binary")
	for name, f := range map[string]func(*testing.T){
		"rate":          testRateRefusalsAuditedInSummary,
		"over capacity": testOverCapacityRefusalsAuditedInSummary,
		"bytes":         testBytesRefusalsAuditedInSummary,
		"call cap":      testCallCapRefusalsAuditedInSummary,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t)
		})
	}
}

// testRateRefusalsAuditedInSummary is issue 25 item 3's flood on the real
// binary: a key with a tiny rate limit sends 2,000 requests over
// JSON-RPC, HTTP+JSON and gRPC, of which all but the first are refused.
// Before, each refusal wrote a full audit record (26k a second wrote 103
// MiB in 10 s); now the caller's refusals make one record per window
// (10 s), the first refusal's, "refused" counting what it stands for, and
// the first refusal after the window writes the rest: the records' counts
// add up to the refusals sent, as the metrics do. Each refusal is
// checked word for word (floodRefusals), as the in-flight and bytes
// floods below are.
func testRateRefusalsAuditedInSummary(t *testing.T) {
	dir := t.TempDir()
	keys, auditLog := filepath.Join(dir, "keys.yaml"), filepath.Join(dir, "audit.log")
	key := mustAppendKey(t, keys, "flood", "partner")
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--audit-log", auditLog,
		"--rate", "0.001", "--rate-burst", "1", "--grpc-listen", "127.0.0.1:0")
	refused, took := floodRefusals(t, p, key, [3]int{700, 700, 600}, rateRefusal)
	if refused != [3]int{699, 700, 600} {
		t.Fatalf("%v of 2,000 requests refused (JSON-RPC, HTTP+JSON, gRPC), want all but the burst of 1", refused)
	}
	checkRefusalSummaries(t, p, auditLog, "flood", key, rateRefusal, refused, took)
}

// testOverCapacityRefusalsAuditedInSummary is issue 25 item 3 for a
// caller over its in-flight cap, on the real binary: with
// --max-inflight-per-caller 1 and a stream holding its one place, 900
// gets over JSON-RPC, HTTP+JSON and gRPC are each refused (-32053, scope
// caller) and audited in summary, one record per window whose counts add
// up to the refusals, as the metrics do.
func testOverCapacityRefusalsAuditedInSummary(t *testing.T) {
	dir := t.TempDir()
	keys, auditLog := filepath.Join(dir, "keys.yaml"), filepath.Join(dir, "audit.log")
	key := mustAppendKey(t, keys, "crowd", "partner")
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--audit-log", auditLog,
		"--rate", "0", "--max-inflight-per-caller", "1", "--grpc-listen", "127.0.0.1:0")
	// The caller's one place: a stream of a task that sleeps on past the
	// flood and the window.
	s := openStream(t, nil, p.base, 1, "message/stream", sendParams("hold", "demo::sleep", map[string]any{"seconds": 60}, false),
		http.Header{"Authorization": {"Bearer " + key}})
	if _, ok := s.next(t, 5*time.Second); !ok {
		t.Fatalf("the stream that holds the caller's place sent nothing: %v", s.err)
	}
	refused, took := floodRefusals(t, p, key, [3]int{300, 300, 300}, inFlightRefusal)
	if refused != [3]int{300, 300, 300} {
		t.Fatalf("%v of 300 requests over each binding refused (JSON-RPC, HTTP+JSON, gRPC), want all", refused)
	}
	checkRefusalSummaries(t, p, auditLog, "crowd", key, inFlightRefusal, refused, took)
}

// testBytesRefusalsAuditedInSummary is issue 25 item 3 for a caller over
// its budget of request bytes, on the real binary: at --rate-bytes 1 two
// bodies of 4,000 bytes (of a budget of 4,096) put the caller 3,904 bytes in debt (an hour at a
// byte a second), and the 900 gets over JSON-RPC, HTTP+JSON and gRPC that
// follow are each refused (-32052, scope bytes) and audited in summary,
// one record per window whose counts add up to the refusals, as the
// metrics do.
func testBytesRefusalsAuditedInSummary(t *testing.T) {
	dir := t.TempDir()
	keys, auditLog := filepath.Join(dir, "keys.yaml"), filepath.Join(dir, "audit.log")
	key := mustAppendKey(t, keys, "heavy", "partner")
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--audit-log", auditLog,
		"--rate", "0", "--rate-bytes", "1", "--rate-bytes-burst", "4096", "--max-body-bytes", "4096", "--grpc-listen", "127.0.0.1:0")
	h := http.Header{"Authorization": {"Bearer " + key}}
	// Cancels, not gets: a read is also refused once its answer finds
	// the budget in debt, which the second would.
	cancel := rpcBody("tasks/cancel", map[string]any{"id": "x"})
	big := append(cancel, strings.Repeat(" ", 4000-len(cancel))...)
	for i := range 2 { // within the budget, then into debt
		if resp, body := postRaw(t, p.base, big, h); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"code":-32001`) {
			t.Fatalf("body %d of 4,000 bytes: HTTP %d %s, want -32001", i, resp.StatusCode, body)
		}
	}
	refused, took := floodRefusals(t, p, key, [3]int{300, 300, 300}, bytesRefusal)
	if refused != [3]int{300, 300, 300} {
		t.Fatalf("%v of 300 requests over each binding refused (JSON-RPC, HTTP+JSON, gRPC), want all", refused)
	}
	checkRefusalSummaries(t, p, auditLog, "heavy", key, bytesRefusal, refused, took)
}

// checkRefusalSummaries checks the audit of the refusals of caller (of
// key) a flood of took got, refused over each of floodBindings: one
// record per window (10 s), the first refusal's (over JSON-RPC, "refused"
// 1); after the window one more refusal writes a record for the rest,
// and the records' counts add up to every refusal, as
// a2ad_rate_limit_rejections_total and each binding's a2ad_requests_total
// do.
func checkRefusalSummaries(t *testing.T, p *process, auditLog, caller, key string, want limitRefusal, refused [3]int, took time.Duration) {
	t.Helper()
	summaries := func() (recs []map[string]any, sum int) {
		for _, r := range auditFile(t, auditLog) {
			if r["caller"] == caller && r["reason"] == want.reason {
				recs = append(recs, r)
				n, _ := r["refused"].(float64)
				sum += int(n)
			}
		}
		return recs, sum
	}
	recs, _ := waitRecords(t, summaries, 1)
	// The flood took under a window or a little more: one record, or
	// one per window it spanned.
	if max := 1 + int(took/(10*time.Second)); len(recs) > max {
		t.Errorf("%d %s records for a flood of %v, want at most %d", len(recs), want.reason, took, max)
	}
	first := recs[0]
	for k, v := range map[string]any{"outcome": "transport_denied", "code": float64(want.code), "anonymous": false,
		"refused": float64(1), "transport": "jsonrpc", "client_addr": "127.0.0.1"} {
		if first[k] != v {
			t.Errorf("the first summary's %s = %v, want %v: %v", k, first[k], v, first)
		}
	}
	if first["key_id"] == "" || first["key_id"] == nil {
		t.Errorf("the summary names no key: %v", first)
	}

	// After the window, one more refusal writes a record for the rest.
	time.Sleep(10*time.Second + 200*time.Millisecond)
	resp, body := postRaw(t, p.base, rpcBody("tasks/get", map[string]any{"id": "x"}), http.Header{"Authorization": {"Bearer " + key}})
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), fmt.Sprintf(`"code":%d`, want.code)) {
		t.Fatalf("the request after the window: HTTP %d %s, want 429 with %d", resp.StatusCode, body, want.code)
	}
	refused[0]++
	total := refused[0] + refused[1] + refused[2]
	recs, sum := waitRecords(t, summaries, len(recs)+1)
	if sum != total {
		t.Errorf("%d records stand for %d refusals, want %d", len(recs), sum, total)
	}
	m := scrapeAdmin(t, p.admin)
	if got := m.value("a2ad_rate_limit_rejections_total", "limit", want.limit); got != float64(total) {
		t.Errorf("the metric counts %v refusals, want each of the %d", got, total)
	}
	// Refused before its body is read, a JSON-RPC call names no method.
	for i, method := range [3]string{"other", "GetTask", "GetTask"} {
		got := m.value("a2ad_requests_total", "transport", floodBindings[i], "method", method, "outcome", "transport_denied", "reason", want.reason)
		if got != float64(refused[i]) {
			t.Errorf("a2ad_requests_total of %s %s refusals = %v, want %d", floodBindings[i], method, got, refused[i])
		}
	}
}

// waitRecords polls the audit until summaries gives at least n records
// (the log is written as calls end, not before their answers).
func waitRecords(t *testing.T, summaries func() ([]map[string]any, int), n int) ([]map[string]any, int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, sum := summaries()
		if len(recs) >= n || time.Now().After(deadline) {
			if len(recs) < n {
				t.Fatalf("%d summary records, want at least %d", len(recs), n)
			}
			return recs, sum
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// grpcRaw sends its []byte as the message, unchecked: a client of
// garbage and of messages over the size cap.
type grpcRaw struct{}

func (grpcRaw) Marshal(v any) ([]byte, error)   { return *(v.(*[]byte)), nil }
func (grpcRaw) Unmarshal(b []byte, v any) error { *(v.(*[]byte)) = b; return nil }
func (grpcRaw) Name() string                    { return "proto" }

// TestGRPCOwnRefusalsOnTheBinary is issue 25's "refusals grpc-go makes
// before a2ad sees the call" on the real binary: an unknown method, a
// message that is not protobuf and one over --max-body-bytes are each
// answered with grpc-go's code, audited with a2ad's (one record per
// caller and reason and window, as every binding's refusals), and counted
// in a2ad_requests_total.
func TestGRPCOwnRefusalsOnTheBinary(t *testing.T) {
	skipShort(t, "runs the real binary")
	dir := t.TempDir()
	auditLog := filepath.Join(dir, "audit.log")
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--audit-log", auditLog,
		"--grpc-listen", "127.0.0.1:0", "--max-body-bytes", "4096")
	conn, err := grpc.NewClient(grpcListenOf(t, p), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	out := []byte{}
	invoke := func(method string, in []byte) error {
		return conn.Invoke(ctx, method, &in, &out, grpc.ForceCodec(grpcRaw{}))
	}
	for _, c := range []struct {
		what, method string
		in           []byte
		want         codes.Code
	}{
		{"an unknown method", "/lf.a2a.v1.A2AService/NoSuchMethod", nil, codes.Unimplemented},
		{"a message that is not protobuf", "/lf.a2a.v1.A2AService/GetTask", []byte{0xff, 0xff, 0xff, 0xff}, codes.Internal},
		{"a message over --max-body-bytes", "/lf.a2a.v1.A2AService/GetTask", make([]byte, 8192), codes.ResourceExhausted},
	} {
		for range 50 { // a flood of each: summarised, not a record each
			if err := invoke(c.method, c.in); status.Code(err) != c.want {
				t.Fatalf("%s: %v, want %v", c.what, err, c.want)
			}
		}
	}
	// The binary still serves a real call on the same connection.
	realCall(t, a2apb.NewA2AServiceClient(conn), "after-refusals")

	want := map[string]string{ // rpc_method → the record's code and reason
		"/lf.a2a.v1.A2AService/NoSuchMethod": "-32601 invalid_request",
		"GetTask":                            "-32700 invalid_request",
	}
	var recs []map[string]any
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs = recs[:0]
		for _, r := range auditFile(t, auditLog) {
			if r["outcome"] == "client_error" {
				recs = append(recs, r)
			}
		}
		if len(recs) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("audit: %v", recs)
	for _, r := range recs {
		m, _ := r["rpc_method"].(string)
		code, _ := r["code"].(float64)
		if w, ok := want[m]; !ok || fmt.Sprintf("%d %v", int(code), r["reason"]) != w {
			t.Errorf("audit record %v; want one of %v", r, want)
		}
	}
	if len(recs) == 0 || len(recs) > 3 {
		t.Errorf("%d client_error records for 150 refusals, want one to three (one per reason and window)", len(recs))
	}
	m := scrapeAdmin(t, p.admin)
	for method, want := range map[string]float64{"GetTask": 100, "other": 50} {
		got := m.value("a2ad_requests_total", "transport", "grpc", "method", method, "outcome", "client_error", "reason", "invalid_request")
		if got != want {
			t.Errorf("a2ad_requests_total of gRPC %s refusals = %v, want %v", method, got, want)
		}
	}
}

// testCallCapRefusalsAuditedInSummary is issue 25 item 3 for the
// refusals the service makes for a limit, on the real binary: a caller
// at its --max-calls-per-caller (1, held by a call that sleeps) sends 200
// more calls; each is -32050 scope caller, word for word, and the audit
// has one record for them while the window lasts ("refused" 1, the
// first), then, at the first refusal after it, one for the rest: the
// records add up to every refusal, as a2ad_requests_total does. Before,
// each -32050 wrote a record of its own.
func testCallCapRefusalsAuditedInSummary(t *testing.T) {
	dir := t.TempDir()
	keys, auditLog := filepath.Join(dir, "keys.yaml"), filepath.Join(dir, "audit.log")
	key := mustAppendKey(t, keys, "busy", "partner")
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--audit-log", auditLog,
		"--rate", "0", "--max-calls-per-caller", "1")
	h := http.Header{"Authorization": {"Bearer " + key}}
	resp, body := postRaw(t, p.base, rpcBody("message/send", sendParams("hold", "demo::sleep", map[string]any{"seconds": 60}, false)), h)
	hold := resultTask(t, decodeAnswer(t, resp, body))
	t.Cleanup(func() { postRaw(t, p.base, rpcBody("tasks/cancel", map[string]any{"id": hold["id"]}), h) })
	const want = `{"jsonrpc":"2.0","id":1,"error":{"code":-32050,"message":"Too many calls of this caller are running or waiting; retry later","data":{"scope":"caller"}}}`
	refuse := func(i int) {
		t.Helper()
		resp, body := postRaw(t, p.base, rpcBody("message/send", sendParams(fmt.Sprint("more-", i), "demo::echo", map[string]any{"n": i}, true)), h)
		if resp.StatusCode != http.StatusOK || string(body) != want {
			t.Fatalf("call %d past the cap: HTTP %d %s\nwant %s", i, resp.StatusCode, body, want)
		}
	}
	for i := range 200 {
		refuse(i)
	}
	summaries := func() (recs []map[string]any, sum int) {
		for _, r := range auditFile(t, auditLog) {
			if r["caller"] == "busy" && r["code"] == float64(-32050) {
				if r["reason"] != "over_capacity" || r["outcome"] != "transport_denied" || r["rpc_method"] != "message/send" {
					t.Errorf("audit of a -32050: %v", r)
				}
				recs = append(recs, r)
				n, _ := r["refused"].(float64)
				sum += int(n)
			}
		}
		return recs, sum
	}
	if recs, sum := waitRecords(t, summaries, 1); len(recs) != 1 || sum != 1 {
		t.Fatalf("%d records of -32050 standing for %d refusals while the window lasts, want 1 for 1", len(recs), sum)
	}
	time.Sleep(10*time.Second + 200*time.Millisecond)
	refuse(200)
	if recs, sum := waitRecords(t, summaries, 2); len(recs) != 2 || sum != 201 {
		t.Errorf("%d records of -32050 standing for %d refusals, want 2 for 201", len(recs), sum)
	}
	got := scrapeAdmin(t, p.admin).value("a2ad_requests_total", "transport", "jsonrpc", "method", "message/send", "outcome", "transport_denied", "reason", "over_capacity")
	if got != 201 {
		t.Errorf("a2ad_requests_total counts %v refused sends, want 201", got)
	}
}
