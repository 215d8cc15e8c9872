package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport/mcp"
)

// declared is the _meta of a request whose client declares the tasks
// extension.
const declared = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// taskID is a UUIDv7 made 2026-11-29T06:00:00.000Z, as a2ad's are.
const taskID = "01a225e3-8f00-7000-8000-000000000001"

func handleFixture(t *testing.T) *fixture {
	return newFixtureWith(t, nil, func(c *mcp.Config) {
		c.TaskAfter = 50 * time.Millisecond
		c.PollInterval = 2 * time.Second
		c.Retention = time.Hour
	})
}

// TestTaskHandle: a call of a client that declares the tasks extension,
// still running when it answers, answers with a handle naming its task;
// the same call without the declaration answers as before.
func TestTaskHandle(t *testing.T) {
	f := handleFixture(t)
	f.fake.SendFn = func(a2a.SendParams) (*a2a.Task, error) {
		return &a2a.Task{ID: taskID, Status: a2a.TaskStatus{State: a2a.StateWorking, Timestamp: "2026-11-29T06:00:01.500Z"}}, nil
	}
	res, e, raw := f.rpc(t, "partner-key", "tools/call", `{"name":"demo.echo",`+declared+`}`)
	if e != nil {
		t.Fatalf("tools/call: %s", raw)
	}
	want := `{"resultType":"task","taskId":"` + taskID + `","status":"working","createdAt":"2026-11-29T06:00:00.000Z",
		"lastUpdatedAt":"2026-11-29T06:00:01.500Z","ttlMs":null,"pollIntervalMs":2000,
		"_meta":{"io.a2ad/task-id":"` + taskID + `","io.a2ad/task-state":"working"}}`
	if !sameJSON(t, res, want) {
		t.Errorf("the handle: %s\nwant %s", res, want)
	}
	res, e, raw = f.rpc(t, "partner-key", "tools/call", `{"name":"demo.echo"}`)
	if e != nil || !strings.Contains(string(res), `"isError":true`) || strings.Contains(string(res), "resultType") {
		t.Errorf("without the declaration: %s", raw)
	}
}

// TestTaskMethods: tasks/get shows each state as the extension's status
// (a failed function is a completed call whose result says isError);
// tasks/update answers the question a task waits on, by its key;
// tasks/cancel cancels; another caller's task and a missing one get the
// same bytes; a request without the declaration gets -32021.
func TestTaskMethods(t *testing.T) {
	f := handleFixture(t)
	question := &a2a.Message{MessageID: "q1", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("Approve?")}}
	states := map[string]a2a.TaskStatus{
		"done":   {State: a2a.StateCompleted, Timestamp: "2026-11-29T06:00:02.000Z"},
		"failed": {State: a2a.StateFailed, Message: &a2a.Message{Parts: []a2a.Part{a2a.TextPart("no")}}},
		"asks":   {State: a2a.StateInputRequired, Message: question},
		"gone":   {State: a2a.StateCanceled},
	}
	f.fake.GetFn = func(id string, _ *int) (*a2a.Task, error) {
		st, ok := states[strings.TrimPrefix(id, taskID)]
		if !ok {
			return nil, tasks.ErrNotFound
		}
		task := &a2a.Task{ID: id, Status: st}
		if st.State == a2a.StateCompleted {
			task.Artifacts = []a2a.Artifact{{Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"n":1}`))}}}
		}
		return task, nil
	}
	get := func(id string) json.RawMessage {
		res, e, raw := f.rpc(t, "partner-key", "tasks/get", `{"taskId":"`+taskID+id+`",`+declared+`}`)
		if e != nil {
			t.Fatalf("tasks/get %s: %s", id, raw)
		}
		return res
	}
	if res := get("done"); !sameJSON(t, res, `{"resultType":"complete","taskId":"`+taskID+`done","status":"completed",
		"createdAt":"2026-11-29T06:00:02.000Z","lastUpdatedAt":"2026-11-29T06:00:02.000Z","ttlMs":3600000,"pollIntervalMs":2000,
		"result":{"resultType":"complete","content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1},
		"_meta":{"io.a2ad/task-id":"`+taskID+`done","io.a2ad/task-state":"completed"}}}`) {
		t.Errorf("completed: %s", res)
	}
	for id, want := range map[string]string{"failed": `"status":"completed"`, "gone": `"status":"cancelled"`} {
		if res := get(id); !strings.Contains(string(res), want) {
			t.Errorf("%s: %s, want %s", id, res, want)
		}
	}
	if res := get("failed"); !strings.Contains(string(res), `"isError":true`) {
		t.Errorf("a failed function's result: %s", res)
	}
	if res := get("asks"); !strings.Contains(string(res), `"status":"input_required"`) ||
		!strings.Contains(string(res), `"inputRequests":{"input-q1":{"method":"elicitation/create","params":{"mode":"form","message":"Approve?","requestedSchema":{"type":"object","properties":{}}}}}`) {
		t.Errorf("input required: %s", res)
	}

	var sent []a2a.SendParams
	f.fake.SendFn = func(p a2a.SendParams) (*a2a.Task, error) {
		sent = append(sent, p)
		return &a2a.Task{ID: p.Message.TaskID, Status: a2a.TaskStatus{State: a2a.StateWorking}}, nil
	}
	update := func(key string) string {
		_, e, raw := f.rpc(t, "partner-key", "tasks/update", `{"taskId":"`+taskID+`asks","inputResponses":{"`+key+`":{"action":"accept","content":{"approved":true}}},`+declared+`}`)
		if e != nil {
			t.Fatalf("tasks/update: %s", raw)
		}
		return string(raw)
	}
	if raw := update("input-old"); !strings.Contains(raw, `"result":{"resultType":"complete"}`) || len(sent) != 0 {
		t.Errorf("an answer to no outstanding question: %s, sent %d messages", raw, len(sent))
	}
	update("input-q1")
	if len(sent) != 1 || sent[0].Message.TaskID != taskID+"asks" || string(sent[0].Message.Parts[0].Data) != `{"approved":true}` ||
		sent[0].Blocking == nil || *sent[0].Blocking {
		t.Errorf("the answer sent: %+v", sent)
	}

	_, e, raw := f.rpc(t, "partner-key", "tasks/update", `{"taskId":"`+taskID+`asks","inputResponses":{"input-q1":{"action":"accept","content":"yes"}},`+declared+`}`)
	if e == nil || e.Code != -32602 || e.Message != "Invalid params: inputResponses.input-q1.content: must be an object" || len(sent) != 1 {
		t.Errorf("an answer that is not an object: %s", raw)
	}

	cancelled := ""
	f.fake.CancelFn = func(id string) (*a2a.Task, error) {
		if !strings.HasPrefix(id, taskID) {
			return nil, tasks.ErrNotFound
		}
		cancelled = id
		return &a2a.Task{ID: id, Status: a2a.TaskStatus{State: a2a.StateCanceled}}, nil
	}
	if _, e, raw := f.rpc(t, "partner-key", "tasks/cancel", `{"taskId":"`+taskID+`asks",`+declared+`}`); e != nil || cancelled != taskID+"asks" {
		t.Errorf("tasks/cancel: %s (cancelled %q)", raw, cancelled)
	}
	cancelled = ""
	if _, e, raw := f.rpc(t, "partner-key", "tasks/update", `{"taskId":"`+taskID+`asks","inputResponses":{"input-q1":{"action":"decline"}},`+declared+`}`); e != nil || cancelled != taskID+"asks" || len(sent) != 1 {
		t.Errorf("a declined question: %s (cancelled %q, %d sent)", raw, cancelled, len(sent))
	}
	f.fake.CancelFn = func(id string) (*a2a.Task, error) {
		if id == taskID+"done" {
			return nil, tasks.ErrNotCancelable
		}
		return nil, tasks.ErrNotFound
	}
	if res, e, raw := f.rpc(t, "partner-key", "tasks/cancel", `{"taskId":"`+taskID+`done",`+declared+`}`); e != nil || string(res) != `{"resultType":"complete"}` {
		t.Errorf("tasks/cancel of an ended task: %s", raw)
	}

	_, e1, missing := f.rpc(t, "partner-key", "tasks/get", `{"taskId":"nobody's",`+declared+`}`)
	_, _, other := f.rpc(t, "internal-key", "tasks/get", `{"taskId":"nobody's",`+declared+`}`)
	if e1 == nil || e1.Code != -32602 || e1.Message != "Failed to retrieve task: Task not found" || string(missing) != string(other) {
		t.Errorf("unknown tasks: %s\nand %s", missing, other)
	}
	for _, m := range []string{"tasks/cancel", "tasks/update"} {
		if _, _, raw := f.rpc(t, "partner-key", m, `{"taskId":"nobody's",`+declared+`}`); string(raw) != string(missing) {
			t.Errorf("%s of an unknown task: %s", m, raw)
		}
	}
	_, e, raw = f.rpc(t, "partner-key", "tasks/get", `{"taskId":"`+taskID+`done"}`)
	if e == nil || e.Code != -32021 || e.Message != "Missing required client capability" ||
		string(e.Data) != `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}` {
		t.Errorf("without the declaration: %s", raw)
	}
}
