package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/server"
	"github.com/a2ad/a2ad/tasks"
)

// Lister is a fake server.Lister.
type Lister struct {
	Fn func(ctx context.Context, caller tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error)
}

func (l *Lister) List(ctx context.Context, caller tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error) {
	return l.Fn(ctx, caller, q)
}

var _ server.Lister = (*Lister)(nil)

func TestListPassesTheQueryAndEncodesThePage(t *testing.T) {
	var (
		gotCaller tasks.Caller
		gotQuery  tasks.ListQuery
	)
	lister := &Lister{Fn: func(_ context.Context, c tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error) {
		gotCaller, gotQuery = c, q
		return tasks.ListPage{Tasks: []a2a.Task{*task("t2"), *task("t1")}, TotalSize: 12, PageSize: 2, NextPageToken: "AQ"}, nil
	}}
	ts := MustServe(t, &TaskService{}, func(c *server.Config) {
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
	one := 1
	wantQ := tasks.ListQuery{
		ListFilter: tasks.ListFilter{ContextID: "c", State: a2a.StateCompleted, StatusAfter: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		PageSize:   2, PageToken: "tok", HistoryLength: &one, IncludeArtifacts: true,
	}
	if !gotQuery.StatusAfter.Equal(wantQ.StatusAfter) {
		t.Errorf("StatusAfter = %v, want %v", gotQuery.StatusAfter, wantQ.StatusAfter)
	}
	gotQuery.StatusAfter, wantQ.StatusAfter = time.Time{}, time.Time{}
	if !reflect.DeepEqual(gotQuery, wantQ) || !reflect.DeepEqual(gotCaller, tasks.Caller{ID: "alice", Tiers: []string{"partner"}}) {
		t.Errorf("List(%+v, %+v), want (alice, %+v)", gotCaller, gotQuery, wantQ)
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
	ts := MustServe(t, &TaskService{}, func(c *server.Config) { c.Lister = lister })
	tests := []struct {
		params string
		err    error
		want   string
	}{
		{`{"page_size":101}`, nil,
			`{"code":-32602,"message":"Invalid parameters: /page_size: must be from 1 to 100, not 101","data":{"errors":[{"message":"must be from 1 to 100, not 101","path":"/page_size"}]}}`},
		{`[1]`, nil,
			`{"code":-32602,"message":"Invalid parameters: /: must be an object, not an array","data":{"errors":[{"message":"must be an object, not an array","path":"/"}]}}`},
		{`{"page_token":"x"}`, tasks.ErrPageToken,
			`{"code":-32602,"message":"Invalid parameters: /page_token: is not a page token this server issued","data":{"errors":[{"message":"is not a page token this server issued","path":"/page_token"}]}}`},
		{`{"page_token":"x"}`, fmt.Errorf("list: %w", tasks.ErrPageTokenQuery),
			`{"code":-32602,"message":"Invalid parameters: /page_token: was issued for another query (other filters or another caller)","data":{"errors":[{"message":"was issued for another query (other filters or another caller)","path":"/page_token"}]}}`},
		{`{}`, tasks.ErrClosed, `{"code":-32051,"message":"Server is shutting down; retry later"}`},
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
