package rest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/jsonrpc"
	"github.com/a2ad/a2ad/transport/rest"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// writeSizes records the size of each Write of an answer.
type writeSizes struct {
	http.ResponseWriter
	mu    *sync.Mutex
	sizes *[]int
}

func (w writeSizes) Write(b []byte) (int, error) {
	w.mu.Lock()
	*w.sizes = append(*w.sizes, len(b))
	w.mu.Unlock()
	return w.ResponseWriter.Write(b)
}

func (w writeSizes) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestLargeAnswersWrittenInPieces (issue 25 item 4): a task of 40
// messages and 40 artifacts of 100 KB each (8 MB), and a page of two,
// are written while they are made over both bindings and both versions:
// no Write of the answer is larger than transport.SpillBytes and one
// part, the pieces add up to the answer, which is one JSON document with
// every part. A small answer is one Write (and, under net/http's 2 KB
// buffer, comes with its Content-Length).
// Before, each answer was one Write of its whole encoding, built first.
func TestLargeAnswersWrittenInPieces(t *testing.T) {
	const partSize = 100_000
	xs, ys := strings.Repeat("x", partSize), strings.Repeat("y", partSize)
	large := func(id string) *a2a.Task {
		tk := task(id, a2a.StateCompleted)
		for range 40 {
			tk.History = append(tk.History, a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(xs)}})
			tk.Artifacts = append(tk.Artifacts, a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart(ys)}})
		}
		return tk
	}
	fake := &transporttest.Service{TB: t,
		GetFn: func(id string, _ *int) (*a2a.Task, error) {
			if id == "small" {
				return task(id, a2a.StateCompleted), nil
			}
			return large(id), nil
		},
		ListFn: func(tasks.ListQuery) (tasks.ListPage, error) {
			return tasks.ListPage{Tasks: []a2a.Task{*large("l1"), *large("l2")}, PageSize: 2, TotalSize: 2}, nil
		},
	}
	cfg := jsonrpc.Config{Config: transport.Config{Tasks: fake, Lister: fake, MaxBodyBytes: testMaxBody, KeepAlive: -1}}
	srv := jsonrpc.New(cfg)
	rest.Mount(srv.Echo(), "/a2a/rest", srv.Core(), cfg.CORS)
	var mu sync.Mutex
	var sizes []int
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(writeSizes{w, &mu, &sizes}, r)
	}))
	t.Cleanup(ts.Close)

	rpc := func(method, params string, v1 bool) *http.Request {
		req := testkit.NewRequest(t, http.MethodPost, ts.URL+"/a2a", "application/json",
			`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
		if v1 {
			req.Header.Set("A2A-Version", "1.0")
		}
		return req
	}
	get := func(path string) *http.Request { return testkit.NewRequest(t, http.MethodGet, ts.URL+path, "", "") }
	for _, c := range []struct {
		name  string
		req   *http.Request
		parts int // of 100 KB in the answer
	}{
		{"tasks/get", rpc("tasks/get", `{"id":"t1"}`, false), 80},
		{"GetTask", rpc("GetTask", `{"id":"t1"}`, true), 80},
		{"tasks/list", rpc("tasks/list", `{}`, false), 160},
		{"ListTasks", rpc("ListTasks", `{"includeArtifacts":true}`, true), 160},
		{"REST get", get("/a2a/rest/tasks/t1"), 80},
		{"REST list", get("/a2a/rest/tasks?includeArtifacts=true"), 160},
		{"small", rpc("tasks/get", `{"id":"small"}`, false), 0},
	} {
		mu.Lock()
		sizes = nil
		mu.Unlock()
		resp, body := testkit.RoundTrip(t, nil, c.req)
		mu.Lock()
		got := append([]int(nil), sizes...)
		mu.Unlock()
		if resp.StatusCode != http.StatusOK || !json.Valid(body) {
			t.Fatalf("%s: HTTP %d, %d bytes, valid JSON %v: %.200s", c.name, resp.StatusCode, len(body), json.Valid(body), body)
		}
		if n := strings.Count(string(body), xs) + strings.Count(string(body), ys); n != c.parts {
			t.Errorf("%s: %d whole parts in the answer, want %d", c.name, n, c.parts)
		}
		total, largest := 0, 0
		for _, n := range got {
			total += n
			largest = max(largest, n)
		}
		if total != len(body) {
			t.Errorf("%s: writes %v add up to %d, the answer is %d bytes", c.name, got, total, len(body))
		}
		if c.parts == 0 {
			if len(got) != 1 || resp.ContentLength != int64(len(body)) {
				t.Errorf("%s: %d writes, Content-Length %d of %d bytes; want one write with its length", c.name, len(got), resp.ContentLength, len(body))
			}
			continue
		}
		if largest > transport.SpillBytes+partSize+1024 || len(got) < len(body)/(transport.SpillBytes+partSize+1024) {
			t.Errorf("%s: %d writes, the largest %d bytes, of an answer of %d: want pieces of at most %d", c.name, len(got), largest, len(body), transport.SpillBytes+partSize+1024)
		}
	}
}
