package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// drainCall is one request a test sends a draining replica, and the
// answer it wants: HTTP 503, Retry-After 1 and -32051 in the binding's
// error shape, before any event.
type drainCall struct {
	name, method, url, body, accept, version string
	want                                     string // a substring of the body
}

// TestDrainRefusalsRetryable is issue 26 item 4: while a replica drains
// (SIGTERM, a slow call holding it), every new stream and every
// resubscription is refused before any event, retryably, on every
// binding: HTTP 503 with Retry-After and -32051 over JSON-RPC (0.3 and
// 1.0, whatever the client accepts) and HTTP+JSON, UNAVAILABLE with a
// RetryInfo over gRPC; and the log has no error-level line for them
// (before: -32603 "context canceled" for a resubscription, and an SSE
// -32051 event after HTTP 200 for a new stream).
func TestDrainRefusalsRetryable(t *testing.T) {
	skipShort(t, "runs the real binary")
	p := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"), "--shutdown-grace", "30s", "--grpc-listen", "127.0.0.1:0")
	grpcAddr := grpcListenOf(t, p)
	slow := resultTask(t, rpc(t, p.base, "message/send", sendParams("slow", "demo::sleep", map[string]any{"seconds": 4}, false)))
	id := slow["id"].(string)
	waitTaskState(t, p.base, id, "working")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "/readyz to answer draining", func() bool {
		code, _ := getStatus(t, p.base+"/readyz")
		return code == http.StatusServiceUnavailable
	})
	msg03 := `{"kind":"message","messageId":"late-%s","role":"user","parts":[{"kind":"data","data":{"skill":"demo::echo","input":{"message":"hi"}}}]}`
	msg10 := `{"messageId":"late-%s","role":"ROLE_USER","parts":[{"data":{"skill":"demo::echo","input":{"message":"hi"}}}]}`
	rpcBodyOf := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	}
	const err03 = `"error":{"code":-32051,"message":"Server is shutting down; retry later"`
	for _, c := range []drainCall{
		{"0.3 message/stream", "POST", "/a2a", rpcBodyOf("message/stream", `{"message":`+strings.ReplaceAll(msg03, "%s", "1")+`}`), "text/event-stream", "", err03},
		{"0.3 tasks/resubscribe", "POST", "/a2a", rpcBodyOf("tasks/resubscribe", `{"id":"`+id+`"}`), "text/event-stream", "", err03},
		{"1.0 SendStreamingMessage", "POST", "/a2a", rpcBodyOf("SendStreamingMessage", `{"message":`+strings.ReplaceAll(msg10, "%s", "2")+`}`), "text/event-stream", "1.0", `"code":-32051`},
		{"1.0 SubscribeToTask", "POST", "/a2a", rpcBodyOf("SubscribeToTask", `{"id":"`+id+`"}`), "text/event-stream", "1.0", `"code":-32051`},
		{"REST message:stream", "POST", "/a2a/rest/message:stream", `{"message":` + strings.ReplaceAll(msg10, "%s", "3") + `}`, "text/event-stream", "1.0", `"status":"UNAVAILABLE"`},
		{"REST tasks:subscribe", "POST", "/a2a/rest/tasks/" + id + ":subscribe", ``, "text/event-stream", "1.0", `"status":"UNAVAILABLE"`},
	} {
		req, _ := http.NewRequest(c.method, p.base+c.url, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", c.accept)
		if c.version != "" {
			req.Header.Set("A2A-Version", c.version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
			strings.Contains(resp.Header.Get("Content-Type"), "event-stream") || !bytes.Contains(body, []byte(c.want)) {
			t.Errorf("%s while draining: HTTP %d, Retry-After %q, Content-Type %q, %s; want 503, 1, JSON with %s",
				c.name, resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), body, c.want)
		}
	}

	cl := dialGRPC(t, grpcAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := cl.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: id})
	if err == nil {
		_, err = sub.Recv()
	}
	st := status.Convert(err)
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if st.Code() != codes.Unavailable || retry == nil || retry.GetRetryDelay().AsDuration() != time.Second {
		t.Errorf("gRPC SubscribeToTask while draining: %v (details %v); want UNAVAILABLE with a RetryInfo of 1s", err, st.Details())
	}

	if err := p.exit(t, 30*time.Second, "after SIGTERM"); err != nil {
		t.Errorf("a2ad exited with %v after the drain, want 0", err)
	}
	p.mu.Lock()
	logs := p.logs.String()
	p.mu.Unlock()
	for _, line := range strings.Split(logs, "\n") {
		var entry struct{ Level string }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Level == "error" {
			t.Errorf("an error-level line while draining: %s", line)
		}
	}
}

// TestShutdownDelay: with --shutdown-delay, SIGTERM makes /readyz fail at
// once while new work is still served for the delay; then the drain, and
// a2ad exits 0.
func TestShutdownDelay(t *testing.T) {
	skipShort(t, "runs the real binary")
	p := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"), "--shutdown-delay", "2s")
	signaled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Second, "/readyz to fail at once", func() bool {
		code, body := getStatus(t, p.base+"/readyz")
		return code == http.StatusServiceUnavailable && body == `{"reason":"draining","status":"not_ready"}`+"\n"
	})
	if got := resultTask(t, rpc(t, p.base, "message/send", sendParams("during-delay", "demo::echo", map[string]any{"message": "hi"}, true))); state(got) != "completed" {
		t.Fatalf("a send during the delay: %v", got)
	}
	if d := time.Since(signaled); d > 1500*time.Millisecond {
		t.Fatalf("the checks took %v, too long to be inside the 2 s delay", d)
	}
	if err := p.exit(t, 20*time.Second, "after SIGTERM"); err != nil {
		t.Errorf("a2ad exited with %v, want 0", err)
	}
	if d := time.Since(signaled); d < 2*time.Second {
		t.Errorf("a2ad exited %v after SIGTERM, before its 2 s delay", d)
	}
}
