package mcp_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/mcp"
	"github.com/a2ad/a2ad/transport/transporttest"
)

type resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	MIMEType    string `json:"mimeType"`
	Description string `json:"description"`
}

// ownTask is task t1 of caller p: a tools/call of demo::echo, completed.
func ownTask() *a2a.Task {
	return &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.StateCompleted},
		History: []a2a.Message{{MessageID: "m1", Role: a2a.RoleUser, TaskID: "t1", ContextID: "c1",
			Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"skill":"demo::echo","input":{}}`))}}},
		Artifacts: []a2a.Artifact{{ArtifactID: "a1", Parts: []a2a.Part{a2a.TextPart("hi")}}}}
}

// TestResourcesList: resources/list is the caller's tasks, a page at a
// time through the core's List, its page token the cursor; a cursor the
// server did not give is the core's -32602, naming the cursor.
func TestResourcesList(t *testing.T) {
	f := newFixture(t, nil)
	var callers []string
	f.fake.Caller = func(c tasks.Caller) { callers = append(callers, c.ID) }
	f.fake.ListFn = func(q tasks.ListQuery) (tasks.ListPage, error) {
		if q.HistoryLength == nil || *q.HistoryLength != 1 || q.IncludeArtifacts || q.PageSize != 0 {
			t.Errorf("query %+v: want the latest message, no artifacts, the default page size", q)
		}
		switch q.PageToken {
		case "":
			return tasks.ListPage{Tasks: []a2a.Task{*ownTask(), {ID: "t0", Status: a2a.TaskStatus{State: a2a.StateWorking}}},
				NextPageToken: "page2", PageSize: 2, TotalSize: 3}, nil
		case "page2":
			return tasks.ListPage{Tasks: []a2a.Task{{ID: "t-old", Status: a2a.TaskStatus{State: a2a.StateFailed}}}, PageSize: 2, TotalSize: 3}, nil
		}
		return tasks.ListPage{}, tasks.ErrPageToken
	}
	page := func(params string) ([]resource, string) {
		res, e, raw := f.rpc(t, "partner-key", "resources/list", params)
		if e != nil {
			t.Fatalf("resources/list %s: %s", params, raw)
		}
		var out struct {
			Resources  []resource `json:"resources"`
			NextCursor string     `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &out); err != nil {
			t.Fatal(err)
		}
		return out.Resources, out.NextCursor
	}
	first, next := page(`{}`)
	want := []resource{
		{URI: "a2ad://tasks/t1", Name: "t1", MIMEType: "application/json", Description: "Call of demo::echo, state completed"},
		{URI: "a2ad://tasks/t0", Name: "t0", MIMEType: "application/json", Description: "Task, state working"},
	}
	if d := cmp.Diff(want, first); d != "" || next != "page2" {
		t.Errorf("first page (-want +got):\n%s\nnextCursor %q, want page2", d, next)
	}
	second, next := page(`{"cursor":"page2"}`)
	want = []resource{{URI: "a2ad://tasks/t-old", Name: "t-old", MIMEType: "application/json", Description: "Task, state failed"}}
	if d := cmp.Diff(want, second); d != "" || next != "" {
		t.Errorf("second page (-want +got):\n%s\nnextCursor %q, want none", d, next)
	}
	_, e, raw := f.rpc(t, "partner-key", "resources/list", `{"cursor":"forged"}`)
	if e == nil || e.Code != -32602 || e.Message != "Invalid parameters: cursor: is not a page token this server issued" {
		t.Errorf("forged cursor: %s", raw)
	}
	if d := cmp.Diff([]string{"p", "p", "p"}, callers); d != "" {
		t.Errorf("callers listed (-want +got):\n%s", d)
	}
	if log := f.audit.String(); !strings.Contains(log, `"rpc_method":"resources/list"`) {
		t.Errorf("audit records:\n%s", log)
	}
}

// sharedAuth lets every request in as one anonymous caller whose owner
// is shared (anonymous callers beside keyed ones).
type sharedAuth struct{}

func (sharedAuth) Authenticate(*http.Request, string) (transport.Principal, transport.AuthResult) {
	return transport.Principal{Caller: tasks.Caller{ID: "anonymous"}, LimitKey: "anonymous", SharedOwner: true}, transport.Authenticated
}

// TestResourcesListRefused: a caller who may not list tasks gets the
// core's refusal, and a server that lists none -32601; the task service
// is not asked.
func TestResourcesListRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lister bool
		code   int
		msg    string
	}{
		{"shared owner", true, a2a.ErrListNeedsKey.Code, a2a.ErrListNeedsKey.Message},
		{"no lister", false, -32601, `method not found: "resources/list"`},
	} {
		fake := &transporttest.Service{TB: t}
		cfg := transport.Config{Tasks: fake, Auth: sharedAuth{}, Logger: zerolog.Nop()}
		if tc.lister {
			cfg.Lister = fake
		}
		srv := httptest.NewServer(mcp.New(mcp.Config{Core: transport.New(cfg), Version: "test"}))
		f := &fixture{url: srv.URL, fake: fake}
		_, e, raw := f.rpc(t, "", "resources/list", `{}`)
		if e == nil || e.Code != tc.code || e.Message != tc.msg {
			t.Errorf("%s: %s, want %d %q", tc.name, raw, tc.code, tc.msg)
		}
		srv.Close()
	}
}

// TestResourceTemplates: one template, any task of the caller's.
func TestResourceTemplates(t *testing.T) {
	f := newFixture(t, nil)
	res, e, raw := f.rpc(t, "partner-key", "resources/templates/list", `{}`)
	if e != nil {
		t.Fatalf("%s", raw)
	}
	var out struct {
		Templates []struct {
			URITemplate string `json:"uriTemplate"`
			MIMEType    string `json:"mimeType"`
		} `json:"resourceTemplates"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Templates) != 1 || out.Templates[0].URITemplate != "a2ad://tasks/{id}" || out.Templates[0].MIMEType != "application/json" {
		t.Errorf("templates: %s", res)
	}
}

// TestResourceRead: a task of the caller's reads as its A2A 1.0 JSON,
// the REST binding's GetTask answer; another caller's task and one that
// does not exist are the same error, byte for byte.
func TestResourceRead(t *testing.T) {
	f := newFixture(t, nil)
	var caller string
	f.fake.Caller = func(c tasks.Caller) { caller = c.ID }
	exists := true
	f.fake.GetFn = func(id string, h *int) (*a2a.Task, error) {
		if h != nil {
			t.Errorf("historyLength %d, want all", *h)
		}
		if exists && caller == "p" && id == "t1" {
			return ownTask(), nil
		}
		return nil, tasks.ErrNotFound
	}
	res, e, raw := f.rpc(t, "partner-key", "resources/read", `{"uri":"a2ad://tasks/t1"}`)
	if e != nil {
		t.Fatalf("own task: %s", raw)
	}
	var out struct {
		Contents []struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
			Text     string `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatal(err)
	}
	want, err := v1.AppendTask(nil, ownTask())
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 1 || out.Contents[0].URI != "a2ad://tasks/t1" || out.Contents[0].MIMEType != "application/json" || out.Contents[0].Text != string(want) {
		t.Errorf("own task: %s\nwant text %s", res, want)
	}

	read := func(key string) []byte {
		_, e, raw := f.rpc(t, key, "resources/read", `{"uri":"a2ad://tasks/t1"}`)
		if e == nil || e.Code != -32602 || e.Message != "Resource not found" || string(e.Data) != `{"uri":"a2ad://tasks/t1"}` {
			t.Errorf("%s: %s, want -32602 Resource not found", key, raw)
		}
		return raw
	}
	other := read("internal-key")
	exists = false
	missing := read("internal-key")
	if !bytes.Equal(other, missing) {
		t.Errorf("another caller's task:\n%s\nno task:\n%s", other, missing)
	}
	if log := f.audit.String(); !strings.Contains(log, `"rpc_method":"resources/read"`) || !strings.Contains(log, `"task_id":"t1"`) {
		t.Errorf("audit records:\n%s", log)
	}
}

// TestResourceReadBadURI: a URI that names no task is -32602 naming it,
// and no task is read.
func TestResourceReadBadURI(t *testing.T) {
	f := newFixture(t, nil)
	for _, uri := range []string{"file:///etc/passwd", "a2ad://tasks/", "a2ad://tasks/t1/x", "a2ad://tasks/t1?x", "A2AD://tasks/t1",
		"a2ad://tasks/" + strings.Repeat("x", 300)} {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		_, e, raw := f.rpc(t, "partner-key", "resources/read", string(params))
		shown := uri
		if len(shown) > 128 {
			shown = shown[:128] + "…"
		}
		wantMsg := "Invalid params: uri: must be a2ad://tasks/<task id>, not " + strconv.Quote(shown)
		if e == nil || e.Code != -32602 || e.Message != wantMsg {
			t.Errorf("%s: %s, want -32602 %q", uri, raw, wantMsg)
		}
	}
}

// TestResourcesCapability: initialize declares resources, neither
// subscribe nor listChanged: a stateless server keeps no subscription,
// and resources/subscribe is -32601.
func TestResourcesCapability(t *testing.T) {
	f := newFixture(t, nil)
	res, e, raw := f.rpc(t, "partner-key", "initialize",
		`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	if e != nil {
		t.Fatalf("%s", raw)
	}
	var out struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatal(err)
	}
	if got := string(out.Capabilities["resources"]); got != "{}" {
		t.Errorf("capabilities.resources = %s, want {}: %s", got, res)
	}
	for _, m := range []string{"resources/subscribe", "resources/unsubscribe"} {
		_, e, raw := f.rpc(t, "partner-key", m, `{"uri":"a2ad://tasks/t1"}`)
		if e == nil || e.Code != -32601 || e.Message != `method not found: "`+m+`"` {
			t.Errorf("%s: %s, want -32601", m, raw)
		}
	}
}
