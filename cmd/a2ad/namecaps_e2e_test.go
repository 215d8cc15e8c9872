package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestNameListCapsOverBindings: on the real binary, a push config's
// authentication schemes (8 of at most 64 bytes), a message's extensions
// and a send's acceptedOutputModes (32 of at most 256 bytes) are refused
// past their caps with -32602 naming the field over JSON-RPC (both
// versions) and INVALID_ARGUMENT over gRPC, and nothing is stored (issue
// 25 item 4: ten 900 KB scheme lists made every read of their task slow).
func TestNameListCapsOverBindings(t *testing.T) {
	skipShort(t, "runs the real binary")
	p := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"), "--grpc-listen", "127.0.0.1:0")
	task := resultTask(t, rpc(t, p.base, "message/send", sendParams("caps-before", "demo::echo", map[string]any{"message": "hi"}, true)))
	id := task["id"].(string)
	many := make([]string, 1000)
	for i := range many {
		many[i] = "Bearer"
	}
	check := func(what string, answer map[string]any, want string) {
		t.Helper()
		e, _ := answer["error"].(map[string]any)
		if e == nil || e["code"] != float64(-32602) || e["message"] != want {
			t.Errorf("%s: answer %.300v, want -32602 %q", what, answer, want)
		}
	}
	check("0.3 set, 1000 schemes", rpc(t, p.base, "tasks/pushNotificationConfig/set", map[string]any{"taskId": id,
		"pushNotificationConfig": map[string]any{"url": "https://127.0.0.1:9/hook", "authentication": map[string]any{"schemes": many}}}),
		"Invalid parameters: /pushNotificationConfig/authentication/schemes: must have at most 8 elements")
	check("0.3 set, a long scheme", rpc(t, p.base, "tasks/pushNotificationConfig/set", map[string]any{"taskId": id,
		"pushNotificationConfig": map[string]any{"url": "https://127.0.0.1:9/hook", "authentication": map[string]any{"schemes": []string{strings.Repeat("s", 900<<10)}}}}),
		"Invalid parameters: /pushNotificationConfig/authentication/schemes/0: must be at most 64 bytes")
	withExt := sendParams("caps-ext", "demo::echo", map[string]any{"message": "hi"}, true)
	withExt["message"].(map[string]any)["extensions"] = many
	check("0.3 send, 1000 extensions", rpc(t, p.base, "message/send", withExt), "Invalid parameters: /message/extensions: must have at most 32 elements")
	withModes := sendParams("caps-modes", "demo::echo", map[string]any{"message": "hi"}, true)
	withModes["configuration"].(map[string]any)["acceptedOutputModes"] = []string{strings.Repeat("m", 257)}
	check("0.3 send, a long mode", rpc(t, p.base, "message/send", withModes), "Invalid parameters: /configuration/acceptedOutputModes/0: must be at most 256 bytes")

	// HTTP+JSON: 400 INVALID_ARGUMENT.
	modes, _ := json.Marshal(many)
	resp, body := postURL(t, nil, p.base+"/a2a/rest/message:send", []byte(`{"message":{"messageId":"caps-rest","role":"ROLE_USER",`+
		`"parts":[{"data":{"skill":"demo::echo","input":{"message":"hi"}}}]},"configuration":{"acceptedOutputModes":`+string(modes)+`}}`), nil)
	var st struct {
		Error struct {
			Code            int
			Status, Message string
		}
	}
	_ = json.Unmarshal(body, &st)
	if resp.StatusCode != http.StatusBadRequest || st.Error.Status != "INVALID_ARGUMENT" ||
		st.Error.Message != "Invalid parameters: /configuration/acceptedOutputModes: must have at most 32 elements" {
		t.Errorf("REST message:send, 1000 modes: HTTP %d %.300s", resp.StatusCode, body)
	}

	cl := dialGRPC(t, grpcListenOf(t, p))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	checkGRPC := func(what string, err error, want string) {
		t.Helper()
		if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || st.Message() != want {
			t.Errorf("gRPC %s: %v, want INVALID_ARGUMENT %q", what, err, want)
		}
	}
	req := grpcEcho(t, "caps-grpc-ext")
	req.Message.Extensions = many
	_, err := cl.SendMessage(ctx, req)
	checkGRPC("SendMessage, 1000 extensions", err, "Invalid parameters: /message/extensions: must have at most 32 elements")
	req = grpcEcho(t, "caps-grpc-modes")
	req.Configuration = &a2apb.SendMessageConfiguration{AcceptedOutputModes: many}
	_, err = cl.SendMessage(ctx, req)
	checkGRPC("SendMessage, 1000 modes", err, "Invalid parameters: /configuration/acceptedOutputModes: must have at most 32 elements")
	_, err = cl.CreateTaskPushNotificationConfig(ctx, &a2apb.TaskPushNotificationConfig{TaskId: id, Url: "https://127.0.0.1:9/hook",
		Authentication: &a2apb.AuthenticationInfo{Scheme: strings.Repeat("s", 900<<10)}})
	checkGRPC("CreateTaskPushNotificationConfig, a long scheme", err, "Invalid parameters: /authentication/scheme: must be at most 64 bytes")

	// Nothing was stored: one task, no webhook.
	if res, _ := rpc(t, p.base, "tasks/list", map[string]any{})["result"].(map[string]any); res == nil || res["total_size"] != float64(1) {
		t.Errorf("tasks/list after the refusals: %.300v, want the one task sent before", res)
	}
	if cfgs, _ := rpc(t, p.base, "tasks/pushNotificationConfig/list", map[string]any{"id": id})["result"].([]any); len(cfgs) != 0 {
		t.Errorf("webhooks after refused sets: %v", cfgs)
	}
}
