package v1_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

// fullMessage has every field of a message and every kind of part.
func fullMessage() a2a.Message {
	return a2a.Message{
		MessageID: "m-1", ContextID: "ctx-1", TaskID: "task-1", Role: a2a.RoleUser,
		Parts: []a2a.Part{
			{Kind: a2a.PartText, Text: "hello <world> & \u2028", Metadata: map[string]any{"lang": "en"}},
			a2a.DataPart(json.RawMessage(`{"skill":"demo::echo","input":{"n":[1,2.5,null]}}`)),
			{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "a.txt", MimeType: "text/plain", Bytes: "aGk="}},
			{Kind: a2a.PartFile, File: &a2a.FileContent{URI: "https://example.com/b.pdf?x=1&y=2"}, Metadata: map[string]any{"size": 3.0}},
		},
		ReferenceTaskIDs: []string{"task-0"},
		Extensions:       []string{"https://example.com/ext/v1"},
		Metadata:         map[string]any{"trace": "abc", "n": 2.0},
	}
}

func fullTask() a2a.Task {
	user := fullMessage()
	agent := a2a.Message{MessageID: "m-2", ContextID: "ctx-1", TaskID: "task-1", Role: a2a.RoleAgent,
		Parts: []a2a.Part{a2a.TextPart("done")}}
	return a2a.Task{
		ID: "task-1", ContextID: "ctx-1",
		Status:  a2a.TaskStatus{State: a2a.StateCompleted, Message: &agent, Timestamp: "2026-11-22T15:00:00.000Z"},
		History: []a2a.Message{user, agent},
		Artifacts: []a2a.Artifact{{
			ArtifactID: "a-1", Name: "demo::echo", Description: "the echo",
			Parts:      []a2a.Part{a2a.DataPart(json.RawMessage(`{ "message" : "hello" }`))},
			Extensions: []string{"urn:x"}, Metadata: map[string]any{"k": true},
		}},
		Metadata: map[string]any{"owner": "o"},
	}
}

func pushConfig() a2a.TaskPushConfig {
	return a2a.TaskPushConfig{TaskID: "task-1", PushNotificationConfig: a2a.PushConfig{
		ID: "cfg-1", URL: "https://hooks.example.com/a2a", Token: "tok",
		Authentication: &a2a.PushAuth{Schemes: []string{"Bearer", "Basic"}, Credentials: "secret"},
	}}
}

func TestEncodeV1Golden(t *testing.T) {
	msg := fullMessage()
	task := fullTask()
	minimal := a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateSubmitted}}
	status := a2a.StatusUpdateEvent{TaskID: "task-1", ContextID: "ctx-1", Final: true,
		Status:   a2a.TaskStatus{State: a2a.StateInputRequired, Message: &a2a.Message{MessageID: "q", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("which one?")}}, Timestamp: "2026-11-22T15:00:01.000Z"},
		Metadata: map[string]any{"seq": 4.0}}
	artifact := a2a.ArtifactUpdateEvent{TaskID: "task-1", ContextID: "ctx-1", Artifact: task.Artifacts[0], Append: true, LastChunk: true}
	cfg := pushConfig()
	bare := a2a.TaskPushConfig{TaskID: "task-1", PushNotificationConfig: a2a.PushConfig{URL: "https://hooks.example.com/x"}}

	cases := []struct {
		name string
		v    any // a v1.Result or a pointer to a core value
	}{
		{"part_text", &a2a.Part{Kind: a2a.PartText, Text: ""}},
		{"part_text_metadata", &msg.Parts[0]},
		{"part_data", &msg.Parts[1]},
		{"part_data_empty", &a2a.Part{Kind: a2a.PartData}},
		{"part_raw", &msg.Parts[2]},
		{"part_url", &msg.Parts[3]},
		{"message_full", &msg},
		{"message_minimal", &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("x")}}},
		{"message_no_parts", &a2a.Message{MessageID: "m", Role: a2a.RoleUser}},
		{"status", &task.Status},
		{"status_unknown", &a2a.TaskStatus{State: a2a.StateUnknown}},
		{"artifact", &task.Artifacts[0]},
		{"task_full", &task},
		{"task_minimal", &minimal},
		{"status_update", &status},
		{"artifact_update", &artifact},
		{"artifact_update_plain", &a2a.ArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("x")}}}},
		{"stream_task", &v1.StreamResponse{Task: &minimal}},
		{"stream_message", &v1.StreamResponse{Message: &msg}},
		{"stream_status_update", &v1.StreamResponse{StatusUpdate: &status}},
		{"stream_artifact_update", &v1.StreamResponse{ArtifactUpdate: &artifact}},
		{"push_config", &cfg},
		{"push_config_minimal", &bare},
		{"push_config_auth_without_scheme", &a2a.TaskPushConfig{TaskID: "t", PushNotificationConfig: a2a.PushConfig{ID: "c", URL: "u", Authentication: &a2a.PushAuth{}}}},
		{"push_list", &v1.PushConfigList{Configs: []a2a.TaskPushConfig{cfg, bare}}},
		{"push_list_empty", &v1.PushConfigList{}},
		{"task_list", &v1.TaskList[a2a.Task]{Tasks: []a2a.Task{minimal, task}, NextPageToken: "next-2", PageSize: 2, TotalSize: 5}},
		{"task_list_empty", &v1.TaskList[*a2a.Task]{PageSize: 50}},
		{"empty", v1.Empty{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := asResult(tc.v).AppendJSON(nil)
			if err != nil {
				t.Fatalf("AppendJSON: %v", err)
			}
			golden(t, "encode/"+tc.name, got)
			// Appending after a prefix writes the same bytes after it.
			again, err := asResult(tc.v).AppendJSON([]byte("prefix"))
			if err != nil || string(again) != "prefix"+string(got) {
				t.Errorf("AppendJSON(prefix) = %s, %v", again, err)
			}
		})
	}
}

// TestEncodeV1NoKind checks the 1.0 shapes carry none of the 0.3 markers.
func TestEncodeV1NoKind(t *testing.T) {
	task := fullTask()
	b, err := v1.AppendTask(nil, &task)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"kind"`, `"final"`, `"file"`, `"bytes"`, `"uri"`, `"mimeType"`, `"name":"a.txt"`, `"user"`, `"agent"`, `"completed"`} {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("1.0 task JSON contains %s:\n%s", s, b)
		}
	}
	ev := a2a.StatusUpdateEvent{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted}, Final: true}
	b, _ = v1.AppendStatusUpdate(nil, &ev)
	if want := `{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}`; string(b) != want {
		t.Errorf("status update = %s, want %s", b, want)
	}
}

func TestTaskStateV1(t *testing.T) {
	tests := []struct {
		state a2a.TaskState
		v1    string
	}{
		{a2a.StateSubmitted, "TASK_STATE_SUBMITTED"},
		{a2a.StateWorking, "TASK_STATE_WORKING"},
		{a2a.StateInputRequired, "TASK_STATE_INPUT_REQUIRED"},
		{a2a.StateAuthRequired, "TASK_STATE_AUTH_REQUIRED"},
		{a2a.StateCompleted, "TASK_STATE_COMPLETED"},
		{a2a.StateCanceled, "TASK_STATE_CANCELED"},
		{a2a.StateFailed, "TASK_STATE_FAILED"},
		{a2a.StateRejected, "TASK_STATE_REJECTED"},
		{a2a.StateUnknown, "TASK_STATE_UNSPECIFIED"},
	}
	for _, tc := range tests {
		if got := v1.StateName(tc.state); got != tc.v1 {
			t.Errorf("StateName(%q) = %q, want %q", tc.state, got, tc.v1)
		}
		if got, ok := v1.StateFromName(tc.v1); !ok || got != tc.state {
			t.Errorf("StateFromName(%q) = %q, %v; want %q", tc.v1, got, ok, tc.state)
		}
		s := a2a.TaskStatus{State: tc.state}
		b, err := v1.AppendStatus(nil, &s)
		if want := `{"state":"` + tc.v1 + `"}`; err != nil || string(b) != want {
			t.Errorf("AppendStatus(TaskStatus{%q}) = %s, %v; want %s", tc.state, b, err, want)
		}
	}
	if got := v1.StateName(""); got != "TASK_STATE_UNSPECIFIED" {
		t.Errorf(`StateName("") = %q, want TASK_STATE_UNSPECIFIED`, got)
	}
	for _, bad := range []string{"completed", "TASK_STATE_CANCELLED", "task_state_completed", "", "TASK_STATE_"} {
		if got, ok := v1.StateFromName(bad); ok {
			t.Errorf("StateFromName(%q) = %q, true; want false", bad, got)
		}
	}
	for _, r := range []struct {
		role a2a.Role
		v1   string
	}{{a2a.RoleUser, "ROLE_USER"}, {a2a.RoleAgent, "ROLE_AGENT"}, {"", "ROLE_UNSPECIFIED"}, {"bot", ""}} {
		if got := v1.RoleName(r.role); got != r.v1 {
			t.Errorf("RoleName(%q) = %q, want %q", r.role, got, r.v1)
		}
	}
}

// TestEncodeV1Errors checks values 1.0 cannot express are errors, never
// broken JSON.
func TestEncodeV1Errors(t *testing.T) {
	ok := a2a.TextPart("x")
	cases := []struct {
		name string
		v    any // a v1.Result or a pointer to a core value
		want string
	}{
		{"part kind empty", &a2a.Part{}, `part kind ""`},
		{"part kind image", &a2a.Part{Kind: "image"}, `part kind "image"`},
		{"file part without file", &a2a.Part{Kind: a2a.PartFile}, "file part without bytes or uri"},
		{"file part with neither", &a2a.Part{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "a"}}, "file part without bytes or uri"},
		{"invalid data", &a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(`{`)}, "unexpected end of JSON input"},
		{"unencodable metadata", &a2a.Part{Kind: a2a.PartText, Metadata: map[string]any{"f": func() {}}}, "unsupported type"},
		{"message role", &a2a.Message{MessageID: "m", Role: "bot", Parts: []a2a.Part{ok}}, `role "bot"`},
		{"message part", &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{ok, {}}}, `part kind ""`},
		{"status state", &a2a.TaskStatus{State: "paused"}, `task state "paused"`},
		{"status message", &a2a.TaskStatus{State: a2a.StateWorking, Message: &a2a.Message{Role: "x"}}, `role "x"`},
		{"task state", &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: "paused"}}, `task state "paused"`},
		{"task artifact", &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.StateCompleted}, Artifacts: []a2a.Artifact{{Parts: []a2a.Part{{}}}}}, `part kind ""`},
		{"task history", &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.StateCompleted}, History: []a2a.Message{{Role: "x"}}}, `role "x"`},
		{"status update", &a2a.StatusUpdateEvent{Status: a2a.TaskStatus{State: "x"}}, `task state "x"`},
		{"artifact update", &a2a.ArtifactUpdateEvent{Artifact: a2a.Artifact{Parts: []a2a.Part{{}}}}, `part kind ""`},
		{"stream response empty", &v1.StreamResponse{}, "stream response with 0 members set"},
		{"stream response two", &v1.StreamResponse{Task: &a2a.Task{}, Message: &a2a.Message{}}, "stream response with 2 members set"},
		{"stream response bad task", &v1.StreamResponse{Task: &a2a.Task{Status: a2a.TaskStatus{State: "x"}}}, `task state "x"`},
		{"task list nil", &v1.TaskList[*a2a.Task]{Tasks: []*a2a.Task{nil}}, "nil task in a task list"},
		{"task list bad task", &v1.TaskList[a2a.Task]{Tasks: []a2a.Task{{Status: a2a.TaskStatus{State: "x"}}}}, `task state "x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := asResult(tc.v).AppendJSON(nil)
			if err == nil {
				t.Fatalf("AppendJSON = %s, nil; want an error", b)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %q, want it to contain %q", err, tc.want)
			}
			// The whole response leaves dst as it was, for an error answer.
			dst := []byte("before")
			out, err := v1.AppendResult(dst, json.RawMessage(`1`), asResult(tc.v))
			if err == nil || string(out) != "before" {
				t.Errorf("AppendResultV1 = %q, %v; want \"before\" and an error", out, err)
			}
		})
	}
}

func TestAppendTaskListV1ValuesAndPointers(t *testing.T) {
	a, b := fullTask(), a2a.Task{ID: "t2", ContextID: "c2", Status: a2a.TaskStatus{State: a2a.StateWorking}}
	byValue, err := v1.AppendTaskList(nil, []a2a.Task{a, b}, "tok", 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	byPointer, err := v1.AppendTaskList(nil, []*a2a.Task{&a, &b}, "tok", 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(byValue, byPointer) {
		t.Errorf("[]Task and []*Task differ:\n%s\n%s", byValue, byPointer)
	}
	none, _ := v1.AppendTaskList[a2a.Task](nil, nil, "", 50, 0)
	if want := `{"tasks":[],"nextPageToken":"","pageSize":50,"totalSize":0}`; string(none) != want {
		t.Errorf("empty list = %s, want %s", none, want)
	}
}

func TestAppendResultV1Golden(t *testing.T) {
	task := fullTask()
	msg := fullMessage()
	cfg := pushConfig()
	cases := []struct {
		name string
		id   json.RawMessage
		v    any // a v1.Result or a pointer to a core value
	}{
		{"send_task", json.RawMessage(`1`), &v1.StreamResponse{Task: &task}},
		{"send_message", json.RawMessage(`"abc"`), &v1.StreamResponse{Message: &msg}},
		{"get_task", nil, &task},
		{"push_create", json.RawMessage(`7`), &cfg},
		{"push_list", json.RawMessage(`7`), &v1.PushConfigList{Configs: []a2a.TaskPushConfig{cfg}}},
		{"push_delete", json.RawMessage(`7`), v1.Empty{}},
		{"list_tasks", json.RawMessage(`8`), &v1.TaskList[*a2a.Task]{Tasks: []*a2a.Task{&task}, PageSize: 1, TotalSize: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v1.AppendResult([]byte("x"), tc.id, asResult(tc.v))
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != 'x' {
				t.Fatalf("AppendResultV1 dropped the prefix: %s", got)
			}
			golden(t, "response/"+tc.name, got[1:])
			// It is what AppendResultStart, the value and '}' give.
			v, _ := asResult(tc.v).AppendJSON(nil)
			if want := a2a.AppendResult(nil, tc.id, v); !bytes.Equal(got[1:], want) {
				t.Errorf("AppendResultV1 = %s\nwant %s", got[1:], want)
			}
		})
	}
}

// resultFunc is a function as a v1.Result.
type resultFunc func([]byte) ([]byte, error)

func (f resultFunc) AppendJSON(dst []byte) ([]byte, error) { return f(dst) }

// asResult returns v as a v1.Result: v is one already, or a pointer to a
// core value, written by its encoder.
func asResult(v any) v1.Result {
	switch v := v.(type) {
	case v1.Result:
		return v
	case *a2a.Part:
		return resultFunc(func(dst []byte) ([]byte, error) { return v1.AppendPart(dst, v) })
	case *a2a.Message:
		return resultFunc(func(dst []byte) ([]byte, error) { return v1.AppendMessage(dst, v) })
	case *a2a.TaskStatus:
		return resultFunc(func(dst []byte) ([]byte, error) { return v1.AppendStatus(dst, v) })
	case *a2a.Artifact:
		return resultFunc(func(dst []byte) ([]byte, error) { return v1.AppendArtifact(dst, v) })
	case *a2a.Task:
		return v1.TaskResult{Task: v}
	case *a2a.StatusUpdateEvent:
		return resultFunc(func(dst []byte) ([]byte, error) { return v1.AppendStatusUpdate(dst, v) })
	case *a2a.ArtifactUpdateEvent:
		return resultFunc(func(dst []byte) ([]byte, error) { return v1.AppendArtifactUpdate(dst, v) })
	case *a2a.TaskPushConfig:
		return v1.PushConfigResult{Config: v}
	}
	panic(fmt.Sprintf("no 1.0 encoder for %T", v))
}
