package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2ad/a2ad/internal/costtest"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/internal/testkit"
	a2agrpc "github.com/a2ad/a2ad/transport/grpc"
)

// TestForeignTaskCostsWhatAMissingOneDoesOnPostgres is issue 25 item 7 on
// the real binary serving PostgreSQL: bob asks for acme's task and for an
// id beside it that no task has, over JSON-RPC tasks/get, HTTP+JSON GET
// /tasks/{id} and gRPC GetTask, for a small task and one of about 1.8 MB
// (a 900 KB input, in its history and echoed in its artifact). Every
// answer to both is the pinned one, byte for byte (status, headers and
// body; code, message, details and metadata); the medians of 1,000
// interleaved asks each are within 10%, as on bbolt
// (TestForeignTaskCostsWhatAMissingOneDoes,
// TestForeignTaskCostsWhatAMissingOneDoesOverBindings); and the binary
// allocates as much for either, read from its metrics. Before pgstore
// answered a foreign task as a missing one (9d83d79), each binding's
// foreign asks were 2 to 7% slower here, within the bound at this noise,
// but made 40 to 50 more allocations a call: that fails.
func TestForeignTaskCostsWhatAMissingOneDoesOnPostgres(t *testing.T) {
	skipShort(t, "times thousands of requests to the real binary")
	dsn := pgtest.Schema(t)
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	acme, bob := mustAppendKey(t, keys, "acme", "partner"), mustAppendKey(t, keys, "bob", "partner")
	p := startBinary(t, exampleCatalog, dsn, "--keys", keys, "--grpc-listen", "127.0.0.1:0",
		"--rate", "0", "--rate-bytes", "0", // thousands of requests from one key
		"--log-level", "info") // not a debug line a request for the test to read
	create := func(msgID, message string) string {
		_, out := postRaw(t, p.base, rpcBody("message/send", sendParams(msgID, "demo::echo", map[string]any{"message": message}, true)),
			http.Header{"Authorization": {"Bearer " + acme}})
		task := resultTask(t, decodeJSON(t, out))
		if state(task) != "completed" {
			t.Fatalf("task %s is %s", task["id"], state(task))
		}
		return task["id"].(string)
	}
	owned := []struct {
		name, id string
		allocs   bool // count the binary's allocations too
	}{
		{"small", create("pg-timing-small", "hi"), false},
		{"1.8 MB", create("pg-timing-large", strings.Repeat("x", 900_000)), true},
	}

	hc := &http.Client{Timeout: 10 * time.Second}
	byBob := http.Header{"Authorization": {"Bearer " + bob}, "Content-Type": {"application/json"}}
	gc := dialGRPC(t, grpcListenOf(t, p))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+bob)
	bindings := []struct {
		name string
		ask  func(id string) string // the whole answer bob gets, as text
		want string                 // the missing task's answer, pinned
	}{
		{"JSON-RPC tasks/get", func(id string) string {
			resp, body := postURL(t, hc, p.base+"/a2a", rpcBody("tasks/get", map[string]any{"id": id}), byBob)
			return fmt.Sprintf("%d %v %s", resp.StatusCode, stableHeaders(resp.Header), body)
		}, `200 map[Content-Length:[75] Content-Type:[application/json]] {"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}`},
		{"HTTP+JSON GET /tasks/{id}", func(id string) string {
			req := newReq(t, http.MethodGet, p.base+restPath+"/tasks/"+id, byBob)
			resp, body := testkit.RoundTrip(t, hc, req)
			return fmt.Sprintf("%d %v %s", resp.StatusCode, stableHeaders(resp.Header), body)
		}, `404 map[Content-Length:[189] Content-Type:[application/json]] {"error":{"code":404,"status":"NOT_FOUND","message":"Task not found",` +
			`"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`},
		{"gRPC GetTask", func(id string) string {
			var header, trailer metadata.MD
			_, err := gc.GetTask(ctx, &a2apb.GetTaskRequest{Id: id}, grpc.Header(&header), grpc.Trailer(&trailer))
			// The request id differs from one call to the next.
			header.Delete(a2agrpc.RequestIDMetadata)
			trailer.Delete(a2agrpc.RequestIDMetadata)
			st := status.Convert(err)
			out := fmt.Sprintf("%v %q", st.Code(), st.Message())
			for _, d := range st.Details() {
				if info, ok := d.(*errdetails.ErrorInfo); ok {
					d = fmt.Sprintf("ErrorInfo %s %s %v", info.GetReason(), info.GetDomain(), info.GetMetadata())
				}
				out += fmt.Sprintf(" %v", d)
			}
			// The trailer holds the status as sent (grpc-status-details-bin).
			return out + fmt.Sprintf(" header %q trailer %q", header, trailer)
		}, `NotFound "Task not found" ErrorInfo TASK_NOT_FOUND a2a-protocol.org map[] header map["content-type":["application/grpc"]] ` +
			`trailer map["grpc-status-details-bin":["\b\x05\x12\x0eTask not found\x1aN\n(type.googleapis.com/google.rpc.ErrorInfo\x12\"\n\x0eTASK_NOT_FOUND\x12\x10a2a-protocol.org"]]`},
	}
	for _, task := range owned {
		missingID := costtest.Neighbour(task.id)
		for _, b := range bindings {
			what := b.name + " of the " + task.name + " task"
			same := func(id string) func() {
				return func() {
					if got := b.ask(id); got != b.want {
						t.Fatalf("%s: the answer to %s\n  %s\nwant the missing task's\n  %s", what, id, got, b.want)
					}
				}
			}
			foreign, missing := same(task.id), same(missingID)
			if task.allocs {
				// Within 20 allocations a call, and 16 KB: a scrape of the
				// binary's counters allocates 200 to 3,000 times (40 to
				// 900 KB), whatever is asked between two (up to 10 a call
				// apart seen). Reading the foreign task's row cost 40 to 50
				// more; decoding the task would cost its size. These
				// rounds warm the binary up too.
				costtest.SameAllocsBy(t, what+", allocated by the binary", 500, func(n int, fn func()) (float64, float64) {
					return binaryAllocs(t, p.admin, n, fn)
				}, 20, 16<<10, foreign, missing)
			} else {
				costtest.Medians(200, foreign, missing) // warm up
			}
			costtest.SameTime(t, what, 1000, 0.10, foreign, missing)
		}
	}
}

// binaryAllocs is what the binary whose admin listener is at admin
// allocates per run of fn, over n runs, read from its go_memstats
// counters.
func binaryAllocs(tb testing.TB, admin string, n int, fn func()) (allocs, bytes float64) {
	tb.Helper()
	before := scrapeAdmin(tb, admin)
	for range n {
		fn()
	}
	after := scrapeAdmin(tb, admin)
	per := func(name string) float64 { return (after.value(name) - before.value(name)) / float64(n) }
	return per("go_memstats_mallocs_total"), per("go_memstats_alloc_bytes_total")
}
