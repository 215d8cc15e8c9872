package main

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc/codes"
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
