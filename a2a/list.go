package a2a

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/a2ad/a2ad/internal/jsonw"
)

// Page sizes of tasks/list and ListTasks.
const (
	DefaultListPageSize = 50
	MaxListPageSize     = 100
)

// The problems of a page token, as the list methods report them under
// the token's field (/page_token in 0.3, /pageToken in 1.0).
const (
	PageTokenMalformed  = "is not a page token this server issued"
	PageTokenOtherQuery = "was issued for another query (other filters or another caller)"
)

// ListTasksParams are the params of tasks/list (the a2a-go 0.3 extension)
// and of ListTasks (1.0).
type ListTasksParams struct {
	ContextID string
	// Status keeps the tasks in that state; "" keeps all.
	Status TaskState
	// PageSize is 1 to MaxListPageSize; 0 means unset (the default).
	PageSize  int
	PageToken string
	// HistoryLength is nil when unset (all history).
	HistoryLength *int
	// StatusTimestampAfter keeps the tasks whose status timestamp is at
	// or after it; nil keeps all. (0.3 last_updated_after.)
	StatusTimestampAfter *time.Time
	IncludeArtifacts     bool
}

// ListTasksResult is a page of tasks/list or ListTasks.
type ListTasksResult struct {
	Tasks         []Task
	TotalSize     int
	PageSize      int
	NextPageToken string
}

// DecodeListTasks reads and checks tasks/list params in the shape of the
// a2a-go v0.3 client (a2a.ListTasksRequest): context_id, status (a 0.3
// state), page_size, page_token, history_length, last_updated_after (RFC
// 3339) and include_artifacts, all optional; absent params mean all
// defaults. Unknown members are ignored.
func DecodeListTasks(raw json.RawMessage) (ListTasksParams, *Error) {
	var c checker
	var p ListTasksParams
	params := c.optionalRoot(raw)
	if params == nil {
		return p, c.err()
	}
	p.ContextID, _ = c.str("/context_id", params.Get("context_id"), false)
	if s, ok := c.str("/status", params.Get("status"), false); ok && s != "" {
		if st, known := states03[s]; known {
			p.Status = st
		} else {
			c.add("/status", `must be a task state: "submitted", "working", "input-required", "auth-required", "completed", "canceled", "failed", "rejected" or "unknown"`)
		}
	}
	if n := c.integer("/page_size", params.Get("page_size")); n != nil {
		p.PageSize = c.pageRange("/page_size", *n)
	}
	p.PageToken, _ = c.str("/page_token", params.Get("page_token"), false)
	p.HistoryLength = c.nonNegInt("/history_length", params.Get("history_length"))
	p.StatusTimestampAfter = c.timestamp("/last_updated_after", params.Get("last_updated_after"))
	if b := c.boolean("/include_artifacts", params.Get("include_artifacts")); b != nil {
		p.IncludeArtifacts = *b
	}
	return p, c.err()
}

// DecodeListTasksV1 reads and checks 1.0 ListTasks params
// (ListTasksRequest in ProtoJSON, read by the rules of the other 1.0
// decoders): tenant (ignored), contextId, status (a TASK_STATE_* name or
// its number; UNSPECIFIED, the proto default, keeps all), pageSize,
// pageToken, historyLength, statusTimestampAfter (RFC 3339) and
// includeArtifacts.
func DecodeListTasksV1(raw json.RawMessage) (ListTasksParams, *Error) {
	var c checker
	var p ListTasksParams
	params := c.optionalRoot(raw)
	if params == nil {
		return p, c.err()
	}
	c.tenant("/tenant", params)
	p.ContextID, _ = c.str("/contextId", params.Get("contextId"), false)
	p.Status = c.stateV1("/status", params.Get("status"))
	if n := c.int32V1("/pageSize", params.Get("pageSize")); n != nil {
		p.PageSize = c.pageRange("/pageSize", *n)
	}
	p.PageToken, _ = c.str("/pageToken", params.Get("pageToken"), false)
	p.HistoryLength = c.int32V1("/historyLength", params.Get("historyLength"))
	p.StatusTimestampAfter = c.timestamp("/statusTimestampAfter", params.Get("statusTimestampAfter"))
	if b := c.boolean("/includeArtifacts", params.Get("includeArtifacts")); b != nil {
		p.IncludeArtifacts = *b
	}
	return p, c.err()
}

var states03 = map[string]TaskState{
	"submitted": StateSubmitted, "working": StateWorking, "input-required": StateInputRequired,
	"auth-required": StateAuthRequired, "completed": StateCompleted, "canceled": StateCanceled,
	"failed": StateFailed, "rejected": StateRejected, "unknown": StateUnknown,
}

// statesV1 are the task states by their 1.0 enum number; 0
// (UNSPECIFIED) is no state.
var statesV1 = [...]TaskState{"", StateSubmitted, StateWorking, StateCompleted, StateFailed, StateCanceled,
	StateInputRequired, StateRejected, StateAuthRequired}

const stateV1Problem = "must be a TaskState: a TASK_STATE_* name (such as \"TASK_STATE_WORKING\") or its number from 0 to 8"

// stateV1 reads an optional TaskState filter, by name or number.
func (c *checker) stateV1(path string, raw json.RawMessage) TaskState {
	if len(raw) == 0 {
		return ""
	}
	switch jsonw.TypeOf(raw) {
	case jsonw.Null:
		return ""
	case jsonw.String:
		name := jsonw.Unquote(bytes.TrimSpace(raw))
		if name == "UNRECOGNIZED" {
			// The JS SDK 1.x (ts-proto) sends this when its caller set
			// no status: read it as no filter.
			return ""
		}
		if st, ok := TaskStateFromV1(name); ok {
			if st == StateUnknown { // TASK_STATE_UNSPECIFIED
				return ""
			}
			return st
		}
	case jsonw.Number:
		if n, err := strconv.Atoi(string(bytes.TrimSpace(raw))); err == nil && n >= 0 && n < len(statesV1) {
			return statesV1[n]
		}
	}
	c.add(path, stateV1Problem)
	return ""
}

// optionalRoot reads params that may be left out: absent or null params
// give an empty object.
func (c *checker) optionalRoot(raw json.RawMessage) jsonw.Members {
	if len(bytes.TrimSpace(raw)) == 0 || (json.Valid(raw) && jsonw.TypeOf(raw) == jsonw.Null) {
		return jsonw.Members{}
	}
	return c.root(raw)
}

// pageRange checks a page size: 0 is the default (0 returned), anything
// else must be 1 to MaxListPageSize.
func (c *checker) pageRange(path string, n int) int {
	if n != 0 && (n < 1 || n > MaxListPageSize) {
		c.add(path, "must be from 1 to "+strconv.Itoa(MaxListPageSize)+", not "+strconv.Itoa(n))
		return 0
	}
	return n
}

// integer reads an integer (JSON number without fraction); nil when absent.
func (c *checker) integer(path string, raw json.RawMessage) *int {
	if len(raw) == 0 || jsonw.TypeOf(raw) == jsonw.Null {
		return nil
	}
	var n int
	if jsonw.TypeOf(raw) != jsonw.Number || json.Unmarshal(raw, &n) != nil {
		c.add(path, "must be an integer")
		return nil
	}
	return &n
}

// timestamp reads an RFC 3339 timestamp; nil when absent.
func (c *checker) timestamp(path string, raw json.RawMessage) *time.Time {
	s, ok := c.str(path, raw, false)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		c.add(path, `must be an RFC 3339 timestamp such as "2026-01-02T15:04:05Z"`)
		return nil
	}
	return &t
}

// AppendListTasksResult appends r as the result of tasks/list in the
// shape the a2a-go v0.3 client reads (a2a.ListTasksResponse): tasks,
// total_size, page_size and next_page_token, all four always present
// (next_page_token is "" on the last page).
func AppendListTasksResult(dst []byte, r *ListTasksResult) ([]byte, error) {
	dst = append(dst, `{"tasks":[`...)
	for i := range r.Tasks {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = r.Tasks[i].AppendJSON(dst); err != nil {
			return nil, err
		}
	}
	dst = append(dst, `],"total_size":`...)
	dst = strconv.AppendInt(dst, int64(r.TotalSize), 10)
	dst = append(dst, `,"page_size":`...)
	dst = strconv.AppendInt(dst, int64(r.PageSize), 10)
	dst = append(dst, `,"next_page_token":`...)
	dst = jsonw.AppendString(dst, r.NextPageToken)
	return append(dst, '}'), nil
}
