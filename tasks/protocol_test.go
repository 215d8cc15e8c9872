package tasks_test

import (
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// TestCallerProtocol: the policy decides a call for the caller's
// protocol: an MCP-only function runs for an MCP caller and is rejected
// for an A2A one, and the reverse; Skills lists each protocol's view.
func TestCallerProtocol(t *testing.T) {
	mcpOnly := fn(t, "demo::tool", echoBackend(), func(f *functions.Function) {
		f.Metadata = map[string]any{"mcp.expose": true, "mcp.tier": "partner"}
	})
	a2aOnly := fn(t, "demo::skill", echoBackend(), func(f *functions.Function) {
		f.Metadata = map[string]any{"a2a.expose": true, "a2a.tier": "partner"}
	})
	e := newEnv(t, tasks.Config{}, mcpOnly, a2aOnly)
	overA2A := tasks.Caller{ID: "c", Tiers: []string{"partner"}}
	overMCP := tasks.Caller{ID: "c", Tiers: []string{"partner"}, Protocol: exposure.MCP}
	for _, tc := range []struct {
		caller tasks.Caller
		id     string
		want   a2a.TaskState
	}{
		{overMCP, "demo::tool", a2a.StateCompleted},
		{overA2A, "demo::tool", a2a.StateRejected},
		{overA2A, "demo::skill", a2a.StateCompleted},
		{overMCP, "demo::skill", a2a.StateRejected},
	} {
		task, out, err := e.svc.Send(ctx, tc.caller, send(dataMsg("m-"+string(tc.caller.Protocol)+tc.id, tc.id, `{}`)))
		if err != nil {
			t.Fatal(err)
		}
		if task.Status.State != tc.want {
			t.Errorf("%s over %q: %s (%s), want %s", tc.id, tc.caller.Protocol, task.Status.State, out.Decision, tc.want)
		}
	}
	for _, tc := range []struct {
		caller tasks.Caller
		want   string
	}{{overA2A, "demo::skill"}, {overMCP, "demo::tool"}} {
		if got := e.svc.Skills(tc.caller); len(got) != 1 || got[0].ID != tc.want {
			t.Errorf("Skills over %q = %v, want %s alone", tc.caller.Protocol, got, tc.want)
		}
	}
}
