package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/internal/testkit"
)

// TestRESTCancelRefusesCrossSiteSimpleRequests runs the real binary with
// no keys (the README's run command, with a listed origin): the POST
// :cancel that any page can make a browser send without a preflight (no
// body, no Content-Type or a form's, its own Origin) is refused with 415
// and leaves the task working; a JSON request, as the official clients
// send, cancels it; and a page of the listed origin may send it bare.
func TestRESTCancelRefusesCrossSiteSimpleRequests(t *testing.T) {
	skipShort(t, "runs the real binary")
	p := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"), "--cors-origins", "https://app.example")
	base := p.base + restPath
	do := func(method, path, ct, body string, header ...string) (int, string) {
		t.Helper()
		resp, b := testkit.RoundTrip(t, nil, testkit.NewRequest(t, method, base+path, ct, body, header...))
		return resp.StatusCode, string(b)
	}
	sleeping := func(msgID string) string {
		t.Helper()
		code, body := do("POST", "/message:send", "application/json", `{"message":{"messageId":"`+msgID+`","role":"ROLE_USER",`+
			`"parts":[{"data":{"skill":"demo::sleep","input":{"seconds":60}}}]},"configuration":{"returnImmediately":true}}`)
		var out struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &out) != nil || out.Task.ID == "" {
			t.Fatalf("send: %d %s", code, body)
		}
		return out.Task.ID
	}
	state := func(id string) string {
		t.Helper()
		code, body := do("GET", "/tasks/"+id, "", "")
		var out struct {
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &out) != nil {
			t.Fatalf("get %s: %d %s", id, code, body)
		}
		return out.Status.State
	}
	const refused = `{"error":{"code":415,"status":"INVALID_ARGUMENT","message":"Content-Type must be application/a2a+json or application/json","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_REQUEST","domain":"github.com/a2ad/a2ad"}]}}`
	id := sleeping("m-csrf-1")
	for _, tt := range []struct {
		name, ct string
		header   []string
	}{
		{"no Content-Type, another page's origin", "", []string{"Origin", "https://evil.example"}},
		{"a form's type, another page's origin", "application/x-www-form-urlencoded", []string{"Origin", "https://evil.example"}},
		{"text/plain, another page's origin", "text/plain", []string{"Origin", "https://evil.example"}},
		{"no Content-Type, no origin", "", nil},
	} {
		if code, body := do("POST", "/tasks/"+id+":cancel", tt.ct, "", tt.header...); code != 415 || body != refused {
			t.Errorf("%s: %d %s, want 415 %s", tt.name, code, body, refused)
		}
	}
	if got := state(id); got != "TASK_STATE_WORKING" {
		t.Fatalf("after the refused cancels the task is %s, want working", got)
	}
	// As a2a-go's and @a2a-js/sdk's REST clients send it: no body, JSON type.
	if code, body := do("POST", "/tasks/"+id+":cancel", "application/json", ""); code != 200 || !strings.Contains(body, `"state":"TASK_STATE_CANCELED"`) {
		t.Fatalf("JSON cancel: %d %s", code, body)
	}
	// A page of the listed origin passes the CORS policy anyway.
	id2 := sleeping("m-csrf-2")
	if code, body := do("POST", "/tasks/"+id2+":cancel", "", "", "Origin", "https://app.example"); code != 200 || !strings.Contains(body, `"state":"TASK_STATE_CANCELED"`) {
		t.Fatalf("bare cancel from the listed origin: %d %s", code, body)
	}
}
