package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// elicits is the _meta of a request whose client declares form-mode
// elicitation (the empty object: form alone).
const elicits = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// elicitFixture serves demo.echo, whose task "e1" asks "Approve?" (the
// question's message id q1) until it is answered, then completes; every
// message sent is kept in sent.
type elicitFixture struct {
	*fixture
	state  a2a.TaskState
	sent   []a2a.SendParams
	cancel []string
}

func newElicitFixture(t *testing.T) *elicitFixture {
	ef := &elicitFixture{fixture: newFixture(t, nil), state: a2a.StateInputRequired}
	first := a2a.Message{Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"skill":"demo::echo","input":{}}`))}}
	task := func() *a2a.Task {
		st := a2a.TaskStatus{State: ef.state}
		if ef.state == a2a.StateInputRequired {
			st.Message = &a2a.Message{MessageID: "q1", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("Approve?")}}
		}
		tk := &a2a.Task{ID: "e1", Status: st, History: []a2a.Message{first}}
		if ef.state == a2a.StateCompleted {
			tk.Artifacts = []a2a.Artifact{{Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"ok":true}`))}}}
		}
		return tk
	}
	ef.fake.SendFn = func(p a2a.SendParams) (*a2a.Task, error) {
		ef.sent = append(ef.sent, p)
		if p.Message.TaskID != "" {
			ef.state = a2a.StateCompleted
		}
		return task(), nil
	}
	ef.fake.GetFn = func(id string, _ *int) (*a2a.Task, error) {
		if id != "e1" {
			return nil, tasks.ErrNotFound
		}
		return task(), nil
	}
	ef.fake.CancelFn = func(id string) (*a2a.Task, error) {
		ef.cancel = append(ef.cancel, id)
		ef.state = a2a.StateCanceled
		return task(), nil
	}
	return ef
}

// state is the requestState a2ad gives for task "e1".
const state = "a2ad.1.ZTE"

// TestElicitation: a call whose function asks, from a client that
// declares form-mode elicitation, answers MRTR's InputRequiredResult; the
// retry with an accepted answer sends the arguments with the answer over
// them to the waiting task and answers the result; a client that does not
// declare form mode gets today's isError.
func TestElicitation(t *testing.T) {
	f := newElicitFixture(t)
	res, e, raw := f.rpc(t, "partner-key", "tools/call", `{"name":"demo.echo","arguments":{"message":"hi","n":1},`+elicits+`}`)
	if e != nil {
		t.Fatalf("tools/call: %s", raw)
	}
	want := `{"resultType":"input_required","requestState":"` + state + `","inputRequests":{"input-q1":{"method":"elicitation/create",
		"params":{"mode":"form","message":"Approve?","requestedSchema":{"type":"object","properties":{"message":{"type":"string","default":"hi"}}}}}},
		"_meta":{"io.a2ad/task-id":"e1","io.a2ad/task-state":"input-required"}}`
	if !sameJSON(t, res, want) {
		t.Errorf("the question: %s\nwant %s", res, want)
	}
	for _, meta := range []string{`"_meta":{}`, `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}`} {
		f.state = a2a.StateInputRequired
		res, e, raw = f.rpc(t, "partner-key", "tools/call", `{"name":"demo.echo",`+meta+`}`)
		if e != nil || !strings.Contains(string(res), `"isError":true`) || strings.Contains(string(res), "inputRequests") {
			t.Errorf("without form mode (%s): %s", meta, raw)
		}
	}

	f.sent = nil
	res, e, raw = f.rpc(t, "partner-key", "tools/call", `{"name":"demo.echo","arguments":{"message":"hi","n":1},"requestState":"`+state+`",
		"inputResponses":{"input-q1":{"action":"accept","content":{"message":"yes","approved":true}}},`+elicits+`}`)
	if e != nil || !strings.Contains(string(res), `"structuredContent":{"ok":true}`) {
		t.Fatalf("the retry: %s", raw)
	}
	if len(f.sent) != 1 || f.sent[0].Message.TaskID != "e1" || f.sent[0].Message.MessageID != "mcp:input-q1" ||
		string(f.sent[0].Message.Parts[0].Data) != `{"approved":true,"message":"yes","n":1}` {
		t.Errorf("the answer sent: %+v", f.sent)
	}
}

// TestElicitationRetries: each way a retry can go without an answer to
// send: the question again, a decline (the task cancelled), the task
// still working, ended, another tool's, unknown, or a state a2ad did not
// give.
func TestElicitationRetries(t *testing.T) {
	f := newElicitFixture(t)
	retry := func(state, responses string) (json.RawMessage, *rpcError, []byte) {
		t.Helper()
		return f.rpc(t, "partner-key", "tools/call", `{"name":"demo.echo","requestState":"`+state+`","inputResponses":{`+responses+`},`+elicits+`}`)
	}
	if res, _, raw := retry(state, `"input-old":{"action":"accept"}`); !strings.Contains(string(res), `"resultType":"input_required"`) ||
		!strings.Contains(string(res), `"input-q1"`) || len(f.sent) != 0 {
		t.Errorf("an answer to another question: %s", raw)
	}
	if _, e, raw := retry(state, `"input-q1":{"action":"maybe"}`); e == nil || e.Message != "Invalid params: inputResponses.input-q1.action: must be accept, decline or cancel" {
		t.Errorf("a bad action: %s", raw)
	}
	if res, _, raw := retry(state, `"input-q1":{"action":"decline"}`); !strings.Contains(string(res), `"isError":true`) ||
		!strings.Contains(string(res), "The question was declined: the call is canceled.") || len(f.cancel) != 1 || len(f.sent) != 0 {
		t.Errorf("a declined question: %s (cancelled %v)", raw, f.cancel)
	}
	if _, e, raw := retry(state, `"input-q1":{"action":"accept"}`); e == nil || e.Code != -32602 ||
		e.Message != "Invalid params: requestState: the call it continues has ended (canceled): its task e1 holds the outcome" {
		t.Errorf("a stale state: %s", raw)
	}
	f.state = a2a.StateWorking
	if res, _, raw := retry(state, `"input-q1":{"action":"accept"}`); !sameJSON(t, res, `{"resultType":"input_required","requestState":"`+state+`",
		"_meta":{"io.a2ad/task-id":"e1","io.a2ad/task-state":"working"}}`) {
		t.Errorf("a working task: %s", raw)
	}
	_, _, unknown := retry("a2ad.1.eDk", `"input-q1":{"action":"accept"}`)
	if !strings.Contains(string(unknown), `"error":{"code":-32602,"message":"Failed to retrieve task: Task not found"}`) {
		t.Errorf("an unknown task: %s", unknown)
	}
	for _, bad := range []string{"e1", "a2ad.1.", "a2ad.1.!!", "a2ad.2.ZTE"} {
		if _, e, raw := retry(bad, ``); e == nil || e.Message != "Invalid params: requestState: is not one this server gave" {
			t.Errorf("state %q: %s", bad, raw)
		}
	}
	f.state = a2a.StateInputRequired
	_, e, raw := f.rpc(t, "partner-key", "tools/call", `{"name":"text.wordcount","requestState":"`+state+`",`+elicits+`}`)
	if e == nil || e.Message != "Invalid params: requestState: continues a call of another tool" {
		t.Errorf("another tool's state: %s", raw)
	}
}

// TestResultTypeComplete: on revision 2026-07-28 a call's result (and a
// resource read's) says
// "resultType": "complete", as the SDK's own handlers' do (the TypeScript
// SDK's clients refuse one without it, also at the end of an elicitation);
// an earlier revision's does not.
func TestResultTypeComplete(t *testing.T) {
	f := newElicitFixture(t)
	f.state = a2a.StateCompleted
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},
		"io.modelcontextprotocol/clientCapabilities":{}}`
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo.echo",` + meta + `}}`
	status, _, raw := f.post(t, "partner-key", body, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "demo.echo")
	if status != 200 || !strings.Contains(string(raw), `"result":{"resultType":"complete","_meta":{"io.a2ad/task-id":"e1"`) {
		t.Errorf("a call on 2026-07-28: HTTP %d %s", status, raw)
	}
	body = `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"a2ad://tasks/e1",` + meta + `}}`
	status, _, raw = f.post(t, "partner-key", body, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "resources/read", "Mcp-Name", "a2ad://tasks/e1")
	if status != 200 || !strings.Contains(string(raw), `"result":{"resultType":"complete",`) {
		t.Errorf("a read on 2026-07-28: HTTP %d %s", status, raw)
	}
	if res, _, raw := f.rpc(t, "partner-key", "tools/call", `{"name":"demo.echo"}`); strings.Contains(string(res), "resultType") {
		t.Errorf("a call on 2025-11-25: %s", raw)
	}
}
