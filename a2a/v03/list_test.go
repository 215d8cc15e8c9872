package v03_test

import (
	"encoding/json"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v03 "github.com/a2ad/a2ad/a2a/v03"
)

func TestDecodeListTasksGood(t *testing.T) {
	tests := []struct {
		params string
		want   a2a.ListTasksParams
	}{
		{``, a2a.ListTasksParams{}},
		{`null`, a2a.ListTasksParams{}},
		{`{}`, a2a.ListTasksParams{}},
		// What the a2a-go v0.3.15 client sends for a full request.
		{`{"context_id":"c1","status":"input-required","page_size":7,"page_token":"tok","history_length":2,` +
			`"last_updated_after":"2026-03-01T12:00:00.123456789+02:00","include_artifacts":true}`,
			a2a.ListTasksParams{ContextID: "c1", Status: a2a.StateInputRequired, PageSize: 7, PageToken: "tok",
				HistoryLength: wiretest.IntP(2), StatusTimestampAfter: wiretest.TimeP(t, "2026-03-01T10:00:00.123456789Z"), IncludeArtifacts: true}},
		{`{"status":"","page_size":0,"history_length":0,"include_artifacts":false,"context_id":null,"unknown":[1]}`,
			a2a.ListTasksParams{HistoryLength: wiretest.IntP(0)}},
		{`{"page_size":1}`, a2a.ListTasksParams{PageSize: 1}},
		{`{"page_size":100}`, a2a.ListTasksParams{PageSize: 100}},
		{`{"last_updated_after":"2026-03-01T12:00:00Z"}`, a2a.ListTasksParams{StatusTimestampAfter: wiretest.TimeP(t, "2026-03-01T12:00:00Z")}},
		// camelCase members are not 0.3 tasks/list fields: ignored.
		{`{"pageSize":500,"contextId":"c"}`, a2a.ListTasksParams{}},
	}
	for _, tc := range tests {
		got, err := v03.DecodeListTasks(json.RawMessage(tc.params))
		if err != nil {
			t.Errorf("DecodeListTasks(%s): %v", tc.params, err)
			continue
		}
		if !wiretest.ListParamsEqual(got, tc.want) {
			t.Errorf("DecodeListTasks(%s) = %+v, want %+v", tc.params, got, tc.want)
		}
	}
	for _, st := range []a2a.TaskState{a2a.StateSubmitted, a2a.StateWorking, a2a.StateInputRequired, a2a.StateAuthRequired,
		a2a.StateCompleted, a2a.StateCanceled, a2a.StateFailed, a2a.StateRejected, a2a.StateUnknown} {
		got, err := v03.DecodeListTasks(json.RawMessage(`{"status":"` + string(st) + `"}`))
		if err != nil || got.Status != st {
			t.Errorf("status %q: %+v, %v", st, got, err)
		}
	}
}

const stateProblem03 = `must be a task state: "submitted", "working", "input-required", "auth-required", "completed", "canceled", "failed", "rejected" or "unknown"`

func TestDecodeListTasksProblems(t *testing.T) {
	tests := []struct {
		params string
		want   []a2a.Problem
	}{
		{`[]`, []a2a.Problem{wiretest.Prob("/", "must be an object, not an array")}},
		{`"x"`, []a2a.Problem{wiretest.Prob("/", "must be an object, not a string")}},
		{`{`, []a2a.Problem{wiretest.Prob("/", "must be an object")}},
		{`{"context_id":1}`, []a2a.Problem{wiretest.Prob("/context_id", "must be a string, not a number")}},
		{`{"status":"TASK_STATE_WORKING"}`, []a2a.Problem{wiretest.Prob("/status", stateProblem03)}},
		{`{"status":"Working"}`, []a2a.Problem{wiretest.Prob("/status", stateProblem03)}},
		{`{"status":2}`, []a2a.Problem{wiretest.Prob("/status", "must be a string, not a number")}},
		{`{"page_size":0.5}`, []a2a.Problem{wiretest.Prob("/page_size", "must be an integer")}},
		{`{"page_size":"7"}`, []a2a.Problem{wiretest.Prob("/page_size", "must be an integer")}},
		{`{"page_size":101}`, []a2a.Problem{wiretest.Prob("/page_size", "must be from 1 to 100, not 101")}},
		{`{"page_size":-1}`, []a2a.Problem{wiretest.Prob("/page_size", "must be from 1 to 100, not -1")}},
		{`{"page_token":7}`, []a2a.Problem{wiretest.Prob("/page_token", "must be a string, not a number")}},
		{`{"history_length":-1}`, []a2a.Problem{wiretest.Prob("/history_length", "must not be negative")}},
		{`{"history_length":"2"}`, []a2a.Problem{wiretest.Prob("/history_length", "must be an integer")}},
		{`{"last_updated_after":"2026-03-01"}`, []a2a.Problem{wiretest.Prob("/last_updated_after", wiretest.TimeProblem)}},
		{`{"last_updated_after":"2026-03-01T12:00:00"}`, []a2a.Problem{wiretest.Prob("/last_updated_after", wiretest.TimeProblem)}},
		{`{"last_updated_after":1767268800000}`, []a2a.Problem{wiretest.Prob("/last_updated_after", "must be a string, not a number")}},
		{`{"include_artifacts":"true"}`, []a2a.Problem{wiretest.Prob("/include_artifacts", "must be a boolean, not a string")}},
		{`{"context_id":[],"status":"x","page_size":1000,"page_token":{},"history_length":-2,"last_updated_after":"now","include_artifacts":1}`,
			[]a2a.Problem{
				wiretest.Prob("/context_id", "must be a string, not an array"),
				wiretest.Prob("/status", stateProblem03),
				wiretest.Prob("/page_size", "must be from 1 to 100, not 1000"),
				wiretest.Prob("/page_token", "must be a string, not an object"),
				wiretest.Prob("/history_length", "must not be negative"),
				wiretest.Prob("/last_updated_after", wiretest.TimeProblem),
				wiretest.Prob("/include_artifacts", "must be a boolean, not a number"),
			}},
	}
	for _, tc := range tests {
		_, err := v03.DecodeListTasks(json.RawMessage(tc.params))
		t.Run(tc.params, func(t *testing.T) { wiretest.CheckInvalidParams(t, err, tc.want...) })
	}
}

func TestAppendListTasksResult(t *testing.T) {
	r := a2a.ListTasksResult{
		Tasks: []a2a.Task{
			{ID: "t2", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking, Timestamp: "2026-03-01T12:00:00.000Z"}},
			{ID: "t1", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted}},
		},
		TotalSize: 9, PageSize: 2, NextPageToken: "AQ-_",
	}
	got, err := v03.AppendListTasksResult([]byte("x"), &r)
	want := `x{"tasks":[{"kind":"task","id":"t2","contextId":"c","status":{"state":"working","timestamp":"2026-03-01T12:00:00.000Z"}},` +
		`{"kind":"task","id":"t1","contextId":"c","status":{"state":"completed"}}],"total_size":9,"page_size":2,"next_page_token":"AQ-_"}`
	if err != nil || string(got) != want {
		t.Fatalf("AppendListTasksResult =\n%s, %v\nwant\n%s", got, err, want)
	}
	// The last page: no tasks, and every member still there.
	got, err = v03.AppendListTasksResult(nil, &a2a.ListTasksResult{PageSize: 50})
	if want := `{"tasks":[],"total_size":0,"page_size":50,"next_page_token":""}`; err != nil || string(got) != want {
		t.Fatalf("empty page = %s, %v; want %s", got, err, want)
	}
	bad := a2a.ListTasksResult{Tasks: []a2a.Task{{ID: "t", Status: a2a.TaskStatus{State: a2a.StateWorking},
		History: []a2a.Message{{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{{Kind: "bogus"}}}}}}}
	if _, err := v03.AppendListTasksResult(nil, &bad); err == nil {
		t.Fatal("a task that cannot be encoded: no error")
	}
}
