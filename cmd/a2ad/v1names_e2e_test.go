package main

import (
	"encoding/json"
	"testing"
)

// TestV1Names runs through the real server: a 1.0 call reads the proto
// field names beside the JSON names, and the problems the task service
// finds in a 1.0 call are located with the 1.0 names (a 0.3 call keeps
// the 0.3 ones).
func TestV1Names(t *testing.T) {
	m := startMain(t, nil)
	base := "http://" + m.Addr()

	// snake_case proto names, as a ProtoJSON client may send them.
	_, b := v1call(t, base, "1.0", "SendMessage", map[string]any{
		"message": map[string]any{"message_id": "n-1", "role": "ROLE_USER",
			"parts": []any{map[string]any{"data": map[string]any{"skill": "demo::echo", "input": map[string]any{"n": 1}}}}},
		"configuration": map[string]any{"history_length": 0},
	})
	task := v1result(t, b)["task"].(map[string]any)
	if task["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" || task["history"] != nil {
		t.Fatalf("SendMessage by proto names: %s", b)
	}
	id := task["id"].(string)
	_, b = v1call(t, base, "1.0", "GetTask", map[string]any{"id": id, "history_length": 1})
	if h, _ := v1result(t, b)["history"].([]any); len(h) != 1 {
		t.Fatalf("GetTask history_length 1: %s", b)
	}

	// A webhook the URL guard refuses (no --push-allow: loopback is not
	// allowed), in each version.
	const refusal = `webhook host "127.0.0.1" is a loopback address`
	tests := []struct {
		name, version, method string
		params                any
		want                  string
	}{
		{"1.0 create", "1.0", "CreateTaskPushNotificationConfig",
			map[string]any{"task_id": id, "url": "http://127.0.0.1:9/hook"}, "/url"},
		{"1.0 send", "1.0", "SendMessage", map[string]any{
			"message":       map[string]any{"messageId": "n-2", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}},
			"configuration": map[string]any{"taskPushNotificationConfig": map[string]any{"url": "http://127.0.0.1:9/hook"}},
		}, "/configuration/taskPushNotificationConfig/url"},
		{"0.3 set", "", "tasks/pushNotificationConfig/set",
			map[string]any{"taskId": id, "pushNotificationConfig": map[string]any{"url": "http://127.0.0.1:9/hook"}}, "/pushNotificationConfig/url"},
		{"0.3 send", "", "message/send", map[string]any{
			"message":       map[string]any{"kind": "message", "messageId": "n-3", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": "hi"}}},
			"configuration": map[string]any{"pushNotificationConfig": map[string]any{"url": "http://127.0.0.1:9/hook"}},
		}, "/configuration/pushNotificationConfig/url"},
	}
	for _, tc := range tests {
		_, b := v1call(t, base, tc.version, tc.method, tc.params)
		var resp struct {
			Error struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatal(err)
		}
		if want := "Invalid parameters: " + tc.want + ": " + refusal; resp.Error.Code != -32602 || resp.Error.Message != want {
			t.Errorf("%s: %s\nwant -32602 %q", tc.name, b, want)
		}
	}
}
