package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/a2ad/a2ad/internal/costtest"
	"github.com/a2ad/a2ad/internal/testkit"
	a2agrpc "github.com/a2ad/a2ad/transport/grpc"
)

// isolationFixture is acme's running task, with a webhook, on a server
// with every binding on; ops is the other caller that asks for it.
func isolationFixture(t *testing.T) (k *keyed, hook *hookReceiver, id string) {
	t.Helper()
	hook = newHookReceiver(t, nil)
	k = startKeyed(t, func(c *Config) { c.GRPCListen = "127.0.0.1:0" })
	running := resultTask(t, k.ok(t, k.acme, "message/send", sendParams("iso-b", "demo::sleep", map[string]any{"seconds": 30}, false)))
	id = running["id"].(string)
	k.ok(t, k.acme, "tasks/pushNotificationConfig/set", map[string]any{
		"taskId": id, "pushNotificationConfig": map[string]any{"id": "w1", "url": hook.URL}})
	t.Cleanup(func() { k.ok(t, k.acme, "tasks/cancel", map[string]any{"id": id}) })
	return k, hook, id
}

// isolationMissing is an id no task has.
const isolationMissing = "00000000-0000-4000-8000-000000000000"

// checkUntouched checks that acme's task still runs with its webhook,
// and that the audit trail has a denied_owner record over transport
// for each of want calls.
func checkUntouched(t *testing.T, k *keyed, hook *hookReceiver, id, transport string, want int) {
	t.Helper()
	if got := resultTask(t, k.ok(t, k.acme, "tasks/get", map[string]any{"id": id})); state(got) != "working" {
		t.Errorf("acme's task is %s after ops's attempts over %s", state(got), transport)
	}
	cfgs := k.ok(t, k.acme, "tasks/pushNotificationConfig/list", map[string]any{"id": id})["result"].([]any)
	if len(cfgs) != 1 || cfgs[0].(map[string]any)["pushNotificationConfig"].(map[string]any)["url"] != hook.URL {
		t.Errorf("acme's webhooks after ops's attempts over %s: %v", transport, cfgs)
	}
	owner := 0
	for _, r := range k.auditRecords(t) {
		if r["caller"] == "ops" && r["transport"] == transport && r["reason"] == "denied_owner" && r["task_id"] == id {
			owner++
		}
	}
	if owner != want {
		t.Errorf("%d denied_owner records over %s, want %d", owner, transport, want)
	}
}

// TestCrossCallerIsolationOverREST: over HTTP+JSON, every operation that
// names a task answers another caller's task byte for byte as a missing
// one: status, headers and body.
func TestCrossCallerIsolationOverREST(t *testing.T) {
	k, hook, id := isolationFixture(t)
	base := k.base + restPath
	send := func(taskID string) string {
		return `{"message":{"messageId":"iso-msg","role":"ROLE_USER","taskId":"` + taskID +
			`","parts":[{"data":{"skill":"demo::sleep","input":{"seconds":1}}}]}}`
	}
	reqs := []struct {
		method, path string // {id} stands for the task's id
		header       []string
		body         func(id string) string
	}{
		{"GET", "/tasks/{id}", nil, nil},
		{"GET", "/tasks/{id}?historyLength=1", nil, nil},
		{"HEAD", "/tasks/{id}", nil, nil},
		{"POST", "/tasks/{id}:cancel", nil, nil},
		{"GET", "/tasks/{id}:subscribe", nil, nil},
		{"POST", "/tasks/{id}:subscribe", nil, nil},
		{"GET", "/tasks/{id}:subscribe", []string{"Last-Event-ID", "0"}, nil},
		{"POST", "/tasks/{id}/pushNotificationConfigs", nil, func(string) string { return `{"url":"` + hook.URL + `/evil"}` }},
		{"GET", "/tasks/{id}/pushNotificationConfigs", nil, nil},
		{"GET", "/tasks/{id}/pushNotificationConfigs/w1", nil, nil},
		{"DELETE", "/tasks/{id}/pushNotificationConfigs/w1", nil, nil},
		{"POST", "/message:send", nil, send},
		{"POST", "/message:stream", nil, send},
	}
	hc := &http.Client{Timeout: 10 * time.Second} // a stream that opened would hang
	ask := func(method, path string, header []string, body func(string) string, taskID string) (*http.Response, []byte) {
		var rd io.Reader
		if body != nil {
			rd = strings.NewReader(body(taskID))
		}
		req, err := http.NewRequest(method, base+strings.ReplaceAll(path, "{id}", taskID), rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+k.ops)
		req.Header.Set("Content-Type", "application/a2a+json") // as the official clients send, with a body or not
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		return testkit.RoundTrip(t, hc, req)
	}
	for _, r := range reqs {
		fr, foreign := ask(r.method, r.path, r.header, r.body, id)
		mr, missing := ask(r.method, r.path, r.header, r.body, isolationMissing)
		what := r.method + " " + r.path
		if fr.StatusCode != mr.StatusCode || !bytes.Equal(foreign, missing) || !reflect.DeepEqual(stableHeaders(fr.Header), stableHeaders(mr.Header)) {
			t.Errorf("%s %v: another caller's task answers\n  %d %v %s\na missing one\n  %d %v %s", what, r.header,
				fr.StatusCode, stableHeaders(fr.Header), foreign, mr.StatusCode, stableHeaders(mr.Header), missing)
		}
		if fr.StatusCode != http.StatusNotFound || (r.method != http.MethodHead && !bytes.Contains(foreign, []byte(`"reason":"TASK_NOT_FOUND"`))) {
			t.Errorf("%s: %d %s, want 404 TASK_NOT_FOUND", what, fr.StatusCode, foreign)
		}
	}
	checkUntouched(t, k, hook, id, "rest", len(reqs))
}

// TestCrossCallerIsolationOverGRPC: over gRPC, every method that names a
// task answers another caller's task exactly as a missing one: the
// status with its details, and the header and trailer metadata.
func TestCrossCallerIsolationOverGRPC(t *testing.T) {
	k, hook, id := isolationFixture(t)
	client := grpcClient(t, k.m)
	auth := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+k.ops)
	send := func(taskID string) *a2apb.SendMessageRequest {
		req := grpcEcho(t, "iso-msg")
		req.Message.TaskId = taskID
		return req
	}
	streamErr := func(s grpc.ServerStreamingClient[a2apb.StreamResponse], err error) error {
		if err == nil {
			_, err = s.Recv()
		}
		return err
	}
	calls := []struct {
		name string
		call func(ctx context.Context, taskID string, opts ...grpc.CallOption) error
	}{
		{"GetTask", func(ctx context.Context, id string, o ...grpc.CallOption) error {
			_, err := client.GetTask(ctx, &a2apb.GetTaskRequest{Id: id}, o...)
			return err
		}},
		{"CancelTask", func(ctx context.Context, id string, o ...grpc.CallOption) error {
			_, err := client.CancelTask(ctx, &a2apb.CancelTaskRequest{Id: id}, o...)
			return err
		}},
		{"SubscribeToTask", func(ctx context.Context, id string, o ...grpc.CallOption) error {
			return streamErr(client.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: id}, o...))
		}},
		{"SubscribeToTask from event 0", func(ctx context.Context, id string, o ...grpc.CallOption) error {
			ctx = metadata.AppendToOutgoingContext(ctx, "last-event-id", "0")
			return streamErr(client.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: id}, o...))
		}},
		{"CreateTaskPushNotificationConfig", func(ctx context.Context, id string, o ...grpc.CallOption) error {
			_, err := client.CreateTaskPushNotificationConfig(ctx, &a2apb.TaskPushNotificationConfig{TaskId: id, Url: hook.URL + "/evil"}, o...)
			return err
		}},
		{"GetTaskPushNotificationConfig", func(ctx context.Context, id string, o ...grpc.CallOption) error {
			_, err := client.GetTaskPushNotificationConfig(ctx, &a2apb.GetTaskPushNotificationConfigRequest{TaskId: id, Id: "w1"}, o...)
			return err
		}},
		{"ListTaskPushNotificationConfigs", func(ctx context.Context, id string, o ...grpc.CallOption) error {
			_, err := client.ListTaskPushNotificationConfigs(ctx, &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: id}, o...)
			return err
		}},
		{"DeleteTaskPushNotificationConfig", func(ctx context.Context, id string, o ...grpc.CallOption) error {
			_, err := client.DeleteTaskPushNotificationConfig(ctx, &a2apb.DeleteTaskPushNotificationConfigRequest{TaskId: id, Id: "w1"}, o...)
			return err
		}},
		{"SendMessage", func(ctx context.Context, id string, o ...grpc.CallOption) error {
			_, err := client.SendMessage(ctx, send(id), o...)
			return err
		}},
		{"SendStreamingMessage", func(ctx context.Context, id string, o ...grpc.CallOption) error {
			return streamErr(client.SendStreamingMessage(ctx, send(id), o...))
		}},
	}
	for _, c := range calls {
		ask := func(taskID string) (metadata.MD, metadata.MD, error) {
			ctx, cancel := context.WithTimeout(auth, 10*time.Second) // a stream that opened would hang
			defer cancel()
			var header, trailer metadata.MD
			err := c.call(ctx, taskID, grpc.Header(&header), grpc.Trailer(&trailer))
			// The request id differs from one call to the next.
			header.Delete(a2agrpc.RequestIDMetadata)
			trailer.Delete(a2agrpc.RequestIDMetadata)
			return header, trailer, err
		}
		fh, ft, ferr := ask(id)
		mh, mt, merr := ask(isolationMissing)
		fs, ms := status.Convert(ferr).Proto(), status.Convert(merr).Proto()
		if !proto.Equal(fs, ms) || !reflect.DeepEqual(fh, mh) || !reflect.DeepEqual(ft, mt) {
			t.Errorf("%s: another caller's task answers\n  %v header %v trailer %v\na missing one\n  %v header %v trailer %v",
				c.name, fs, fh, ft, ms, mh, mt)
		}
		if st := status.Convert(ferr); st.Code() != codes.NotFound || st.Message() != "Task not found" {
			t.Errorf("%s: %v, want NOT_FOUND Task not found", c.name, ferr)
		}
	}
	checkUntouched(t, k, hook, id, "grpc", len(calls))
}

// TestForeignTaskCostsWhatAMissingOneDoesOverBindings: HTTP+JSON and gRPC
// look tasks up through the same core and store as JSON-RPC (issue 13
// item 7), so asking for another caller's 1.8 MB task costs what asking
// for a missing one does: the same allocations per call (server and
// client, in this process: decoding the task would allocate its size),
// and medians of interleaved calls within 10%.
func TestForeignTaskCostsWhatAMissingOneDoesOverBindings(t *testing.T) {
	skipShort(t, "times thousands of requests")
	k := startKeyed(t, func(c *Config) {
		c.GRPCListen = "127.0.0.1:0"
		c.MaxBodyBytes = 4 << 20
		c.RatePerSecond, c.RateBytes = 0, 0 // thousands of requests from one key
	})
	large := resultTask(t, k.ok(t, k.acme, "message/send", sendParams("timing-b", "demo::echo", map[string]any{"message": strings.Repeat("x", 900_000)}, true)))
	if state(large) != "completed" {
		t.Fatalf("task %s is %s", large["id"], state(large))
	}
	id := large["id"].(string)
	missing := costtest.Neighbour(id)

	hc := &http.Client{Timeout: 10 * time.Second}
	rest := func(method, path string) func(taskID string) func() {
		return func(taskID string) func() {
			return func() {
				req, _ := http.NewRequest(method, k.base+restPath+strings.ReplaceAll(path, "{id}", taskID), nil)
				req.Header.Set("Authorization", "Bearer "+k.bob)
				req.Header.Set("Content-Type", "application/json")
				if resp, body := testkit.RoundTrip(t, hc, req); resp.StatusCode != http.StatusNotFound {
					t.Fatalf("%s %s: %d %s, want 404", method, path, resp.StatusCode, body)
				}
			}
		}
	}
	client := grpcClient(t, k.m)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+k.bob)
	rpc := func(name string, call func(taskID string) error) func(taskID string) func() {
		return func(taskID string) func() {
			return func() {
				if err := call(taskID); status.Code(err) != codes.NotFound {
					t.Fatalf("%s: %v, want NOT_FOUND", name, err)
				}
			}
		}
	}
	cases := []struct {
		name  string
		ask   func(taskID string) func()
		timed bool
	}{
		{"REST GET /tasks/{id}", rest(http.MethodGet, "/tasks/{id}"), true},
		{"REST POST :cancel", rest(http.MethodPost, "/tasks/{id}:cancel"), false},
		{"REST GET :subscribe", rest(http.MethodGet, "/tasks/{id}:subscribe"), false},
		{"REST GET pushNotificationConfigs", rest(http.MethodGet, "/tasks/{id}/pushNotificationConfigs"), false},
		{"gRPC GetTask", rpc("GetTask", func(id string) error {
			_, err := client.GetTask(ctx, &a2apb.GetTaskRequest{Id: id})
			return err
		}), true},
		{"gRPC CancelTask", rpc("CancelTask", func(id string) error {
			_, err := client.CancelTask(ctx, &a2apb.CancelTaskRequest{Id: id})
			return err
		}), false},
		{"gRPC SubscribeToTask", rpc("SubscribeToTask", func(id string) error {
			s, err := client.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: id})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		}), false},
	}
	for _, c := range cases {
		foreign, miss := c.ask(id), c.ask(missing)
		costtest.Medians(50, foreign, miss) // warm up
		// Allocations: within 8 per call, and 64 KB (a GC that empties
		// the buffer pools during one run costs it a few buffers again:
		// up to 22 KB seen, under -race); the foreign task decoded would
		// be 1.8 MB.
		af, bf := costtest.Allocs(200, foreign)
		am, bm := costtest.Allocs(200, miss)
		t.Logf("%s: foreign %.1f allocs %.0f B, missing %.1f allocs %.0f B per call", c.name, af, bf, am, bm)
		if math.Abs(af-am) > 8 || math.Abs(bf-bm) > 64<<10 {
			t.Errorf("%s of the 1.8 MB task: a foreign task costs %.1f allocations (%.0f B), a missing one %.1f (%.0f B)", c.name, af, bf, am, bm)
		}
		if c.timed {
			costtest.SameTime(t, c.name+" of the 1.8 MB task", 2000, 0.10, foreign, miss)
		}
	}
}
