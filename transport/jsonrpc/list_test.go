package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/jsonrpc"
)

// Lister is a fake transport.Lister.
type Lister struct {
	Fn func(ctx context.Context, caller tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error)
}

func (l *Lister) List(ctx context.Context, caller tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error) {
	return l.Fn(ctx, caller, q)
}

var _ transport.Lister = (*Lister)(nil)

func TestListPassesTheQueryAndEncodesThePage(t *testing.T) {
	var (
		gotCaller tasks.Caller
		gotQuery  tasks.ListQuery
	)
	lister := &Lister{Fn: func(_ context.Context, c tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error) {
		gotCaller, gotQuery = c, q
		return tasks.ListPage{Tasks: []a2a.Task{*task("t2"), *task("t1")}, TotalSize: 12, PageSize: 2, NextPageToken: "AQ"}, nil
	}}
	ts := MustServe(t, &TaskService{}, func(c *jsonrpc.Config) {
		c.Lister = lister
		c.Caller = func(*http.Request) tasks.Caller { return tasks.Caller{ID: "alice", Tiers: []string{"partner"}} }
	})
	body := `{"jsonrpc":"2.0","id":"l1","method":"tasks/list","params":{"context_id":"c","status":"completed","page_size":2,` +
		`"page_token":"tok","history_length":1,"last_updated_after":"2026-03-01T12:00:00Z","include_artifacts":true}}`
	got := rpc(t, ts, body)
	want := `{"jsonrpc":"2.0","id":"l1","result":{"tasks":[` + taskJSON(t, task("t2")) + `,` + taskJSON(t, task("t1")) +
		`],"total_size":12,"page_size":2,"next_page_token":"AQ"}}`
	if string(got) != want {
		t.Fatalf("tasks/list:\n got %s\nwant %s", got, want)
	}
	checkListQuery(t, gotQuery, fullListQuery(a2a.StateCompleted, 1))
	if !reflect.DeepEqual(gotCaller, tasks.Caller{ID: "alice", Tiers: []string{"partner"}}) {
		t.Errorf("List by %+v, want alice", gotCaller)
	}

	// No params at all: the defaults, and every member of the result.
	lister.Fn = func(_ context.Context, _ tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error) {
		gotQuery = q
		return tasks.ListPage{PageSize: 50}, nil
	}
	got = rpc(t, ts, `{"jsonrpc":"2.0","id":2,"method":"tasks/list"}`)
	if want := `{"jsonrpc":"2.0","id":2,"result":{"tasks":[],"total_size":0,"page_size":50,"next_page_token":""}}`; string(got) != want {
		t.Fatalf("tasks/list without params:\n got %s\nwant %s", got, want)
	}
	if !reflect.DeepEqual(gotQuery, tasks.ListQuery{}) {
		t.Errorf("query without params = %+v, want the zero query", gotQuery)
	}
}

func TestListErrors(t *testing.T) {
	var calls int
	var listErr error
	lister := &Lister{Fn: func(context.Context, tasks.Caller, tasks.ListQuery) (tasks.ListPage, error) {
		calls++
		return tasks.ListPage{}, listErr
	}}
	ts := MustServe(t, &TaskService{}, func(c *jsonrpc.Config) { c.Lister = lister })
	tests := []struct {
		params string
		err    error
		want   string
	}{
		{`{"page_size":101}`, nil,
			`{"code":-32602,"message":"Invalid parameters: /page_size: must be from 1 to 100, not 101","data":{"errors":[{"message":"must be from 1 to 100, not 101","path":"/page_size"}]}}`},
		// Unknown members are refused, each named; the service is not asked.
		{`{"foo":1,"pageSize":5}`, nil,
			`{"code":-32602,"message":"Invalid parameters: /foo: is not a tasks/list param; they are context_id, status, page_size, page_token, history_length, last_updated_after and include_artifacts (and 1 more problem)",` +
				`"data":{"errors":[{"message":"is not a tasks/list param; they are context_id, status, page_size, page_token, history_length, last_updated_after and include_artifacts","path":"/foo"},` +
				`{"message":"is not a tasks/list param: did you mean \"page_size\"? (tasks/list, a2a-go's extension of 0.3, spells its params in snake_case)","path":"/pageSize"}]}}`},
		{`[1]`, nil,
			`{"code":-32602,"message":"Invalid parameters: /: must be an object, not an array","data":{"errors":[{"message":"must be an object, not an array","path":"/"}]}}`},
		{`{"page_token":"x"}`, tasks.ErrPageToken,
			`{"code":-32602,"message":"Invalid parameters: /page_token: is not a page token this server issued","data":{"errors":[{"message":"is not a page token this server issued","path":"/page_token"}]}}`},
		{`{"page_token":"x"}`, fmt.Errorf("list: %w", tasks.ErrPageTokenQuery),
			`{"code":-32602,"message":"Invalid parameters: /page_token: was issued for another query (other filters or another caller)","data":{"errors":[{"message":"was issued for another query (other filters or another caller)","path":"/page_token"}]}}`},
		{`{}`, errors.New("disk on fire"), `{"code":-32603,"message":"Internal error"}`},
	}
	wantCalls := 0
	for i, tc := range tests {
		listErr = tc.err
		if tc.err != nil {
			wantCalls++
		}
		got := rpc(t, ts, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tasks/list","params":%s}`, i, tc.params))
		if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":%s}`, i, tc.want); string(got) != want {
			t.Errorf("params %s, service error %v:\n got %s\nwant %s", tc.params, tc.err, got, want)
		}
		if calls != wantCalls {
			t.Fatalf("params %s: lister called %d times, want %d", tc.params, calls, wantCalls)
		}
	}
}

func TestListTasksV1(t *testing.T) {
	var gotQuery tasks.ListQuery
	var listErr error
	page := tasks.ListPage{Tasks: []a2a.Task{*task("t2"), *task("t1")}, TotalSize: 12, PageSize: 2, NextPageToken: "AQ"}
	lister := &Lister{Fn: func(_ context.Context, _ tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error) {
		gotQuery = q
		return page, listErr
	}}
	ts := MustServe(t, &TaskService{}, func(c *jsonrpc.Config) { c.Lister = lister })
	got := rpc(t, ts, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"tenant":"x","contextId":"c","status":"TASK_STATE_WORKING",`+
		`"pageSize":2,"pageToken":"tok","historyLength":"0","statusTimestampAfter":"2026-03-01T12:00:00Z","includeArtifacts":true}}`)
	result, err := v1.AppendTaskList(nil, page.Tasks, "AQ", 2, 12)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":1,"result":` + string(result) + `}`; string(got) != want {
		t.Fatalf("ListTasks:\n got %s\nwant %s", got, want)
	}
	checkListQuery(t, gotQuery, fullListQuery(a2a.StateWorking, 0))

	for _, tc := range []struct {
		params string
		err    error
		code   int
		msg    string
	}{
		{`{"pageToken":"x"}`, tasks.ErrPageToken, -32602, "Invalid parameters: /pageToken: is not a page token this server issued"},
		{`{"pageToken":"x"}`, tasks.ErrPageTokenQuery, -32602, "Invalid parameters: /pageToken: was issued for another query (other filters or another caller)"},
		{`{"pageSize":0.5}`, nil, -32602, "Invalid parameters: /pageSize: must be an integer"},
		{`{"status":"working"}`, nil, -32602, `Invalid parameters: /status: must be a TaskState: a TASK_STATE_* name (such as "TASK_STATE_WORKING") or its number from 0 to 8`},
	} {
		listErr = tc.err
		out := rpc(t, ts, `{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":`+tc.params+`}`)
		var resp struct {
			Error struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal(out, &resp); err != nil || resp.Error.Code != tc.code || resp.Error.Message != tc.msg {
			t.Errorf("params %s, service error %v: %s; want %d %q", tc.params, tc.err, out, tc.code, tc.msg)
		}
	}

	// Without a Lister, ListTasks is as unknown as tasks/list.
	ts = MustServe(t, &TaskService{})
	out := rpc(t, ts, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{}}`)
	if !strings.Contains(string(out), `"code":-32601,"message":"Method not found: ListTasks"`) {
		t.Errorf("ListTasks without a Lister: %s", out)
	}
}

// fullListQuery is the query of the list params that the tests give in
// full: context c, the state, page size 2, token tok, history, status
// after 2026-03-01 12:00 UTC, artifacts included.
func fullListQuery(state a2a.TaskState, history int) tasks.ListQuery {
	return tasks.ListQuery{
		ListFilter: tasks.ListFilter{ContextID: "c", State: state, StatusAfter: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		PageSize:   2, PageToken: "tok", HistoryLength: &history, IncludeArtifacts: true,
	}
}

// checkListQuery fails t unless got is want; the times compare as
// instants.
func checkListQuery(t *testing.T, got, want tasks.ListQuery) {
	t.Helper()
	if !got.StatusAfter.Equal(want.StatusAfter) {
		t.Errorf("StatusAfter = %v, want %v", got.StatusAfter, want.StatusAfter)
	}
	got.StatusAfter, want.StatusAfter = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("query = %+v, want %+v", got, want)
	}
}
