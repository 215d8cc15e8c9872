package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
)

const conformanceCatalog = "../../examples/conformance/catalog.yaml"

// TestConformanceFixtureParts: the conformance catalogue, against the
// real binary, answers with file parts in each version's form and with a
// Message where a call chose one, over every binding; a resend of the
// messageId gets the same message, from the same task.
func TestConformanceFixtureParts(t *testing.T) {
	p := startBinary(t, conformanceCatalog, t.TempDir()+"/a2ad.db", "--grpc-listen", "127.0.0.1:0")
	send03 := func(id string) map[string]any {
		return rpc(t, p.base, "message/send", map[string]any{"message": map[string]any{"kind": "message", "messageId": id, "role": "user",
			"parts": []any{map[string]any{"kind": "text", "text": "hi"}}}})
	}
	send10 := func(id string) []byte {
		_, body := postURL(t, nil, p.base+"/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"`+id+
			`","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`), http.Header{"A2A-Version": {"1.0"}})
		return body
	}
	jsonOf := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	// 0.3: kind file, with bytes, name and mimeType.
	task := resultTask(t, send03("tck-artifact-file-1"))
	part := task["artifacts"].([]any)[0].(map[string]any)["parts"].([]any)[0]
	if got := jsonOf(part); got != `{"file":{"bytes":"dGNr","mimeType":"text/plain","name":"output.txt"},"kind":"file"}` {
		t.Errorf("0.3 file part: %s", got)
	}
	// 1.0: url, filename and mediaType.
	if body := send10("tck-artifact-file-url-1"); !strings.Contains(string(body),
		`"parts":[{"url":"https://example.com/output.txt","mediaType":"text/plain","filename":"output.txt"}]`) {
		t.Errorf("1.0 url part: %s", body)
	}
	// A Message: 1.0 {"message": ...}, 0.3 kind message.
	var r10 struct {
		Result struct{ Message map[string]any }
	}
	body := send10("tck-message-response-1")
	if err := json.Unmarshal(body, &r10); err != nil || jsonOf(r10.Result.Message["parts"]) != `[{"text":"Direct message response"}]` ||
		r10.Result.Message["role"] != "ROLE_AGENT" {
		t.Fatalf("1.0 message: %s", body)
	}
	if again := send10("tck-message-response-1"); string(again) != string(body) {
		t.Errorf("resend: %s, want the same message %s", again, body)
	}
	m03, _ := send03("tck-message-response-2")["result"].(map[string]any)
	if m03["kind"] != "message" || jsonOf(m03["parts"]) != `[{"kind":"text","text":"Direct message response"}]` {
		t.Errorf("0.3 message: %v", m03)
	}
	// The task that holds the reply is kept, and read as any other.
	held := resultTask(t, rpc(t, p.base, "tasks/get", map[string]any{"id": r10.Result.Message["taskId"]}))
	if state(held) != "completed" {
		t.Errorf("the reply's task: %v", held)
	}
	// HTTP+JSON, and a stream: the message alone.
	_, body = postURL(t, nil, p.base+"/a2a/rest/message:send", []byte(`{"message":{"messageId":"tck-message-response-3","role":"ROLE_USER","parts":[{"text":"hi"}]}}`), nil)
	if !strings.HasPrefix(string(body), `{"message":{`) || !strings.Contains(string(body), `"parts":[{"text":"Direct message response"}]`) {
		t.Errorf("REST message: %s", body)
	}
	resp, body := postURL(t, nil, p.base+"/a2a/rest/message:stream", []byte(`{"message":{"messageId":"tck-message-response-4","role":"ROLE_USER","parts":[{"text":"hi"}]}}`), nil)
	if resp.StatusCode != http.StatusOK || strings.Count(string(body), "data: ") != 1 || !strings.Contains(string(body), `data: {"message":{`) {
		t.Errorf("REST stream: %s", body)
	}
	// gRPC: the Message payload.
	cl := dialGRPC(t, grpcListenOf(t, p))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gr, err := cl.SendMessage(ctx, &a2apb.SendMessageRequest{Message: &a2apb.Message{
		MessageId: "tck-message-response-5", Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "hi"}}}}})
	if err != nil || gr.GetMessage().GetParts()[0].GetText() != "Direct message response" {
		t.Errorf("gRPC message: %v %v", gr, err)
	}
	st, err := cl.SendStreamingMessage(ctx, &a2apb.SendMessageRequest{Message: &a2apb.Message{
		MessageId: "tck-message-response-6", Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "hi"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil || first.GetMessage().GetParts()[0].GetText() != "Direct message response" {
		t.Errorf("gRPC stream: %v %v", first, err)
	}
	if ev, err := st.Recv(); err != io.EOF {
		t.Errorf("gRPC stream after the message: %v %v, want its end", ev, err)
	}
	// A scenario that answers with a task still does.
	if task := resultTask(t, send03("tck-complete-task-1")); state(task) != "completed" || statusMessage(task) != "Hello from TCK" {
		t.Errorf("complete-task: %v", task)
	}
}
