package a2a_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

func intp(n int) *int { return &n }

func timep(tb testing.TB, s string) *time.Time {
	tb.Helper()
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		tb.Fatal(err)
	}
	return &t
}

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
				HistoryLength: intp(2), StatusTimestampAfter: timep(t, "2026-03-01T10:00:00.123456789Z"), IncludeArtifacts: true}},
		{`{"status":"","page_size":0,"history_length":0,"include_artifacts":false,"context_id":null,"unknown":[1]}`,
			a2a.ListTasksParams{HistoryLength: intp(0)}},
		{`{"page_size":1}`, a2a.ListTasksParams{PageSize: 1}},
		{`{"page_size":100}`, a2a.ListTasksParams{PageSize: 100}},
		{`{"last_updated_after":"2026-03-01T12:00:00Z"}`, a2a.ListTasksParams{StatusTimestampAfter: timep(t, "2026-03-01T12:00:00Z")}},
		// camelCase members are not 0.3 tasks/list fields: ignored.
		{`{"pageSize":500,"contextId":"c"}`, a2a.ListTasksParams{}},
	}
	for _, tc := range tests {
		got, err := a2a.DecodeListTasks(json.RawMessage(tc.params))
		if err != nil {
			t.Errorf("DecodeListTasks(%s): %v", tc.params, err)
			continue
		}
		if !listParamsEqual(got, tc.want) {
			t.Errorf("DecodeListTasks(%s) = %+v, want %+v", tc.params, got, tc.want)
		}
	}
	for _, st := range []a2a.TaskState{a2a.StateSubmitted, a2a.StateWorking, a2a.StateInputRequired, a2a.StateAuthRequired,
		a2a.StateCompleted, a2a.StateCanceled, a2a.StateFailed, a2a.StateRejected, a2a.StateUnknown} {
		got, err := a2a.DecodeListTasks(json.RawMessage(`{"status":"` + string(st) + `"}`))
		if err != nil || got.Status != st {
			t.Errorf("status %q: %+v, %v", st, got, err)
		}
	}
}

func listParamsEqual(a, b a2a.ListTasksParams) bool {
	ta, tb := a.StatusTimestampAfter, b.StatusTimestampAfter
	a.StatusTimestampAfter, b.StatusTimestampAfter = nil, nil
	if (ta == nil) != (tb == nil) || (ta != nil && !ta.Equal(*tb)) {
		return false
	}
	return reflect.DeepEqual(a, b)
}

const stateProblem03 = `must be a task state: "submitted", "working", "input-required", "auth-required", "completed", "canceled", "failed", "rejected" or "unknown"`

const timeProblem = `must be an RFC 3339 timestamp such as "2026-01-02T15:04:05Z"`

func TestDecodeListTasksProblems(t *testing.T) {
	tests := []struct {
		params string
		want   []a2a.Problem
	}{
		{`[]`, []a2a.Problem{prob("/", "must be an object, not an array")}},
		{`"x"`, []a2a.Problem{prob("/", "must be an object, not a string")}},
		{`{`, []a2a.Problem{prob("/", "must be an object")}},
		{`{"context_id":1}`, []a2a.Problem{prob("/context_id", "must be a string, not a number")}},
		{`{"status":"TASK_STATE_WORKING"}`, []a2a.Problem{prob("/status", stateProblem03)}},
		{`{"status":"Working"}`, []a2a.Problem{prob("/status", stateProblem03)}},
		{`{"status":2}`, []a2a.Problem{prob("/status", "must be a string, not a number")}},
		{`{"page_size":0.5}`, []a2a.Problem{prob("/page_size", "must be an integer")}},
		{`{"page_size":"7"}`, []a2a.Problem{prob("/page_size", "must be an integer")}},
		{`{"page_size":101}`, []a2a.Problem{prob("/page_size", "must be from 1 to 100, not 101")}},
		{`{"page_size":-1}`, []a2a.Problem{prob("/page_size", "must be from 1 to 100, not -1")}},
		{`{"page_token":7}`, []a2a.Problem{prob("/page_token", "must be a string, not a number")}},
		{`{"history_length":-1}`, []a2a.Problem{prob("/history_length", "must not be negative")}},
		{`{"history_length":"2"}`, []a2a.Problem{prob("/history_length", "must be an integer")}},
		{`{"last_updated_after":"2026-03-01"}`, []a2a.Problem{prob("/last_updated_after", timeProblem)}},
		{`{"last_updated_after":"2026-03-01T12:00:00"}`, []a2a.Problem{prob("/last_updated_after", timeProblem)}},
		{`{"last_updated_after":1767268800000}`, []a2a.Problem{prob("/last_updated_after", "must be a string, not a number")}},
		{`{"include_artifacts":"true"}`, []a2a.Problem{prob("/include_artifacts", "must be a boolean, not a string")}},
		{`{"context_id":[],"status":"x","page_size":1000,"page_token":{},"history_length":-2,"last_updated_after":"now","include_artifacts":1}`,
			[]a2a.Problem{
				prob("/context_id", "must be a string, not an array"),
				prob("/status", stateProblem03),
				prob("/page_size", "must be from 1 to 100, not 1000"),
				prob("/page_token", "must be a string, not an object"),
				prob("/history_length", "must not be negative"),
				prob("/last_updated_after", timeProblem),
				prob("/include_artifacts", "must be a boolean, not a number"),
			}},
	}
	for _, tc := range tests {
		_, err := a2a.DecodeListTasks(json.RawMessage(tc.params))
		t.Run(tc.params, func(t *testing.T) { checkInvalidParams(t, err, tc.want...) })
	}
}

func TestDecodeListTasksV1Good(t *testing.T) {
	tests := []struct {
		params string
		want   a2a.ListTasksParams
	}{
		{``, a2a.ListTasksParams{}},
		{`{}`, a2a.ListTasksParams{}},
		{`{"tenant":"t1","contextId":"c1","status":"TASK_STATE_AUTH_REQUIRED","pageSize":7,"pageToken":"tok","historyLength":3,` +
			`"statusTimestampAfter":"2026-03-01T12:00:00Z","includeArtifacts":true}`,
			a2a.ListTasksParams{ContextID: "c1", Status: a2a.StateAuthRequired, PageSize: 7, PageToken: "tok",
				HistoryLength: intp(3), StatusTimestampAfter: timep(t, "2026-03-01T12:00:00Z"), IncludeArtifacts: true}},
		// ProtoJSON: int32 as a decimal string or an exponent, enums by
		// number, UNSPECIFIED and 0 as no filter.
		{`{"pageSize":"50","historyLength":"0","status":3}`, a2a.ListTasksParams{PageSize: 50, HistoryLength: intp(0), Status: a2a.StateCompleted}},
		{`{"pageSize":1e2}`, a2a.ListTasksParams{PageSize: 100}},
		{`{"status":"TASK_STATE_UNSPECIFIED"}`, a2a.ListTasksParams{}},
		{`{"status":"UNRECOGNIZED"}`, a2a.ListTasksParams{}}, // the JS SDK's "no status"
		{`{"status":0,"pageSize":0}`, a2a.ListTasksParams{}},
		{`{"status":null,"pageSize":null,"historyLength":null,"statusTimestampAfter":null}`, a2a.ListTasksParams{}},
		// snake_case members are not 1.0 fields: ignored.
		{`{"page_size":500}`, a2a.ListTasksParams{}},
	}
	for _, tc := range tests {
		got, err := a2a.DecodeListTasksV1(json.RawMessage(tc.params))
		if err != nil {
			t.Errorf("DecodeListTasksV1(%s): %v", tc.params, err)
			continue
		}
		if !listParamsEqual(got, tc.want) {
			t.Errorf("DecodeListTasksV1(%s) = %+v, want %+v", tc.params, got, tc.want)
		}
	}
	names := []string{"UNSPECIFIED", "SUBMITTED", "WORKING", "COMPLETED", "FAILED", "CANCELED", "INPUT_REQUIRED", "REJECTED", "AUTH_REQUIRED"}
	states := []a2a.TaskState{"", a2a.StateSubmitted, a2a.StateWorking, a2a.StateCompleted, a2a.StateFailed, a2a.StateCanceled,
		a2a.StateInputRequired, a2a.StateRejected, a2a.StateAuthRequired}
	for i, name := range names {
		byName, err1 := a2a.DecodeListTasksV1(json.RawMessage(`{"status":"TASK_STATE_` + name + `"}`))
		byNumber, err2 := a2a.DecodeListTasksV1(json.RawMessage(`{"status":` + string(rune('0'+i)) + `}`))
		if err1 != nil || err2 != nil || byName.Status != states[i] || byNumber.Status != states[i] {
			t.Errorf("TASK_STATE_%s (%d): %q %v, %q %v; want %q", name, i, byName.Status, err1, byNumber.Status, err2, states[i])
		}
	}
}

const stateProblemV1 = `must be a TaskState: a TASK_STATE_* name (such as "TASK_STATE_WORKING") or its number from 0 to 8`

func TestDecodeListTasksV1Problems(t *testing.T) {
	tests := []struct {
		params string
		want   []a2a.Problem
	}{
		{`[]`, []a2a.Problem{prob("/", "must be an object, not an array")}},
		{`{"tenant":1}`, []a2a.Problem{prob("/tenant", "must be a string, not a number")}},
		{`{"contextId":true}`, []a2a.Problem{prob("/contextId", "must be a string, not a boolean")}},
		{`{"status":"working"}`, []a2a.Problem{prob("/status", stateProblemV1)}},
		{`{"status":"TASK_STATE_CANCELLED"}`, []a2a.Problem{prob("/status", stateProblemV1)}},
		{`{"status":9}`, []a2a.Problem{prob("/status", stateProblemV1)}},
		{`{"status":-1}`, []a2a.Problem{prob("/status", stateProblemV1)}},
		{`{"status":1.5}`, []a2a.Problem{prob("/status", stateProblemV1)}},
		{`{"status":{}}`, []a2a.Problem{prob("/status", stateProblemV1)}},
		{`{"pageSize":101}`, []a2a.Problem{prob("/pageSize", "must be from 1 to 100, not 101")}},
		{`{"pageSize":"101"}`, []a2a.Problem{prob("/pageSize", "must be from 1 to 100, not 101")}},
		{`{"pageSize":-5}`, []a2a.Problem{prob("/pageSize", "must not be negative")}},
		{`{"pageSize":"0x10"}`, []a2a.Problem{prob("/pageSize", "must be an integer")}},
		{`{"pageSize":7.5}`, []a2a.Problem{prob("/pageSize", "must be an integer")}},
		{`{"pageSize":"seven"}`, []a2a.Problem{prob("/pageSize", "must be an integer")}},
		{`{"pageSize":""}`, []a2a.Problem{prob("/pageSize", "must be an integer")}},
		{`{"pageSize":true}`, []a2a.Problem{prob("/pageSize", "must be an integer")}},
		{`{"pageSize":4294967296}`, []a2a.Problem{prob("/pageSize", "must be at most 2147483647")}},
		{`{"pageToken":[]}`, []a2a.Problem{prob("/pageToken", "must be a string, not an array")}},
		{`{"historyLength":-1}`, []a2a.Problem{prob("/historyLength", "must not be negative")}},
		{`{"historyLength":"x"}`, []a2a.Problem{prob("/historyLength", "must be an integer")}},
		{`{"statusTimestampAfter":"yesterday"}`, []a2a.Problem{prob("/statusTimestampAfter", timeProblem)}},
		{`{"statusTimestampAfter":{"seconds":1}}`, []a2a.Problem{prob("/statusTimestampAfter", "must be a string, not an object")}},
		{`{"includeArtifacts":"yes"}`, []a2a.Problem{prob("/includeArtifacts", "must be a boolean, not a string")}},
		{`{"pageSize":0.1,"status":"x","includeArtifacts":null,"historyLength":-3}`, []a2a.Problem{
			prob("/status", stateProblemV1),
			prob("/pageSize", "must be an integer"),
			prob("/historyLength", "must not be negative"),
		}},
	}
	for _, tc := range tests {
		_, err := a2a.DecodeListTasksV1(json.RawMessage(tc.params))
		t.Run(tc.params, func(t *testing.T) { checkInvalidParams(t, err, tc.want...) })
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
	got, err := a2a.AppendListTasksResult([]byte("x"), &r)
	want := `x{"tasks":[{"kind":"task","id":"t2","contextId":"c","status":{"state":"working","timestamp":"2026-03-01T12:00:00.000Z"}},` +
		`{"kind":"task","id":"t1","contextId":"c","status":{"state":"completed"}}],"total_size":9,"page_size":2,"next_page_token":"AQ-_"}`
	if err != nil || string(got) != want {
		t.Fatalf("AppendListTasksResult =\n%s, %v\nwant\n%s", got, err, want)
	}
	// The last page: no tasks, and every member still there.
	got, err = a2a.AppendListTasksResult(nil, &a2a.ListTasksResult{PageSize: 50})
	if want := `{"tasks":[],"total_size":0,"page_size":50,"next_page_token":""}`; err != nil || string(got) != want {
		t.Fatalf("empty page = %s, %v; want %s", got, err, want)
	}
	bad := a2a.ListTasksResult{Tasks: []a2a.Task{{ID: "t", Status: a2a.TaskStatus{State: a2a.StateWorking},
		History: []a2a.Message{{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{{Kind: "bogus"}}}}}}}
	if _, err := a2a.AppendListTasksResult(nil, &bad); err == nil {
		t.Fatal("a task that cannot be encoded: no error")
	}
}

// FuzzDecodeListTasks checks both list decoders never panic, report
// problems as -32602 with located problems, and accept only values in
// range.
func FuzzDecodeListTasks(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"page_size":7,"status":"working","last_updated_after":"2026-03-01T12:00:00Z"}`,
		`{"pageSize":"7","status":3,"statusTimestampAfter":"2026-03-01T12:00:00Z","historyLength":"1e1"}`,
		`{"status":"TASK_STATE_WORKING","pageSize":1e2}`, `{"history_length":-1,"include_artifacts":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for name, decode := range map[string]func(json.RawMessage) (a2a.ListTasksParams, *a2a.Error){
			"0.3": a2a.DecodeListTasks, "1.0": a2a.DecodeListTasksV1,
		} {
			p, err := decode(raw)
			if err != nil {
				list, ok := err.Data["errors"].([]any)
				if err.Code != a2a.CodeInvalidParams || !ok || len(list) == 0 {
					t.Fatalf("%s decode(%q) error = %d %q %v", name, raw, err.Code, err.Message, err.Data)
				}
				continue
			}
			if p.PageSize < 0 || p.PageSize > a2a.MaxListPageSize || (p.HistoryLength != nil && *p.HistoryLength < 0) {
				t.Fatalf("%s decode(%q) accepted %+v", name, raw, p)
			}
			if p.Status != "" && !p.Status.Terminal() && p.Status != a2a.StateSubmitted && p.Status != a2a.StateWorking &&
				!p.Status.Interrupted() && p.Status != a2a.StateUnknown {
				t.Fatalf("%s decode(%q) accepted status %q", name, raw, p.Status)
			}
		}
	})
}
