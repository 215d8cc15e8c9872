package jsonrpc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport/jsonrpc"
)

// TestSendOutcomeAudited: the Outcome Send returns is what the call's
// audit record says of the function and the policy's decision, in both
// protocol versions, with an error too.
func TestSendOutcomeAudited(t *testing.T) {
	rejected := &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.StateRejected}}
	for _, tt := range []struct {
		name    string
		method  string
		outcome tasks.Outcome
		err     error
		want    map[string]any
	}{
		{"0.3, denied by tier", "message/send", tasks.Outcome{FunctionID: "pricing::quote", Decision: exposure.TierMismatch}, nil,
			map[string]any{"function_id": "pricing::quote", "decision": "tier_mismatch", "outcome": "policy_denied", "reason": "denied_tier", "task_id": "t1"}},
		{"1.0, unknown function", "SendMessage", tasks.Outcome{Decision: exposure.UnknownFunction}, nil,
			map[string]any{"function_id": "", "decision": "unknown_function", "outcome": "policy_denied", "reason": "denied_unknown"}},
		{"0.3, exposed, then refused", "message/send", tasks.Outcome{FunctionID: "demo::echo", Decision: exposure.Exposed}, tasks.ErrCallerBusy,
			map[string]any{"function_id": "demo::echo", "decision": "exposed", "outcome": "transport_denied", "reason": "over_capacity", "code": float64(-32050)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			auditLog := &syncBuffer{}
			fake := &TaskService{
				SendFn: func(context.Context, tasks.Caller, a2a.SendParams) (*a2a.Task, error) {
					if tt.err != nil {
						return nil, tt.err
					}
					return rejected, nil
				},
				Outcome: tt.outcome,
			}
			ts := MustServe(t, fake, func(c *jsonrpc.Config) { c.Audit = audit.Logger(zerolog.New(auditLog)) })
			params := `{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}`
			if tt.method == "SendMessage" {
				params = `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`
			}
			rpc(t, ts, `{"jsonrpc":"2.0","id":1,"method":"`+tt.method+`","params":`+params+`}`)
			log := auditLog.String()
			var rec map[string]any
			if err := json.Unmarshal([]byte(log), &rec); err != nil || strings.Count(log, "\n") != 1 {
				t.Fatalf("want one record: %v %s", err, log)
			}
			if rec["level"] != "info" {
				t.Errorf("record level = %v, want info; record %s", rec["level"], log)
			}
			for k, v := range tt.want {
				if rec[k] != v {
					t.Errorf("record %s = %v, want %v; record %s", k, rec[k], v, log)
				}
			}
		})
	}
}

// TestVersionNotSupportedAudited: a version a2ad does not speak (-32009)
// is the client's error, audited as unsupported, not as the server's.
func TestVersionNotSupportedAudited(t *testing.T) {
	auditLog := &syncBuffer{}
	ts := MustServe(t, &TaskService{}, func(c *jsonrpc.Config) { c.Audit = audit.Logger(zerolog.New(auditLog)) })
	req := newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t1"}}`))
	req.Header.Set("A2A-Version", "2.0")
	if _, body := testkit.RoundTrip(t, nil, req); !strings.Contains(string(body), `"code":-32009`) {
		t.Fatalf("A2A-Version 2.0: %s, want -32009", body)
	}
	want := `"transport":"jsonrpc"`
	rec := auditLog.String()
	for _, w := range []string{want, `"outcome":"client_error","reason":"unsupported","code":-32009`} {
		if !strings.Contains(rec, w) {
			t.Errorf("audit record lacks %s: %s", w, rec)
		}
	}
}
