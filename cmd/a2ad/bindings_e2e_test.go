package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2ad/a2ad/internal/testkit"
)

// grpcClient is a client of m's gRPC binding.
func grpcClient(tb testing.TB, m *Main) a2apb.A2AServiceClient {
	tb.Helper()
	return dialGRPC(tb, m.GRPCAddr())
}

func grpcEcho(tb testing.TB, id string) *a2apb.SendMessageRequest {
	tb.Helper()
	data, err := structpb.NewStruct(map[string]any{"skill": "demo::echo", "input": map[string]any{"message": id}})
	if err != nil {
		tb.Fatal(err)
	}
	return &a2apb.SendMessageRequest{Message: &a2apb.Message{MessageId: id, Role: a2apb.Role_ROLE_USER,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: structpb.NewStructValue(data)}}}}}
}

// eventID is a gRPC event's sequence, from its metadata.
func eventID(ev *a2apb.StreamResponse) string {
	var meta *structpb.Struct
	switch {
	case ev.GetTask() != nil:
		meta = ev.GetTask().GetMetadata()
	case ev.GetStatusUpdate() != nil:
		meta = ev.GetStatusUpdate().GetMetadata()
	case ev.GetArtifactUpdate() != nil:
		meta = ev.GetArtifactUpdate().GetMetadata()
	}
	return meta.GetFields()["a2ad.eventId"].GetStringValue()
}

// TestStreamReplayOverBindings: a finished task's stream is replayed from
// the event a client saw last, from the store, over HTTP+JSON
// (Last-Event-ID) and gRPC (last-event-id metadata): the same events, by
// the same ids, ending in the final state. (A live stream starts with
// the task as it stands, under its latest event id: resuming after it
// gets only what came later.)
func TestStreamReplayOverBindings(t *testing.T) {
	m := startMain(t, func(c *Config) { c.GRPCListen = "127.0.0.1:0" })
	client := grpcClient(t, m)
	ctx := context.Background()
	stream, err := client.SendStreamingMessage(ctx, grpcEcho(t, "replay-1"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var taskID string
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetTask() != nil {
			taskID = ev.GetTask().GetId()
		}
		ids = append(ids, eventID(ev))
	}
	if len(ids) < 2 || taskID == "" || ids[0] == "" {
		t.Fatalf("stream: ids %q, task %q", ids, taskID)
	}

	// gRPC: resume after the last event seen (nothing came later), then
	// from the start.
	last := ids[len(ids)-1]
	if got := grpcReplay(t, client, taskID, last); len(got) != 0 {
		t.Errorf("gRPC replay after %s: %q, want none", last, got)
	}
	all := grpcReplay(t, client, taskID, "0")
	if len(all) < 2 || all[len(all)-1] != last {
		t.Errorf("gRPC replay from the start: %q, want the task's events up to %s", all, last)
	}
	// Without a resume point a finished task has nothing to subscribe to.
	sub, err := client.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: taskID})
	if err == nil {
		_, err = sub.Recv()
	}
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("subscribe to a finished task: %v, want FAILED_PRECONDITION", err)
	}

	// HTTP+JSON: the same replay, by the SSE ids.
	req, _ := http.NewRequest(http.MethodGet, "http://"+m.Addr()+"/a2a/rest/tasks/"+taskID+":subscribe", nil)
	req.Header.Set("Last-Event-ID", "0")
	resp, body := testkit.RoundTrip(t, nil, req)
	var restIDs []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			restIDs = append(restIDs, id)
		}
	}
	if resp.StatusCode != http.StatusOK || strings.Join(restIDs, ",") != strings.Join(all, ",") {
		t.Errorf("REST replay from the start: HTTP %d ids %q, want %q:\n%s", resp.StatusCode, restIDs, all, body)
	}
}

// grpcReplay subscribes to taskID from after and returns the event ids.
func grpcReplay(t *testing.T, client a2apb.A2AServiceClient, taskID, after string) []string {
	t.Helper()
	sub, err := client.SubscribeToTask(metadata.AppendToOutgoingContext(context.Background(), "last-event-id", after), &a2apb.SubscribeToTaskRequest{Id: taskID})
	if err != nil {
		t.Fatal(err)
	}
	var replayed []string
	for {
		ev, err := sub.Recv()
		if errors.Is(err, io.EOF) {
			return replayed
		}
		if err != nil {
			t.Fatalf("replay over gRPC after %s: %v", after, err)
		}
		replayed = append(replayed, eventID(ev))
	}
}

// TestGRPCShutdown: on Close, an open gRPC stream ends (its client
// resumes later), new calls are refused, and Close returns.
func TestGRPCShutdown(t *testing.T) {
	cfg := testConfig(t.TempDir() + "/a2ad.db")
	cfg.GRPCListen = "127.0.0.1:0"
	m := openMain(t, &Main{Config: cfg, Logger: zerolog.Nop()})
	client := grpcClient(t, m)
	ctx := context.Background()
	data, _ := structpb.NewStruct(map[string]any{"skill": "demo::sleep", "input": map[string]any{"seconds": 30}})
	stream, err := client.SendStreamingMessage(ctx, &a2apb.SendMessageRequest{Message: &a2apb.Message{MessageId: "long", Role: a2apb.Role_ROLE_USER,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: structpb.NewStructValue(data)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- m.Close() }()
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	awaitNil(t, closed, 10*time.Second, "Close with a gRPC stream open")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v with a stream open, want it ended at once", d)
	}
	if _, err := client.GetTask(ctx, &a2apb.GetTaskRequest{Id: "x"}); status.Code(err) != codes.Unavailable {
		t.Errorf("a call after Close: %v, want UNAVAILABLE", err)
	}
}

// grpcListenOf is the gRPC listener's address the binary logged.
func grpcListenOf(t *testing.T, p *process) string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range strings.Split(p.logs.String(), "\n") {
		var entry struct {
			Message string `json:"message"`
			GRPC    string `json:"grpc_listen"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Message == "a2ad serving" && entry.GRPC != "" {
			return entry.GRPC
		}
	}
	t.Fatal("the binary logged no grpc_listen")
	return ""
}

// TestGRPCOverTLS: with --tls-cert the gRPC listener speaks TLS with the
// main listener's certificate, and a client certificate identifies its
// caller as over HTTPS; a plaintext client gets nowhere, and a client
// with no certificate and no key is UNAUTHENTICATED.
func TestGRPCOverTLS(t *testing.T) {
	skipShort(t, "runs the real binary")
	s := newTLSSetup(t)
	p := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"), "--keys", s.keys,
		"--tls-cert", s.certFile, "--tls-key", s.keyFile, "--tls-client-ca", s.ca.PEMFile, "--grpc-listen", "127.0.0.1:0")
	addr := grpcListenOf(t, p)
	dial := func(creds credentials.TransportCredentials) a2apb.A2AServiceClient {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return a2apb.NewA2AServiceClient(conn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	partner := dial(credentials.NewTLS(&tls.Config{RootCAs: s.ca.Pool(),
		Certificates: []tls.Certificate{s.ca.Client(t, pkix.Name{CommonName: "partner-a", Organization: []string{"Acme"}}).TLS}}))
	res, err := partner.SendMessage(ctx, grpcEcho(t, "tls-1"))
	if err != nil || res.GetTask().GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("partner-a by certificate over gRPC: %v, %v", res, err)
	}
	// The task is partner-a's: its key reads it, ops's does not.
	get := &a2apb.GetTaskRequest{Id: res.GetTask().GetId()}
	anon := dial(credentials.NewTLS(&tls.Config{RootCAs: s.ca.Pool()}))
	if _, err := anon.GetTask(metadata.AppendToOutgoingContext(ctx, "x-api-key", s.partnerKey), get); err != nil {
		t.Errorf("partner-a's key reads its task: %v", err)
	}
	if _, err := anon.GetTask(metadata.AppendToOutgoingContext(ctx, "x-api-key", s.opsKey), get); status.Code(err) != codes.NotFound {
		t.Errorf("ops reads partner-a's task: %v, want NOT_FOUND", err)
	}
	if _, err := anon.GetTask(ctx, get); status.Code(err) != codes.Unauthenticated {
		t.Errorf("no certificate, no key: %v, want UNAUTHENTICATED", err)
	}
	if _, err := dial(insecure.NewCredentials()).GetTask(ctx, get); status.Code(err) != codes.Unavailable {
		t.Errorf("plaintext client: %v, want UNAVAILABLE", err)
	}
}
