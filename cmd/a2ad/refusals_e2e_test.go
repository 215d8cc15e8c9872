package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestRefusalsAuditedInSummary is issue 25 item 3's flood on the real
// binary: a key with a tiny rate limit sends 2,000 requests over
// JSON-RPC, HTTP+JSON and gRPC, of which all but the first are refused.
// Before, each refusal wrote a full audit record (26k a second wrote 103
// MiB in 10 s); now the caller's refusals make one record per window
// (10 s), the first refusal's, "refused" counting what it stands for, and
// the first refusal after the window writes the rest: the records' counts
// add up to the refusals sent, as the metric does.
func TestRefusalsAuditedInSummary(t *testing.T) {
	skipShort(t, "runs the real binary")
	dir := t.TempDir()
	keys, auditLog := filepath.Join(dir, "keys.yaml"), filepath.Join(dir, "audit.log")
	key := mustAppendKey(t, keys, "flood", "partner")
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--audit-log", auditLog,
		"--rate", "0.001", "--rate-burst", "1", "--grpc-listen", "127.0.0.1:0")
	h := http.Header{"Authorization": {"Bearer " + key}}
	refused := 0
	count := func(limited bool) {
		if limited {
			refused++
		}
	}
	start := time.Now()
	for range 700 {
		resp, _ := postRaw(t, p.base, rpcBody("tasks/get", map[string]any{"id": "x"}), h)
		count(resp.StatusCode == http.StatusTooManyRequests)
	}
	for range 700 {
		req, _ := http.NewRequest(http.MethodGet, p.base+"/a2a/rest/tasks/x", nil)
		req.Header = h.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		count(resp.StatusCode == http.StatusTooManyRequests)
	}
	cl := dialGRPC(t, grpcListenOf(t, p))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
	for range 600 {
		_, err := cl.GetTask(ctx, &a2apb.GetTaskRequest{Id: "x"})
		count(status.Code(err) == codes.ResourceExhausted)
	}
	took := time.Since(start)
	if refused != 1999 {
		t.Fatalf("%d of 2,000 requests refused, want all but the burst of 1", refused)
	}

	summaries := func() (recs []map[string]any, sum int) {
		for _, r := range auditFile(t, auditLog) {
			if r["caller"] == "flood" && r["reason"] == "rate_limited" {
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
		t.Errorf("%d rate_limited records for a flood of %v, want at most %d", len(recs), took, max)
	}
	first := recs[0]
	for k, v := range map[string]any{"outcome": "transport_denied", "code": float64(-32052), "anonymous": false,
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
	resp, _ := postRaw(t, p.base, rpcBody("tasks/get", map[string]any{"id": "x"}), h)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the request after the window: HTTP %d, want 429", resp.StatusCode)
	}
	refused++
	recs, sum := waitRecords(t, summaries, len(recs)+1)
	if sum != refused {
		t.Errorf("%d records stand for %d refusals, want %d", len(recs), sum, refused)
	}
	if got := scrapeAdmin(t, p.admin).value("a2ad_rate_limit_rejections_total", "limit", "rate"); got != float64(refused) {
		t.Errorf("the metric counts %v refusals, want each of the %d", got, refused)
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
