package jsonrpc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// TestSpecErrorMapping: each error of the spec's table (and a2ad's own)
// answers a 1.0 call with its code and message, and data an array whose
// first element is the ErrorInfo with its reason and domain; a 0.3 call
// gets the same code and message.
func TestSpecErrorMapping(t *testing.T) {
	var answer *a2a.Error
	ts := MustServe(t, &TaskService{GetFn: func(context.Context, tasks.Caller, string, *int) (*a2a.Task, error) { return nil, answer }})
	for _, c := range transporttest.ErrorCases {
		answer = c.Err
		for _, version := range []string{"1.0", ""} {
			req := newRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json",
				strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+map[string]string{"1.0": "GetTask", "": "tasks/get"}[version]+`","params":{"id":"t1"}}`))
			if version != "" {
				req.Header.Set("A2A-Version", version)
			}
			resp, body := testkit.RoundTrip(t, nil, req)
			var got struct {
				Error struct {
					Code    int             `json:"code"`
					Message string          `json:"message"`
					Data    json.RawMessage `json:"data"`
				} `json:"error"`
			}
			// JSON-RPC errors travel with HTTP 200, but for the two that
			// say the server cannot serve now (see TestUnavailable).
			wantHTTP := http.StatusOK
			if c.Err.Code == a2a.CodeShuttingDown || c.Err.Code == a2a.CodeStoreUnavailable {
				wantHTTP = http.StatusServiceUnavailable
			}
			if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != wantHTTP {
				t.Fatalf("%d (version %q): HTTP %d %s", c.Err.Code, version, resp.StatusCode, body)
			}
			if got.Error.Code != c.Err.Code || got.Error.Message != c.Err.Message {
				t.Errorf("%d (version %q): error %d %q", c.Err.Code, version, got.Error.Code, got.Error.Message)
			}
			if version == "" {
				continue
			}
			var details []struct {
				Type   string `json:"@type"`
				Reason string `json:"reason"`
				Domain string `json:"domain"`
			}
			if err := json.Unmarshal(got.Error.Data, &details); err != nil || len(details) == 0 ||
				details[0].Type != "type.googleapis.com/google.rpc.ErrorInfo" || details[0].Reason != c.Reason || details[0].Domain != c.Domain {
				t.Errorf("%d: data %s, want an array with ErrorInfo %s %s first", c.Err.Code, got.Error.Data, c.Reason, c.Domain)
			}
		}
	}
}
