package rest_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/jsonrpc"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// TestHeadAnswersAsGet: HEAD of every GET route is answered as its GET,
// with the same status and headers (Content-Length included) and no
// body, an error too; a HEAD of :subscribe, a stream, is 405 with
// Allow "GET, POST", and Allow names HEAD wherever GET is served.
func TestHeadAnswersAsGet(t *testing.T) {
	fake := oneTask()
	ts, _ := serve(t, fake, func(c *jsonrpc.Config) {
		c.ExtendedCard = func(transport.Principal) transport.Card { return transport.Card{V1JSON: []byte(`{"name":"x"}`)} }
		c.Caller = func(*http.Request) tasks.Caller { return tasks.Caller{ID: "c1"} }
	})
	base := ts.URL + "/a2a/rest"
	for _, path := range []string{
		"/tasks/t1", "/tasks/t1?historyLength=0", "/tasks/nope", "/tasks", "/extendedAgentCard",
		"/tasks/t1/pushNotificationConfigs", "/tasks/t1/pushNotificationConfigs/c1",
	} {
		gc, gh, gb := call(t, http.MethodGet, base+path, "", "")
		hc, hh, hb := call(t, http.MethodHead, base+path, "", "")
		if hc != gc || hb != "" {
			t.Errorf("HEAD %s = %d %q; GET %d", path, hc, hb, gc)
		}
		if gh.Get("Content-Length") == "" || hh.Get("Content-Length") != gh.Get("Content-Length") {
			t.Errorf("HEAD %s: Content-Length %q, GET's %q (%d bytes)", path, hh.Get("Content-Length"), gh.Get("Content-Length"), len(gb))
		}
		if g, h := stable(gh), stable(hh); !reflect.DeepEqual(g, h) {
			t.Errorf("%s: headers differ\nGET  %v\nHEAD %v", path, g, h)
		}
	}
	// A path of no operation is 404 to HEAD too (its message names the
	// verb asked).
	if code, _, body := call(t, http.MethodHead, base+"/tasks/t1/artifacts", "", ""); code != http.StatusNotFound || body != "" {
		t.Errorf("HEAD of no operation = %d %q, want 404", code, body)
	}
	code, h, body := call(t, http.MethodHead, base+"/tasks/t1:subscribe", "", "")
	if code != http.StatusMethodNotAllowed || h.Get("Allow") != "GET, POST" || body != "" {
		t.Errorf("HEAD :subscribe = %d Allow %q %q, want 405 Allow \"GET, POST\"", code, h.Get("Allow"), body)
	}
	code, h, _ = call(t, http.MethodDelete, base+"/tasks/t1", "", "")
	if code != http.StatusMethodNotAllowed || h.Get("Allow") != "GET, HEAD" {
		t.Errorf("DELETE /tasks/t1 = %d Allow %q, want 405 Allow \"GET, HEAD\"", code, h.Get("Allow"))
	}
}

// stable is h less the headers that differ from one answer to the next.
func stable(h http.Header) http.Header {
	h = h.Clone()
	h.Del("Date")
	h.Del("X-Request-Id")
	return h
}

// TestTrailingSlash: a path with a trailing slash names the same
// operation as without it; the base alone, with or without one, names
// none and answers the binding's own 404.
func TestTrailingSlash(t *testing.T) {
	fake := oneTask()
	ts, _ := serve(t, fake, func(c *jsonrpc.Config) {
		c.Caller = func(*http.Request) tasks.Caller { return tasks.Caller{ID: "c1"} }
	})
	base := ts.URL + "/a2a/rest"
	for _, path := range []string{"/tasks/t1", "/tasks"} {
		wc, _, wb := call(t, http.MethodGet, base+path, "", "")
		gc, _, gb := call(t, http.MethodGet, base+path+"/", "", "")
		if wc != http.StatusOK || gc != wc || gb != wb {
			t.Errorf("GET %s/ = %d %s; without the slash %d %s", path, gc, gb, wc, wb)
		}
	}
	for _, path := range []string{"", "/"} {
		code, h, body := call(t, http.MethodPost, base+path, "application/json", "{}")
		want := `{"error":{"code":404,"status":"NOT_FOUND","message":"No HTTP+JSON operation at POST /a2a/rest` + path +
			`","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"METHOD_NOT_FOUND","domain":"github.com/a2ad/a2ad"}]}}`
		if code != http.StatusNotFound || body != want || h.Get("Content-Type") != "application/json" {
			t.Errorf("POST /a2a/rest%s = %d %q %s, want 404 %s", path, code, h.Get("Content-Type"), body, want)
		}
	}
}

// oneTask is a service holding one task, t1, completed, that it gets and
// lists.
func oneTask() *transporttest.Service {
	return &transporttest.Service{
		GetFn: func(id string, _ *int) (*a2a.Task, error) {
			if id == "t1" {
				return task("t1", a2a.StateCompleted), nil
			}
			return nil, tasks.ErrNotFound
		},
		ListFn: func(tasks.ListQuery) (tasks.ListPage, error) {
			return tasks.ListPage{Tasks: []a2a.Task{*task("t1", a2a.StateCompleted)}, PageSize: 50, TotalSize: 1}, nil
		},
	}
}
