package rest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestRoute pins the binding's paths and verbs: each operation, the ids
// its path names, and 404 or 405 (with Allow) for what names none.
func TestRoute(t *testing.T) {
	tests := []struct {
		method, path string
		want         target
		status       int
		allow        string
	}{
		{"POST", "/message:send", target{op: opSend}, 0, ""},
		{"POST", "/message:stream", target{op: opStream}, 0, ""},
		{"GET", "/tasks", target{op: opList}, 0, ""},
		{"GET", "/extendedAgentCard", target{op: opCard}, 0, ""},
		{"GET", "/tasks/t1", target{op: opGet, taskID: "t1"}, 0, ""},
		{"GET", "/tasks/a%3Ab", target{op: opGet, taskID: "a:b"}, 0, ""},
		{"POST", "/tasks/t1:cancel", target{op: opCancel, taskID: "t1"}, 0, ""},
		{"GET", "/tasks/t1:subscribe", target{op: opSubscribe, taskID: "t1"}, 0, ""},
		{"POST", "/tasks/t1:subscribe", target{op: opSubscribe, taskID: "t1"}, 0, ""},
		{"POST", "/tasks/t1/pushNotificationConfigs", target{op: opPushCreate, taskID: "t1"}, 0, ""},
		{"GET", "/tasks/t1/pushNotificationConfigs", target{op: opPushList, taskID: "t1"}, 0, ""},
		{"GET", "/tasks/t1/pushNotificationConfigs/c1", target{op: opPushGet, taskID: "t1", configID: "c1"}, 0, ""},
		{"DELETE", "/tasks/t1/pushNotificationConfigs/c1", target{op: opPushDelete, taskID: "t1", configID: "c1"}, 0, ""},
		// An id that is no valid escape, or none: the operation answers
		// "not found".
		{"GET", "/tasks/%zz", target{op: opGet}, 0, ""},
		{"GET", "/tasks/", target{op: opGet}, 0, ""},
		{"POST", "/tasks/:cancel", target{op: opCancel}, 0, ""},

		// HEAD is served as GET, but on a stream.
		{"HEAD", "/tasks", target{op: opList}, 0, ""},
		{"HEAD", "/tasks/t1", target{op: opGet, taskID: "t1"}, 0, ""},
		{"HEAD", "/extendedAgentCard", target{op: opCard}, 0, ""},
		{"HEAD", "/tasks/t1/pushNotificationConfigs", target{op: opPushList, taskID: "t1"}, 0, ""},
		{"HEAD", "/tasks/t1/pushNotificationConfigs/c1", target{op: opPushGet, taskID: "t1", configID: "c1"}, 0, ""},
		{"HEAD", "/tasks/t1:subscribe", target{}, 405, "GET, POST"},
		{"HEAD", "/message:send", target{}, 405, "POST"},

		{"GET", "/message:send", target{}, 405, "POST"},
		{"DELETE", "/tasks/t1", target{}, 405, "GET, HEAD"},
		{"PUT", "/tasks/t1:subscribe", target{}, 405, "GET, POST"},
		{"PATCH", "/tasks/t1/pushNotificationConfigs", target{}, 405, "GET, HEAD, POST"},
		{"POST", "/tasks/t1/pushNotificationConfigs/c1", target{}, 405, "GET, HEAD, DELETE"},

		{"GET", "/", target{}, 404, ""},
		{"GET", "", target{}, 404, ""},
		{"POST", "/message:sent", target{}, 404, ""},
		{"POST", "/tasks/t1:pause", target{}, 404, ""},
		{"GET", "/tasks/t1/artifacts", target{}, 404, ""},
		{"GET", "/tasks/t1/pushNotificationConfigs/c1/x", target{}, 404, ""},
		{"GET", "/v1/tasks/t1", target{}, 404, ""},
	}
	for _, tt := range tests {
		got, rerr := route(tt.method, tt.path)
		switch {
		case tt.status == 0 && rerr != nil:
			t.Errorf("route(%s %q) = %+v, want %+v", tt.method, tt.path, *rerr, tt.want)
		case tt.status == 0 && got != tt.want:
			t.Errorf("route(%s %q) = %+v, want %+v", tt.method, tt.path, got, tt.want)
		case tt.status != 0 && (rerr == nil || rerr.status != tt.status || rerr.allow != tt.allow):
			t.Errorf("route(%s %q) = %+v, %v; want status %d, Allow %q", tt.method, tt.path, got, rerr, tt.status, tt.allow)
		}
	}
}

// FuzzRoute checks that path decoding never panics, answers an
// operation or 404/405 (with an Allow header that names verbs), and that
// an id read from a path is the one escaped into it; and that the query
// decoding never panics and yields a JSON object or -32602.
func FuzzRoute(f *testing.F) {
	for _, s := range []string{"/tasks/t1:cancel", "/tasks/%zz/pushNotificationConfigs/%", "/message:send", "/tasks/a:b:c", "//", "/tasks/\x00"} {
		f.Add("GET", s, "historyLength=1&history_length=2&x=%zz")
	}
	f.Fuzz(func(t *testing.T, method, path, rawQuery string) {
		got, rerr := route(method, path)
		if rerr != nil {
			if rerr.status != http.StatusNotFound && rerr.status != http.StatusMethodNotAllowed {
				t.Fatalf("route(%q, %q): status %d", method, path, rerr.status)
			}
			if (rerr.status == http.StatusMethodNotAllowed) != (rerr.allow != "") {
				t.Fatalf("route(%q, %q): status %d with Allow %q", method, path, rerr.status, rerr.allow)
			}
		} else if int(got.op) >= len(ops) {
			t.Fatalf("route(%q, %q): op %d", method, path, got.op)
		}
		if id := path; !strings.ContainsAny(id, "/") && id != "" {
			got, rerr := route(http.MethodGet, "/tasks/"+url.PathEscape(id)+"/pushNotificationConfigs")
			if rerr != nil || got.taskID != id {
				t.Fatalf("id %q escaped: got %+v, %v", id, got, rerr)
			}
		}
		q, _ := url.ParseQuery(rawQuery)
		raw, e := queryParams(q, listQuery, map[string]string{"taskId": path})
		if e == nil && !json.Valid(raw) {
			t.Fatalf("queryParams(%q) = %q, not JSON", rawQuery, raw)
		}
		if e != nil && e.Code != -32602 {
			t.Fatalf("queryParams(%q): code %d", rawQuery, e.Code)
		}

	})
}

func TestCamel(t *testing.T) {
	for in, want := range map[string]string{"history_length": "historyLength", "pageSize": "pageSize", "a__b": "aB", "x_": "x"} {
		if got := camel(in); got != want {
			t.Errorf("camel(%q) = %q, want %q", in, got, want)
		}
	}
}
