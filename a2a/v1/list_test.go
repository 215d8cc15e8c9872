package v1_test

import (
	"encoding/json"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

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
				HistoryLength: wiretest.IntP(3), StatusTimestampAfter: wiretest.TimeP(t, "2026-03-01T12:00:00Z"), IncludeArtifacts: true}},
		// ProtoJSON: int32 as a decimal string or an exponent, enums by
		// number, UNSPECIFIED and 0 as no filter.
		{`{"pageSize":"50","historyLength":"0","status":3}`, a2a.ListTasksParams{PageSize: 50, HistoryLength: wiretest.IntP(0), Status: a2a.StateCompleted}},
		{`{"pageSize":1e2}`, a2a.ListTasksParams{PageSize: 100}},
		{`{"status":"TASK_STATE_UNSPECIFIED"}`, a2a.ListTasksParams{}},
		{`{"status":"UNRECOGNIZED"}`, a2a.ListTasksParams{}}, // the JS SDK's "no status"
		{`{"status":0,"pageSize":0}`, a2a.ListTasksParams{}},
		{`{"status":null,"pageSize":null,"historyLength":null,"statusTimestampAfter":null}`, a2a.ListTasksParams{}},
		// The proto field names, as ProtoJSON parsers read them too.
		{`{"context_id":"c1","page_size":7,"page_token":"tok","history_length":3,"status_timestamp_after":"2026-03-01T12:00:00Z","include_artifacts":true}`,
			a2a.ListTasksParams{ContextID: "c1", PageSize: 7, PageToken: "tok",
				HistoryLength: wiretest.IntP(3), StatusTimestampAfter: wiretest.TimeP(t, "2026-03-01T12:00:00Z"), IncludeArtifacts: true}},
		// Neither a JSON name nor a proto name: ignored.
		{`{"Page_Size":500,"pagesize":500,"page__size":500}`, a2a.ListTasksParams{}},
	}
	for _, tc := range tests {
		wiretest.CheckListParams(t, "DecodeListTasksV1", v1.DecodeListTasks, tc.params, tc.want)
	}
	names := []string{"UNSPECIFIED", "SUBMITTED", "WORKING", "COMPLETED", "FAILED", "CANCELED", "INPUT_REQUIRED", "REJECTED", "AUTH_REQUIRED"}
	states := []a2a.TaskState{"", a2a.StateSubmitted, a2a.StateWorking, a2a.StateCompleted, a2a.StateFailed, a2a.StateCanceled,
		a2a.StateInputRequired, a2a.StateRejected, a2a.StateAuthRequired}
	for i, name := range names {
		byName, err1 := v1.DecodeListTasks(json.RawMessage(`{"status":"TASK_STATE_` + name + `"}`))
		byNumber, err2 := v1.DecodeListTasks(json.RawMessage(`{"status":` + string(rune('0'+i)) + `}`))
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
		{`[]`, []a2a.Problem{wiretest.Prob("/", "must be an object, not an array")}},
		{`{"tenant":1}`, []a2a.Problem{wiretest.Prob("/tenant", "must be a string, not a number")}},
		{`{"contextId":true}`, []a2a.Problem{wiretest.Prob("/contextId", "must be a string, not a boolean")}},
		{`{"status":"working"}`, []a2a.Problem{wiretest.Prob("/status", stateProblemV1)}},
		// A proto name's problem is located with the JSON name; a member
		// given under both names is a problem, whatever the values.
		{`{"page_size":500}`, []a2a.Problem{wiretest.Prob("/pageSize", "must be from 1 to 100, not 500")}},
		{`{"pageSize":5,"page_size":5}`, []a2a.Problem{wiretest.Prob("/pageSize", `is given twice, as "pageSize" and as "page_size"`)}},
		{`{"include_artifacts":"yes","includeArtifacts":true,"context_id":"a","contextId":"b"}`, []a2a.Problem{
			wiretest.Prob("/contextId", `is given twice, as "contextId" and as "context_id"`),
			wiretest.Prob("/includeArtifacts", `is given twice, as "includeArtifacts" and as "include_artifacts"`),
		}},
		{`{"status":"TASK_STATE_CANCELLED"}`, []a2a.Problem{wiretest.Prob("/status", stateProblemV1)}},
		{`{"status":9}`, []a2a.Problem{wiretest.Prob("/status", stateProblemV1)}},
		{`{"status":-1}`, []a2a.Problem{wiretest.Prob("/status", stateProblemV1)}},
		{`{"status":1.5}`, []a2a.Problem{wiretest.Prob("/status", stateProblemV1)}},
		{`{"status":{}}`, []a2a.Problem{wiretest.Prob("/status", stateProblemV1)}},
		{`{"pageSize":101}`, []a2a.Problem{wiretest.Prob("/pageSize", "must be from 1 to 100, not 101")}},
		{`{"pageSize":"101"}`, []a2a.Problem{wiretest.Prob("/pageSize", "must be from 1 to 100, not 101")}},
		{`{"pageSize":-5}`, []a2a.Problem{wiretest.Prob("/pageSize", "must not be negative")}},
		{`{"pageSize":"0x10"}`, []a2a.Problem{wiretest.Prob("/pageSize", "must be an integer")}},
		{`{"pageSize":7.5}`, []a2a.Problem{wiretest.Prob("/pageSize", "must be an integer")}},
		{`{"pageSize":"seven"}`, []a2a.Problem{wiretest.Prob("/pageSize", "must be an integer")}},
		{`{"pageSize":""}`, []a2a.Problem{wiretest.Prob("/pageSize", "must be an integer")}},
		{`{"pageSize":true}`, []a2a.Problem{wiretest.Prob("/pageSize", "must be an integer")}},
		{`{"pageSize":4294967296}`, []a2a.Problem{wiretest.Prob("/pageSize", "must be at most 2147483647")}},
		{`{"pageToken":[]}`, []a2a.Problem{wiretest.Prob("/pageToken", "must be a string, not an array")}},
		{`{"historyLength":-1}`, []a2a.Problem{wiretest.Prob("/historyLength", "must not be negative")}},
		{`{"historyLength":"x"}`, []a2a.Problem{wiretest.Prob("/historyLength", "must be an integer")}},
		{`{"statusTimestampAfter":"yesterday"}`, []a2a.Problem{wiretest.Prob("/statusTimestampAfter", wiretest.TimeProblem)}},
		{`{"statusTimestampAfter":{"seconds":1}}`, []a2a.Problem{wiretest.Prob("/statusTimestampAfter", "must be a string, not an object")}},
		{`{"includeArtifacts":"yes"}`, []a2a.Problem{wiretest.Prob("/includeArtifacts", "must be a boolean, not a string")}},
		{`{"pageSize":0.1,"status":"x","includeArtifacts":null,"historyLength":-3}`, []a2a.Problem{
			wiretest.Prob("/status", stateProblemV1),
			wiretest.Prob("/pageSize", "must be an integer"),
			wiretest.Prob("/historyLength", "must not be negative"),
		}},
	}
	for _, tc := range tests {
		_, err := v1.DecodeListTasks(json.RawMessage(tc.params))
		t.Run(tc.params, func(t *testing.T) { wiretest.CheckInvalidParams(t, err, tc.want...) })
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
			"0.3": v03.DecodeListTasks, "1.0": v1.DecodeListTasks,
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
