package admin_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/tasks"
)

// serveView answers one GET of path from a view on in.
func serveView(tb testing.TB, in tasks.Inspector, path string) (int, string) {
	tb.Helper()
	return serve(tb, newServer(admin.Config{Inspector: in}), http.MethodGet, path)
}

// TestOpViewCountsBeyondTheBound: states the store did not count are
// null, never 0; uptime is whole seconds; no catalogue gives zeros.
func TestOpViewCountsBeyondTheBound(t *testing.T) {
	in := &fakeInspector{overview: func() (*tasks.Overview, error) {
		return &tasks.Overview{
			Tasks: 25, NonTerminal: 3, FileBytes: 4096, DataBytes: 2048, OutboxDepth: 2, DeadLetters: 1,
			ByState: map[a2a.TaskState]int{a2a.StateSubmitted: 0, a2a.StateWorking: 3, a2a.StateInputRequired: 0, a2a.StateAuthRequired: 0, a2a.StateUnknown: 0},
		}, nil
	}}
	code, body := serveView(t, in, "/admin/v1/overview")
	want := `{"version":"1.2.3","startedAt":"2026-01-02T03:04:05Z","uptimeSeconds":90,` +
		`"catalog":{"path":"","version":"","functions":0,"exposedSkills":0},"keys":null,` +
		`"store":{"path":"/var/lib/a2ad/a2ad.db","sizeBytes":4096,"dataBytes":2048},` +
		`"tasks":{"total":25,"nonTerminal":3,"terminal":22,"byState":{"auth-required":0,"canceled":null,"completed":null,` +
		`"failed":null,"input-required":0,"rejected":null,"submitted":0,"unknown":0,"working":3},"byStateComplete":false,"stateCountLimit":10},` +
		`"push":{"outboxDepth":2,"deadLetters":1}}`
	if code != http.StatusOK || body != want {
		t.Errorf("overview: HTTP %d\n%s\nwant\n%s", code, body, want)
	}
}

// TestOpViewShortPageAndErrors: a page the scan bound cut short is [] with
// a token; a store error is a 500 that shows no detail.
func TestOpViewShortPageAndErrors(t *testing.T) {
	var gotAfter string
	in := &fakeInspector{
		tasks: func(q tasks.TaskQuery, after string, limit int) (*tasks.TaskPage, error) {
			gotAfter = after
			if q.FunctionID == "broken" {
				return nil, errors.New("decode task x: secret detail")
			}
			return &tasks.TaskPage{Next: "id/with\x00odd?bytes", Scanned: 10000}, nil
		},
		task: func(string) (*tasks.Record, []tasks.Event, error) { return nil, nil, errors.New("disk on fire") },
		deadLetters: func(after uint64, limit int) ([]tasks.DeadLetter, bool, error) {
			return nil, false, errors.New("disk on fire")
		},
	}
	code, body := serveView(t, in, "/admin/v1/tasks?function=f")
	// A page token is base64url of a kind byte ('t' for tasks) and the id.
	tok := base64.RawURLEncoding.EncodeToString([]byte("tid/with\x00odd?bytes"))
	if want := `{"tasks":[],"nextPageToken":"` + tok + `","scannedTasks":10000}`; code != http.StatusOK || body != want {
		t.Errorf("short page: HTTP %d %s\nwant %s", code, body, want)
	}
	// The token carries the id whole, whatever it holds.
	if code, _ := serveView(t, in, "/admin/v1/tasks?function=f&page_token="+tok); code != http.StatusOK || gotAfter != "id/with\x00odd?bytes" {
		t.Errorf("next page: HTTP %d, after %q", code, gotAfter)
	}
	for _, p := range []string{"/admin/v1/tasks?function=broken", "/admin/v1/tasks/x", "/admin/v1/dead-letters"} {
		code, body := serveView(t, in, p)
		if want := `{"message":"internal error (see the server log)"}`; code != http.StatusInternalServerError || body != want {
			t.Errorf("%s: HTTP %d %s, want 500 %s", p, code, body, want)
		}
	}
}
