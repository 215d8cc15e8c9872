package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
)

// defaultSkillCatalog takes plain text: its default skill answers with
// its input upper-cased (so {"TEXT": "HELLO", ...} for "hello").
const defaultSkillCatalog = `default_skill: chat::shout
functions:
  - id: chat::shout
    metadata: {a2a.expose: true}
    input_schema:
      type: object
      required: [text]
      properties: {text: {type: string, minLength: 1}}
    exec: {argv: ["./shout.sh"]}
`

// TestDefaultSkillOverBindings: plain text, naming no skill, goes to the
// catalogue's default skill over JSON-RPC, HTTP+JSON and gRPC, against
// the real binary, and the function's answer comes back as the task's
// artifact.
func TestDefaultSkillOverBindings(t *testing.T) {
	catalog, store := crashSetup(t, defaultSkillCatalog)
	putScript(t, filepath.Join(filepath.Dir(catalog), "shout.sh"), "#!/bin/sh\ntr a-z A-Z\n")
	p := startBinary(t, catalog, store, "--grpc-listen", "127.0.0.1:0")
	answer := func(what string, body []byte) {
		t.Helper()
		var got struct {
			Result struct{ Task map[string]any }
			Task   map[string]any
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%s: %v %s", what, err, body)
		}
		task := got.Task
		if task == nil {
			task = got.Result.Task
		}
		arts, _ := task["artifacts"].([]any)
		if task["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" || len(arts) != 1 {
			t.Fatalf("%s: %s", what, body)
		}
		data := arts[0].(map[string]any)["parts"].([]any)[0].(map[string]any)["data"].(map[string]any)
		if data["TEXT"] != "HELLO" || data["MESSAGEID"] == nil {
			t.Fatalf("%s: artifact %v", what, data)
		}
	}
	text := func(id string) string {
		return `{"message":{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"text":"hello"}]}}`
	}
	_, body := postURL(t, nil, p.base+"/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`+text("d-rpc")+`}`),
		http.Header{"A2A-Version": {"1.0"}})
	answer("JSON-RPC", body)
	_, body = postURL(t, nil, p.base+"/a2a/rest/message:send", []byte(text("d-rest")), nil)
	answer("HTTP+JSON", body)

	cl := dialGRPC(t, grpcListenOf(t, p))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.SendMessage(ctx, &a2apb.SendMessageRequest{Message: &a2apb.Message{
		MessageId: "d-grpc", Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "hello"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	task := resp.GetTask()
	if task.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED || len(task.GetArtifacts()) != 1 ||
		task.GetArtifacts()[0].GetParts()[0].GetData().GetStructValue().GetFields()["TEXT"].GetStringValue() != "HELLO" {
		t.Fatalf("gRPC: %v", task)
	}

	// Empty text fails the function's input schema: -32602 naming it.
	empty := `{"message":{"messageId":"d-empty","role":"ROLE_USER","parts":[{"data":{"a":1}}]}}`
	_, body = postURL(t, nil, p.base+"/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`+empty+`}`),
		http.Header{"A2A-Version": {"1.0"}})
	var e struct {
		Error struct {
			Code    int
			Message string
		}
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Code != -32602 || e.Error.Message != "Invalid parameters: input does not match the schema of skill chat::shout: /text: length must be >= 1, but got 0" {
		t.Fatalf("empty text: %s", body)
	}
}
