package main

// Interop with the official Go SDK at 1.0 (github.com/a2aproject/a2a-go/v2
// v2.2.1, a test-only dependency) over each binding a2ad serves, against
// the real binary: the list of issue 17 §4.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/a2ad/a2ad/internal/testkit"
)

// v2Server is the binary with a keys file (acme, a partner) that also
// serves callers without a key, as partners.
type v2Server struct {
	p    *process
	card *a2a.AgentCard // as a2a-go resolved it
	acme string
}

func startV2Server(tb testing.TB, extra ...string) *v2Server {
	tb.Helper()
	dir := tb.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	s := &v2Server{acme: mustAppendKey(tb, keys, "acme", "partner")}
	args := append([]string{"--keys", keys, "--grpc-listen", "127.0.0.1:0", "--allow-anonymous", "--anonymous-tier", "partner",
		"--push-allow", "127.0.0.1/32", "--tier", "partner"}, extra...)
	s.p = startBinary(tb, exampleCatalog, filepath.Join(dir, "a2ad.db"), args...)
	// The card holds the 0.3 fields beside the 1.0 ones, securitySchemes
	// in the 0.3 form among them, as a2a-go's own servers write it
	// (a2av0.NewStaticAgentCardProducer); a2a-go reads such a card with
	// its compat parser (its DefaultCardParser takes pure 1.0 cards only).
	resolver := &agentcard.Resolver{Client: http.DefaultClient, CardParser: a2av0.NewAgentCardParser()}
	card, err := resolver.Resolve(context.Background(), s.p.base)
	if err != nil {
		tb.Fatalf("a2a-go v2 resolver: %v", err)
	}
	s.card = card
	return s
}

// keyTransport sends every request with an API key.
type keyTransport struct{ key string }

func (t keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if t.key != "" {
		r.Header.Set("X-API-Key", t.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// client is an a2a-go v2 client of the card's 1.0 interface of binding,
// sending key ("" for none): the card it is built from lists that
// interface only, so that no other is chosen.
func (s *v2Server) client(tb testing.TB, binding a2a.TransportProtocol, key string, opts ...a2aclient.FactoryOption) *a2aclient.Client {
	tb.Helper()
	card := *s.card
	card.SupportedInterfaces = nil
	for _, iface := range s.card.SupportedInterfaces {
		if iface.ProtocolBinding == binding && iface.ProtocolVersion == "1.0" {
			card.SupportedInterfaces = append(card.SupportedInterfaces, iface)
		}
	}
	if len(card.SupportedInterfaces) != 1 {
		tb.Fatalf("card lists %d 1.0 interfaces of %s: %+v", len(card.SupportedInterfaces), binding, s.card.SupportedInterfaces)
	}
	hc := &http.Client{Transport: keyTransport{key}, Timeout: 30 * time.Second}
	opts = append([]a2aclient.FactoryOption{a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc),
		a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(keyCreds(key)))}, opts...)
	client, err := a2aclient.NewFromCard(context.Background(), &card, opts...)
	if err != nil {
		tb.Fatalf("a2a-go v2 NewFromCard(%s): %v", binding, err)
	}
	tb.Cleanup(func() { _ = client.Destroy() })
	return client
}

func echoMessage(text string) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"skill": "demo::echo", "input": map[string]any{"message": text}}))
}

func sleepMessage(seconds float64) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"skill": "demo::sleep", "input": map[string]any{"seconds": seconds}}))
}

// sendTask sends msg and returns the task it answers with.
func sendTask(tb testing.TB, c *a2aclient.Client, msg *a2a.Message, returnImmediately bool) *a2a.Task {
	tb.Helper()
	req := &a2a.SendMessageRequest{Message: msg}
	if returnImmediately {
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	}
	res, err := c.SendMessage(context.Background(), req)
	if err != nil {
		tb.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		tb.Fatalf("SendMessage answered %T, want a task", res)
	}
	return task
}

// events collects a stream's events until it ends, or fails the test.
func events(tb testing.TB, what string, seq func(yield func(a2a.Event, error) bool)) []a2a.Event {
	tb.Helper()
	var out []a2a.Event
	for ev, err := range seq {
		if err != nil {
			tb.Fatalf("%s: %v after %d events", what, err, len(out))
		}
		out = append(out, ev)
	}
	return out
}

// checkStream checks that a stream began with the task and ended in want.
func checkStream(tb testing.TB, what string, evs []a2a.Event, want a2a.TaskState) {
	tb.Helper()
	if len(evs) == 0 {
		tb.Fatalf("%s: no events", what)
	}
	if _, ok := evs[0].(*a2a.Task); !ok {
		tb.Errorf("%s: first event %T, want the task", what, evs[0])
	}
	var last a2a.TaskState
	switch e := evs[len(evs)-1].(type) {
	case *a2a.Task:
		last = e.Status.State
	case *a2a.TaskStatusUpdateEvent:
		last = e.Status.State
	}
	if last != want {
		tb.Errorf("%s: ended in %q, want %q (%d events)", what, last, want, len(evs))
	}
}

// TestInteropV2 runs the interop list over each binding.
func TestInteropV2(t *testing.T) {
	skipShort(t, "builds and runs the binary")
	s := startV2Server(t)
	var bindings []string
	for _, iface := range s.card.SupportedInterfaces {
		bindings = append(bindings, string(iface.ProtocolBinding)+" "+string(iface.ProtocolVersion)+" "+iface.URL)
	}
	wantIfaces := []string{"JSONRPC 1.0 " + s.p.base + "/a2a", "HTTP+JSON 1.0 " + s.p.base + "/a2a/rest",
		"GRPC 1.0 " + s.grpcAddr(t), "JSONRPC 0.3 " + s.p.base + "/a2a"}
	if strings.Join(bindings, "\n") != strings.Join(wantIfaces, "\n") {
		t.Fatalf("card interfaces:\n%s\nwant\n%s", strings.Join(bindings, "\n"), strings.Join(wantIfaces, "\n"))
	}
	for _, b := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolGRPC} {
		t.Run(string(b), func(t *testing.T) { interopList(t, s, b) })
	}
	// Each binding's calls are audited and counted under its own name,
	// by the 1.0 method names.
	_, metrics := httpGet(t, s.p.admin+"/metrics")
	s.p.mu.Lock()
	logs := s.p.logs.String()
	s.p.mu.Unlock()
	for _, tr := range []string{"jsonrpc", "rest", "grpc"} {
		m := `a2ad_requests_total{method="GetTask",outcome="client_error",reason="not_found",transport="` + tr + `"} 1`
		if !strings.Contains(string(metrics), m) {
			t.Errorf("metrics lack %s", m)
		}
		if a := `"transport":"` + tr + `"`; !strings.Contains(logs, a) {
			t.Errorf("no audit record with %s", a)
		}
	}
}

func interopList(t *testing.T, s *v2Server, binding a2a.TransportProtocol) {
	ctx := context.Background()
	c := s.client(t, binding, s.acme)

	done := sendTask(t, c, echoMessage("hello"), false)
	if done.Status.State != a2a.TaskStateCompleted || len(done.Artifacts) != 1 {
		t.Fatalf("SendMessage: %s with %d artifacts, want completed with 1", done.Status.State, len(done.Artifacts))
	}
	zero := 0
	got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: done.ID, HistoryLength: &zero})
	if err != nil || got.ID != done.ID || len(got.History) != 0 || got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("GetTask(historyLength 0) = %+v, %v", got, err)
	}
	if got, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: done.ID}); err != nil || len(got.History) == 0 {
		t.Fatalf("GetTask = %+v, %v; want its history", got, err)
	}
	if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask(unknown) error = %v, want ErrTaskNotFound", err)
	}

	// Paging: three tasks of this test's own context, two a page.
	first := sendTask(t, c, echoMessage("p1"), false)
	for _, text := range []string{"p2", "p3"} {
		m := echoMessage(text)
		m.ContextID = first.ContextID
		sendTask(t, c, m, false)
	}
	page, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: first.ContextID, PageSize: 2})
	if err != nil || len(page.Tasks) != 2 || page.NextPageToken == "" || page.TotalSize != 3 {
		t.Fatalf("ListTasks(pageSize 2) = %+v, %v", page, err)
	}
	page2, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: first.ContextID, PageSize: 2, PageToken: page.NextPageToken})
	if err != nil || len(page2.Tasks) != 1 || page2.NextPageToken != "" {
		t.Fatalf("ListTasks(page 2) = %+v, %v", page2, err)
	}

	evs := events(t, "SendStreamingMessage", c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: echoMessage("streamed")}))
	checkStream(t, "SendStreamingMessage", evs, a2a.TaskStateCompleted)

	running := sendTask(t, c, sleepMessage(30), true)
	canceled, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: running.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Errorf("CancelTask(running) = %+v, %v; want canceled", canceled, err)
	}
	if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: done.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("CancelTask(completed) error = %v, want ErrTaskNotCancelable", err)
	}

	short := sendTask(t, c, sleepMessage(0.5), true)
	evs = events(t, "SubscribeToTask(running)", c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: short.ID}))
	checkStream(t, "SubscribeToTask(running)", evs, a2a.TaskStateCompleted)
	for _, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: done.ID}) {
		if !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("SubscribeToTask(terminal) error = %v, want ErrUnsupportedOperation", err)
		}
		break
	}

	interopPush(t, s, c, binding, running.ID)

	interopExtendedCard(t, s, c, binding)
}

// interopExtendedCard gets the extended card with a key, and the public
// card without one.
// The card has no securityRequirements (a2a-go v2.2.1 reads their scopes
// as bare arrays, the ProtoJSON form has {"list": [...]}: see
// agentcard.v1Card), so a2a-go v2's client decodes it over every binding;
// the raw answer holds the 1.0 fields alone.
func interopExtendedCard(t *testing.T, s *v2Server, c *a2aclient.Client, binding a2a.TransportProtocol) {
	ctx := context.Background()
	card, err := c.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
	if err != nil || card.Name == "" || len(card.Skills) == 0 || len(card.SecuritySchemes) != 2 || len(card.SecurityRequirements) != 0 {
		t.Errorf("GetExtendedAgentCard with a key = %+v, %v", card, err)
	}
	if binding != a2a.TransportProtocolGRPC {
		raw := rawExtendedCard(t, s, binding, s.acme, http.StatusOK)
		var got struct {
			Name                 string
			Skills               []struct{ ID string }
			SecurityRequirements any
			URL                  *string
		}
		if err := json.Unmarshal(raw, &got); err != nil || got.Name == "" || len(got.Skills) == 0 || got.URL != nil || got.SecurityRequirements != nil {
			t.Errorf("extended card with a key: %v\n%s", err, raw)
		}
		rawExtendedCard(t, s, binding, "", http.StatusOK)
	}
	// An anonymous caller (this server lets them in) gets the public card
	// (see transport.Core.NeedsAuth).
	anon := s.client(t, binding, "")
	pub, err := anon.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
	if err != nil || pub.Name != s.card.Name || len(pub.Skills) != len(s.card.Skills) {
		t.Errorf("GetExtendedAgentCard without a key: %+v, %v", pub, err)
	}
}

// rawExtendedCard gets the extended card with its own request in
// binding's shape, checks the answer's HTTP status and returns the card.
func rawExtendedCard(t *testing.T, s *v2Server, binding a2a.TransportProtocol, key string, status int) json.RawMessage {
	t.Helper()
	var req *http.Request
	if binding == a2a.TransportProtocolJSONRPC {
		req, _ = http.NewRequest(http.MethodPost, s.p.base+"/a2a", strings.NewReader(string(rpcBody("GetExtendedAgentCard", map[string]any{}))))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
	} else {
		req, _ = http.NewRequest(http.MethodGet, s.p.base+"/a2a/rest/extendedAgentCard", nil)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, body := testkit.RoundTrip(t, http.DefaultClient, req)
	if resp.StatusCode != status {
		t.Fatalf("extended card: HTTP %d, want %d: %s", resp.StatusCode, status, body)
	}
	var rpc struct{ Result json.RawMessage }
	if binding == a2a.TransportProtocolJSONRPC && json.Unmarshal(body, &rpc) == nil && rpc.Result != nil {
		return rpc.Result
	}
	return body
}

// interopPush creates, reads, lists and deletes a push config of taskID.
// a2a-go v2.2.1 reads ListTaskPushNotificationConfigs as a bare array,
// while the spec (and a2ad) answer {"configs": [...]}: that method is
// checked with a raw request in the binding's own shape.
func interopPush(t *testing.T, s *v2Server, c *a2aclient.Client, binding a2a.TransportProtocol, taskID a2a.TaskID) {
	ctx := context.Background()
	created, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: taskID, URL: "http://127.0.0.1:9/hook", Token: "tok"})
	if err != nil || created.ID == "" || created.URL != "http://127.0.0.1:9/hook" || created.TaskID != taskID {
		t.Fatalf("CreateTaskPushConfig = %+v, %v", created, err)
	}
	got, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: taskID, ID: created.ID})
	if err != nil || got.ID != created.ID || got.Token != "tok" {
		t.Errorf("GetTaskPushConfig = %+v, %v", got, err)
	}
	if ids := rawPushList(t, s, binding, taskID); strings.Join(ids, ",") != created.ID {
		t.Errorf("ListTaskPushNotificationConfigs = %q, want [%s]", ids, created.ID)
	}
	if err := c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: taskID, ID: created.ID}); err != nil {
		t.Errorf("DeleteTaskPushConfig: %v", err)
	}
	if ids := rawPushList(t, s, binding, taskID); len(ids) != 0 {
		t.Errorf("ListTaskPushNotificationConfigs after the delete = %q, want none", ids)
	}
}

// rawPushList lists a task's push configs with a request of its own in
// binding's shape, and returns their ids.
func rawPushList(t *testing.T, s *v2Server, binding a2a.TransportProtocol, taskID a2a.TaskID) []string {
	t.Helper()
	var req *http.Request
	switch binding {
	case a2a.TransportProtocolJSONRPC:
		body := rpcBody("ListTaskPushNotificationConfigs", map[string]any{"taskId": taskID})
		req, _ = http.NewRequest(http.MethodPost, s.p.base+"/a2a", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
	case a2a.TransportProtocolHTTPJSON:
		req, _ = http.NewRequest(http.MethodGet, s.p.base+"/a2a/rest/tasks/"+string(taskID)+"/pushNotificationConfigs", nil)
	default:
		return grpcPushList(t, s, taskID)
	}
	req.Header.Set("X-API-Key", s.acme)
	resp, body := testkit.RoundTrip(t, http.DefaultClient, req)
	var out struct {
		Result  *json.RawMessage
		Configs []struct{ ID string }
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil {
		t.Fatalf("list push configs: HTTP %d %s", resp.StatusCode, body)
	}
	if out.Result != nil {
		if err := json.Unmarshal(*out.Result, &out); err != nil {
			t.Fatalf("list push configs: %s", body)
		}
	}
	var ids []string
	for _, c := range out.Configs {
		ids = append(ids, c.ID)
	}
	return ids
}

// grpcPushList is rawPushList over gRPC.
func grpcPushList(t *testing.T, s *v2Server, taskID a2a.TaskID) []string {
	t.Helper()
	cl := dialGRPC(t, s.grpcAddr(t))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", s.acme)
	res, err := cl.ListTaskPushNotificationConfigs(ctx, &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: string(taskID)})
	if err != nil {
		t.Fatalf("ListTaskPushNotificationConfigs: %v", err)
	}
	var ids []string
	for _, c := range res.GetConfigs() {
		ids = append(ids, c.GetId())
	}
	return ids
}

// grpcAddr is the gRPC interface's address, as the card gives it.
func (s *v2Server) grpcAddr(t *testing.T) string {
	t.Helper()
	for _, iface := range s.card.SupportedInterfaces {
		if iface.ProtocolBinding == a2a.TransportProtocolGRPC {
			if !strings.HasPrefix(iface.URL, "127.0.0.1:") {
				t.Fatalf("gRPC interface at %q, want 127.0.0.1:port", iface.URL)
			}
			return iface.URL
		}
	}
	t.Fatal("the card lists no gRPC interface")
	return ""
}

// keyCreds sends an API key in the x-api-key metadata of each call.
type keyCreds string

func (k keyCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	if k == "" {
		return nil, nil
	}
	return map[string]string{"x-api-key": string(k)}, nil
}

func (keyCreds) RequireTransportSecurity() bool { return false }
