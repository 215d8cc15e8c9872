package rest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/httpx"
	"github.com/a2ad/a2ad/transport/jsonrpc"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// TestCalls pins the answers of the operations that do not stream: the
// status, the content type and the body, byte for byte; and what the
// service was asked.
func TestCalls(t *testing.T) {
	var gotID string
	var gotHistory *int
	var gotSend a2a.SendParams
	fake := &transporttest.Service{
		SendFn: func(p a2a.SendParams) (*a2a.Task, error) { gotSend = p; return task("t1", a2a.StateCompleted), nil },
		GetFn: func(id string, h *int) (*a2a.Task, error) {
			gotID, gotHistory = id, h
			switch id {
			case "t1":
				return task("t1", a2a.StateCompleted), nil
			case "theirs":
				return nil, fmt.Errorf("get: %w", tasks.ErrNotOwner)
			}
			return nil, tasks.ErrNotFound
		},
		CancelFn: func(id string) (*a2a.Task, error) { return nil, tasks.ErrNotCancelable },
	}
	ts, _ := serve(t, fake)
	base := ts.URL + "/a2a/rest"

	code, h, body := call(t, "POST", base+"/message:send", "application/a2a+json",
		`{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}`)
	if code != 200 || h.Get("Content-Type") != "application/a2a+json" || body != `{"task":`+completedT1+`}` {
		t.Errorf("message:send = %d %q %s", code, h.Get("Content-Type"), body)
	}
	if gotSend.Message.MessageID != "m1" || gotSend.Blocking == nil || *gotSend.Blocking {
		t.Errorf("Send got %+v, want message m1, not blocking", gotSend)
	}

	// Proto field names are read too, but within the caller's own values.
	code, _, body = call(t, "POST", base+"/message:send", "application/json",
		`{"message":{"message_id":"m2","role":"ROLE_USER","parts":[{"data":{"my_key":1}}],"metadata":{"x_y":"z"}},"configuration":{"return_immediately":false}}`)
	if code != 200 || gotSend.Message.MessageID != "m2" || gotSend.Blocking == nil || !*gotSend.Blocking ||
		string(gotSend.Message.Parts[0].Data) != `{"my_key":1}` || gotSend.Message.Metadata["x_y"] != "z" {
		t.Errorf("message:send with proto names = %d %s; Send got %+v", code, body, gotSend)
	}

	code, _, body = call(t, "POST", base+"/message:send", "application/json",
		`{"message":{"messageId":"m3","role":"ROLE_USER","parts":[{"text":"x"}]},"configuration":{"return_immediately":true,"returnImmediately":false}}`)
	if code != 400 || !strings.Contains(body, `"message":"Invalid parameters: /configuration/returnImmediately: is given twice, as \"returnImmediately\" and as \"return_immediately\""`) {
		t.Errorf("a field under both names = %d %s", code, body)
	}

	code, _, body = call(t, "GET", base+"/tasks/t1?history_length=0", "", "")
	if code != 200 || body != completedT1 || gotID != "t1" || gotHistory == nil || *gotHistory != 0 {
		t.Errorf("GET /tasks/t1?history_length=0 = %d %s (asked %q, %v)", code, body, gotID, gotHistory)
	}

	// Another caller's task is answered byte for byte as a missing one,
	// and so is an id that no task could have. (An id that is not a
	// valid escape net/http refuses with 400 before any handler runs.)
	_, _, missing := call(t, "GET", base+"/tasks/nope", "", "")
	code, h, theirs := call(t, "GET", base+"/tasks/theirs", "", "")
	if code != 404 || h.Get("Content-Type") != "application/json" || theirs != notFound || missing != notFound {
		t.Errorf("GET another's task = %d %q %s; a missing one %s; want %s", code, h.Get("Content-Type"), theirs, missing, notFound)
	}
	for _, id := range []string{"%00", "%ff%fe", "%2F..%2F"} {
		if code, _, body = call(t, "GET", base+"/tasks/"+id, "", ""); code != 404 || body != notFound {
			t.Errorf("GET /tasks/%s = %d %s", id, code, body)
		}
	}

	code, _, body = call(t, "GET", base+"/tasks/t1?historyLength=x", "", "")
	want := `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"Invalid parameters: /historyLength: must be an integer",` +
		`"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_PARAMS","domain":"github.com/a2ad/a2ad"},` +
		`{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"historyLength","description":"must be an integer"}]}]}}`
	if code != 400 || body != want {
		t.Errorf("GET historyLength=x = %d\n got %s\nwant %s", code, body, want)
	}

	code, _, body = call(t, "POST", base+"/tasks/t1:cancel", "application/json", "")
	want = `{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"Task cannot be canceled","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE","domain":"a2a-protocol.org"}]}}`
	if code != 400 || body != want {
		t.Errorf("cancel of a completed task = %d %s", code, body)
	}
}

// TestBadInput pins the answers to what names no operation or cannot be
// read: 404, 405 with Allow, 400 with the parse error, 413, 415, and a
// version the binding does not speak.
func TestBadInput(t *testing.T) {
	ts, auditLog := serve(t, &transporttest.Service{})
	base := ts.URL + "/a2a/rest"
	tests := []struct {
		name, method, path, ct, body string
		header                       []string
		code                         int
		allow, want                  string
	}{
		{"unknown path", "GET", "/tasks/t1/artifacts", "", "", nil, 404, "",
			`{"error":{"code":404,"status":"NOT_FOUND","message":"No HTTP+JSON operation at GET /a2a/rest/tasks/t1/artifacts","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"METHOD_NOT_FOUND","domain":"github.com/a2ad/a2ad"}]}}`},
		{"wrong verb", "DELETE", "/message:send", "", "", nil, 405, "POST",
			`{"error":{"code":405,"status":"UNIMPLEMENTED","message":"Method DELETE not allowed on /a2a/rest/message:send: use POST","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"METHOD_NOT_FOUND","domain":"github.com/a2ad/a2ad"}]}}`},
		{"malformed JSON", "POST", "/message:send", "application/json", `{"message":`, nil, 400, "",
			`{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"Invalid JSON payload: unexpected end of JSON input at offset 11","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"PARSE_ERROR","domain":"github.com/a2ad/a2ad"}]}}`},
		{"oversized body", "POST", "/message:send", "application/json", `{"x":"` + strings.Repeat("a", testMaxBody) + `"}`, nil, 413, "",
			`{"error":{"code":413,"status":"RESOURCE_EXHAUSTED","message":"request body exceeds 1024 bytes","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_REQUEST","domain":"github.com/a2ad/a2ad"}]}}`},
		{"not JSON", "POST", "/message:send", "text/plain", `hi`, nil, 415, "",
			`{"error":{"code":415,"status":"INVALID_ARGUMENT","message":"Content-Type must be application/a2a+json or application/json","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_REQUEST","domain":"github.com/a2ad/a2ad"}]}}`},
		{"0.3", "GET", "/tasks/t1", "", "", []string{"A2A-Version", "0.3"}, 400, "",
			`{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"Version not supported","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"VERSION_NOT_SUPPORTED","domain":"a2a-protocol.org","metadata":{"supported":"1.0","version":"0.3"}}]}}`},
		{"a version no binding speaks", "GET", "/tasks/t1", "", "", []string{"A2A-Version", "9.9"}, 400, "",
			`{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"Version not supported","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"VERSION_NOT_SUPPORTED","domain":"a2a-protocol.org","metadata":{"supported":"1.0","version":"9.9"}}]}}`},
		{"push config of no task", "GET", "/tasks//pushNotificationConfigs/c1", "", "", nil, 404, "", notFound},
	}
	for _, tt := range tests {
		code, h, body := call(t, tt.method, base+tt.path, tt.ct, tt.body, tt.header...)
		if code != tt.code || h.Get("Allow") != tt.allow || body != tt.want {
			t.Errorf("%s: %d Allow %q\n got %s\nwant %d Allow %q\n     %s", tt.name, code, h.Get("Allow"), body, tt.code, tt.allow, tt.want)
		}
	}
	// Each is audited as a REST call, by what it asked for.
	recs := auditLog.String()
	for _, want := range []string{
		`"transport":"rest"`, `"rpc_method":"GET /tasks/t1/artifacts"`, `"rpc_method":"DELETE /message:send"`,
		`"rpc_method":"SendMessage","task_id":"","function_id":"","decision":"","outcome":"client_error","reason":"invalid_request","code":-32700`,
		// A version a2ad does not speak is the client's error.
		`"rpc_method":"GetTask","task_id":"","function_id":"","decision":"","outcome":"client_error","reason":"unsupported","code":-32009`,
	} {
		if !strings.Contains(recs, want) {
			t.Errorf("audit records lack %s:\n%s", want, recs)
		}
	}
}

// TestListAndPush: the list's filters come from the query (camelCase,
// snake_case, and a2a-go's lastUpdatedAfter), and the push config
// collection takes its task from the path.
func TestListAndPush(t *testing.T) {
	var gotQuery tasks.ListQuery
	var gotTask string
	var gotCfg a2a.PushConfig
	fake := &transporttest.Service{
		ListFn: func(q tasks.ListQuery) (tasks.ListPage, error) {
			gotQuery = q
			return tasks.ListPage{Tasks: []a2a.Task{*task("t1", a2a.StateCompleted)}, PageSize: 2, TotalSize: 3, NextPageToken: "AQ"}, nil
		},
		SetFn: func(taskID string, cfg a2a.PushConfig) (*a2a.TaskPushConfig, error) {
			gotTask, gotCfg = taskID, cfg
			cfg.ID = "p1"
			return &a2a.TaskPushConfig{TaskID: taskID, PushNotificationConfig: cfg}, nil
		},
	}
	ts, _ := serve(t, fake, func(c *jsonrpc.Config) {
		c.Caller = func(*http.Request) tasks.Caller { return tasks.Caller{ID: "alice"} }
	})
	base := ts.URL + "/a2a/rest"
	code, _, body := call(t, "GET", base+"/tasks?contextId=c1&status=TASK_STATE_WORKING&page_size=2&includeArtifacts=true&lastUpdatedAfter=2026-03-01T12:00:00Z", "", "")
	if want := `{"tasks":[` + completedT1 + `],"nextPageToken":"AQ","pageSize":2,"totalSize":3}`; code != 200 || body != want {
		t.Errorf("GET /tasks = %d\n got %s\nwant %s", code, body, want)
	}
	after := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	want := tasks.ListQuery{ListFilter: tasks.ListFilter{ContextID: "c1", State: a2a.StateWorking, StatusAfter: after}, PageSize: 2, IncludeArtifacts: true}
	if !gotQuery.StatusAfter.Equal(after) {
		t.Errorf("StatusAfter = %v, want %v", gotQuery.StatusAfter, after)
	}
	gotQuery.StatusAfter = after
	if !reflect.DeepEqual(gotQuery, want) {
		t.Errorf("List(%+v), want %+v", gotQuery, want)
	}
	if code, _, body = call(t, "GET", base+"/tasks?pageSize=1&pageSize=2", "", ""); code != 400 || !strings.Contains(body, `"message":"Invalid parameters: /pageSize: is given more than once"`) {
		t.Errorf("a parameter twice = %d %s", code, body)
	}

	code, _, body = call(t, "POST", base+"/tasks/t1/pushNotificationConfigs", "application/json", `{"url":"https://hooks.example/a","token":"tk"}`)
	if want := `{"taskId":"t1","id":"p1","url":"https://hooks.example/a","token":"tk"}`; code != 200 || body != want {
		t.Errorf("push create = %d\n got %s\nwant %s", code, body, want)
	}
	if gotTask != "t1" || gotCfg.URL != "https://hooks.example/a" || gotCfg.Wire != a2a.V10 {
		t.Errorf("SetPushConfig(%q, %+v)", gotTask, gotCfg)
	}
	code, _, body = call(t, "POST", base+"/tasks/t1/pushNotificationConfigs", "application/json", `{"taskId":"t2","url":"https://hooks.example/a"}`)
	if code != 400 || !strings.Contains(body, `"message":"Invalid parameters: /taskId: must be empty or the task of the path"`) {
		t.Errorf("push create for another task = %d %s", code, body)
	}
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/tasks/t1/pushNotificationConfigs", `{"configs":[],"nextPageToken":""}`},
		{"DELETE", "/tasks/t1/pushNotificationConfigs/p1", `{}`},
	} {
		if code, _, body := call(t, c.method, base+c.path, "", ""); code != 200 || body != c.want {
			t.Errorf("%s %s = %d %s, want %s", c.method, c.path, code, body, c.want)
		}
	}
	code, _, body = call(t, "GET", base+"/tasks/t1/pushNotificationConfigs/p9", "", "")
	if code != 404 || !strings.Contains(body, `"message":"Push notification config not found"`) {
		t.Errorf("push get of no config = %d %s", code, body)
	}
}

// TestSubscribe: a subscription streams StreamResponses with the
// events' sequences as ids, resumes from Last-Event-ID, and a terminal
// task has nothing to subscribe to.
func TestSubscribe(t *testing.T) {
	var gotAfter *uint64
	fake := &transporttest.Service{
		GetFn: func(id string, _ *int) (*a2a.Task, error) {
			if id == "done" {
				return task("done", a2a.StateCompleted), nil
			}
			return task(id, a2a.StateWorking), nil
		},
		WatchFn: func(id string, after *uint64, emit func(tasks.StreamEvent) error) error {
			gotAfter = after
			if err := emit(tasks.StreamEvent{Seq: 7, Task: task(id, a2a.StateWorking)}); err != nil {
				return err
			}
			return emit(tasks.StreamEvent{Seq: 8, Status: &a2a.StatusUpdateEvent{TaskID: id, ContextID: "c-" + id,
				Status: task(id, a2a.StateCompleted).Status}})
		},
	}
	ts, _ := serve(t, fake)
	base := ts.URL + "/a2a/rest"
	code, h, body := call(t, "GET", base+"/tasks/t1:subscribe", "", "")
	want := "id: 7\ndata: {\"task\":{\"id\":\"t1\",\"contextId\":\"c-t1\",\"status\":{\"state\":\"TASK_STATE_WORKING\",\"timestamp\":\"2026-01-02T03:04:05.006Z\"}}}\n\n" +
		"id: 8\ndata: {\"statusUpdate\":{\"taskId\":\"t1\",\"contextId\":\"c-t1\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\",\"timestamp\":\"2026-01-02T03:04:05.006Z\"}}}\n\n"
	if code != 200 || h.Get("Content-Type") != "text/event-stream" || body != want || gotAfter != nil {
		t.Errorf("subscribe = %d %q (after %v)\n got %q\nwant %q", code, h.Get("Content-Type"), gotAfter, body, want)
	}
	// Resuming a finished task's stream still gets what was missed.
	if code, _, _ = call(t, "POST", base+"/tasks/done:subscribe", "", "", "Last-Event-ID", "7"); code != 200 || gotAfter == nil || *gotAfter != 7 {
		t.Errorf("resume = %d, after %v; want 200 after 7", code, gotAfter)
	}
	code, _, body = call(t, "GET", base+"/tasks/done:subscribe", "", "")
	if code != 400 || !strings.Contains(body, `"status":"FAILED_PRECONDITION","message":"Task is in a terminal state`) {
		t.Errorf("subscribe to a finished task = %d %s", code, body)
	}
	code, _, body = call(t, "GET", base+"/tasks/t1:subscribe", "", "", "Last-Event-ID", "x")
	if code != 400 || !strings.Contains(body, `"message":"Invalid parameters: Last-Event-ID: must be a non-negative integer"`) {
		t.Errorf("a bad Last-Event-ID = %d %s", code, body)
	}
}

// TestAuthAndLimits: the core's refusals, in the binding's shape.
func TestAuthAndLimits(t *testing.T) {
	ts, _ := serve(t, &transporttest.Service{}, func(c *jsonrpc.Config) {
		c.Auth = denyAll{}
		c.ExtendedCard = func(transport.Principal) transport.Card { return transport.Card{JSON: []byte(`{"name":"x"}`)} }
	})
	code, h, body := call(t, "GET", ts.URL+"/a2a/rest/tasks/t1", "", "")
	var got struct {
		Error struct {
			Code    int
			Status  string
			Details []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 401 || h.Get("WWW-Authenticate") != `Bearer realm="a2ad"` ||
		got.Error.Status != "UNAUTHENTICATED" || got.Error.Details[0]["reason"] != "UNAUTHENTICATED" {
		t.Errorf("no key = %d %q %s", code, h.Get("WWW-Authenticate"), body)
	}
}

type denyAll struct{}

func (denyAll) Authenticate(*http.Request, string) (transport.Principal, transport.AuthResult) {
	return transport.Principal{}, transport.NoCredentials
}

// TestWritesNeedJSONOrAListedOrigin: a POST that changes a task with no
// body must still say it is JSON, as a browser's cross-origin "simple"
// request (no preflight) cannot, unless its Origin is one --cors-origins
// lists; a read, a POST subscription and a DELETE need no type.
func TestWritesNeedJSONOrAListedOrigin(t *testing.T) {
	var canceled []string
	fake := &transporttest.Service{
		CancelFn: func(id string) (*a2a.Task, error) {
			canceled = append(canceled, id)
			return task(id, a2a.StateCanceled), nil
		},
		GetFn:   func(id string, _ *int) (*a2a.Task, error) { return task(id, a2a.StateWorking), nil },
		WatchFn: func(string, *uint64, func(tasks.StreamEvent) error) error { return nil },
	}
	cors, err := httpx.NewCORS([]string{"https://app.example"})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := serve(t, fake, func(c *jsonrpc.Config) { c.CORS = cors })
	base := ts.URL + "/a2a/rest"
	const refused = `{"error":{"code":415,"status":"INVALID_ARGUMENT","message":"Content-Type must be application/a2a+json or application/json","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_REQUEST","domain":"github.com/a2ad/a2ad"}]}}`
	for _, tt := range []struct {
		name, ct string
		header   []string
		code     int
	}{
		{"no type, no origin", "", nil, 415},
		{"form type from another origin", "application/x-www-form-urlencoded", []string{"Origin", "https://evil.example"}, 415},
		{"text/plain from another origin", "text/plain", []string{"Origin", "https://evil.example"}, 415},
		{"no type from another origin", "", []string{"Origin", "https://evil.example"}, 415},
		{"JSON", "application/json", nil, 200},
		{"a2a+json", "application/a2a+json", nil, 200},
		{"no type from a listed origin", "", []string{"Origin", "https://app.example"}, 200},
	} {
		canceled = nil
		code, _, body := call(t, "POST", base+"/tasks/t1:cancel", tt.ct, "", tt.header...)
		if code != tt.code || (code == 415) != (body == refused) || (code == 415) == (len(canceled) == 1) {
			t.Errorf("%s: %d %s, canceled %v; want %d", tt.name, code, body, canceled, tt.code)
		}
	}
	if code, _, body := call(t, "GET", base+"/tasks/t1", "", ""); code != 200 {
		t.Errorf("GET with no type: %d %s", code, body)
	}
	if code, _, body := call(t, "POST", base+"/tasks/t1:subscribe", "", ""); code != 200 {
		t.Errorf("POST :subscribe with no type: %d %s", code, body)
	}
}
