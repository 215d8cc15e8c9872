package rest_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// TestErrorMapping: each error of the spec's table (and a2ad's own)
// answers with its HTTP status and a google.rpc.Status body: that status,
// the code's name, the message, and the ErrorInfo with its reason and
// domain first in details.
func TestErrorMapping(t *testing.T) {
	var answer *a2a.Error
	ts, _ := serve(t, &transporttest.Service{GetFn: func(string, *int) (*a2a.Task, error) { return nil, answer }})
	for _, c := range transporttest.ErrorCases {
		answer = c.Err
		code, _, body := call(t, http.MethodGet, ts.URL+"/a2a/rest/tasks/t1", "", "")
		var got struct {
			Error struct {
				Code    int    `json:"code"`
				Status  string `json:"status"`
				Message string `json:"message"`
				Details []struct {
					Type   string `json:"@type"`
					Reason string `json:"reason"`
					Domain string `json:"domain"`
				} `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%d: %s: %v", c.Err.Code, body, err)
		}
		e := got.Error
		if code != c.HTTP || e.Code != c.HTTP || e.Status != c.Status || e.Message != c.Err.Message || len(e.Details) == 0 ||
			e.Details[0].Type != "type.googleapis.com/google.rpc.ErrorInfo" || e.Details[0].Reason != c.Reason || e.Details[0].Domain != c.Domain {
			t.Errorf("%d: HTTP %d %s\nwant %d %s %q, ErrorInfo %s %s", c.Err.Code, code, body, c.HTTP, c.Status, c.Err.Message, c.Reason, c.Domain)
		}
	}
}
