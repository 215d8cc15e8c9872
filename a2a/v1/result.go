package v1

import (
	"encoding/json"
	"strconv"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wire"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// Result is the result of a 1.0 JSON-RPC method: *StreamResponse
// (SendMessage and every streamed event), TaskResult (GetTask,
// CancelTask), PushConfigResult, *PushConfigList, *TaskList and Empty.
type Result interface {
	// AppendJSON appends the result's 1.0 JSON to dst.
	AppendJSON(dst []byte) ([]byte, error)
}

var (
	_ Result = (*StreamResponse)(nil)
	_ Result = TaskResult{}
	_ Result = PushConfigResult{}
	_ Result = (*PushConfigList)(nil)
	_ Result = (*TaskList[a2a.Task])(nil)
	_ Result = Empty{}
)

// AppendResult appends the JSON-RPC success response carrying r's JSON to
// dst. If r does not encode, dst is returned unchanged with the error, so
// that the caller can append an error response instead.
func AppendResult(dst []byte, id json.RawMessage, r Result) ([]byte, error) {
	n := len(dst)
	out, err := r.AppendJSON(a2a.AppendResultStart(dst, id))
	if err != nil {
		return dst[:n], err
	}
	return append(out, '}'), nil
}

// StreamResponse is the oneof wrapper around a task, a message or a task
// event: {"task":…}, {"message":…}, {"statusUpdate":…} or
// {"artifactUpdate":…}. It is the result of SendMessage (task or
// message), each event of SendStreamingMessage and SubscribeToTask, and
// the body of a 1.0 webhook call. Exactly one field must be set.
type StreamResponse struct {
	Task           *a2a.Task
	Message        *a2a.Message
	StatusUpdate   *a2a.StatusUpdateEvent
	ArtifactUpdate *a2a.ArtifactUpdateEvent
}

// AppendJSON appends r's JSON. Unless exactly one field is set, it is an
// error.
func (r *StreamResponse) AppendJSON(dst []byte) ([]byte, error) {
	n := 0
	for _, set := range [...]bool{r.Task != nil, r.Message != nil, r.StatusUpdate != nil, r.ArtifactUpdate != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, unsupported("stream response with " + strconv.Itoa(n) + " members set")
	}
	var err error
	switch {
	case r.Task != nil:
		dst, err = AppendTask(append(dst, `{"task":`...), r.Task)
	case r.Message != nil:
		dst, err = AppendMessage(append(dst, `{"message":`...), r.Message)
	case r.StatusUpdate != nil:
		dst, err = AppendStatusUpdate(append(dst, `{"statusUpdate":`...), r.StatusUpdate)
	default:
		dst, err = AppendArtifactUpdate(append(dst, `{"artifactUpdate":`...), r.ArtifactUpdate)
	}
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// TaskResult is a bare Task as a result: GetTask's and CancelTask's.
type TaskResult struct{ Task *a2a.Task }

// AppendJSON appends the task's JSON.
func (r TaskResult) AppendJSON(dst []byte) ([]byte, error) { return AppendTask(dst, r.Task) }

// PushConfigResult is a TaskPushNotificationConfig as a result:
// CreateTaskPushNotificationConfig's and GetTaskPushNotificationConfig's.
type PushConfigResult struct{ Config *a2a.TaskPushConfig }

// AppendJSON appends the config's JSON.
func (r PushConfigResult) AppendJSON(dst []byte) ([]byte, error) {
	return AppendPushConfig(dst, r.Config)
}

// PushConfigList is the result of ListTaskPushNotificationConfigs.
type PushConfigList struct {
	Configs []a2a.TaskPushConfig
	// NextPageToken is "" on the last page.
	NextPageToken string
}

// AppendJSON appends l's JSON, {"configs":[…],"nextPageToken":…}; both
// members are always present.
func (l *PushConfigList) AppendJSON(dst []byte) ([]byte, error) {
	dst, err := wire.AppendList(append(dst, `{"configs":`...), l.Configs, AppendPushConfig)
	if err != nil {
		return nil, err
	}
	dst = append(dst, `,"nextPageToken":`...)
	dst = jsonw.AppendString(dst, l.NextPageToken)
	return append(dst, '}'), nil
}

// AppendTaskList appends the JSON of a ListTasks result:
// {"tasks":[…],"nextPageToken":…,"pageSize":…,"totalSize":…}, every
// member always present ("tasks" is [] when there are none). The tasks
// are written as they are: trimming history or artifacts is the caller's.
func AppendTaskList[T a2a.Task | *a2a.Task](dst []byte, tasks []T, nextPageToken string, pageSize, totalSize int) ([]byte, error) {
	dst, err := wire.AppendList(append(dst, `{"tasks":`...), tasks, appendTaskOrPointer[T])
	if err != nil {
		return nil, err
	}
	return appendListEnd(dst, nextPageToken, pageSize, totalSize), nil
}

// appendListEnd appends what follows a task list's tasks.
func appendListEnd(dst []byte, nextPageToken string, pageSize, totalSize int) []byte {
	dst = append(dst, `,"nextPageToken":`...)
	dst = jsonw.AppendString(dst, nextPageToken)
	dst = append(dst, `,"pageSize":`...)
	dst = strconv.AppendInt(dst, int64(pageSize), 10)
	dst = append(dst, `,"totalSize":`...)
	dst = strconv.AppendInt(dst, int64(totalSize), 10)
	return append(dst, '}')
}

// appendTaskOrPointer appends the JSON of *v, a task or a pointer to one.
func appendTaskOrPointer[T a2a.Task | *a2a.Task](dst []byte, v *T) ([]byte, error) {
	t, err := taskOf(v)
	if err != nil {
		return nil, err
	}
	return AppendTask(dst, t)
}

// taskOf is *v, a task or a pointer to one, which must not be nil.
func taskOf[T a2a.Task | *a2a.Task](v *T) (*a2a.Task, error) {
	var t *a2a.Task
	switch v := any(v).(type) {
	case *a2a.Task:
		t = v
	case **a2a.Task:
		t = *v
	}
	if t == nil {
		return nil, unsupported("nil task in a task list")
	}
	return t, nil
}

// TaskList is a ListTasks result, for AppendResult.
type TaskList[T a2a.Task | *a2a.Task] struct {
	Tasks         []T
	NextPageToken string
	PageSize      int
	TotalSize     int
}

// AppendJSON appends l's JSON, as AppendTaskList does.
func (l *TaskList[T]) AppendJSON(dst []byte) ([]byte, error) {
	return AppendTaskList(dst, l.Tasks, l.NextPageToken, l.PageSize, l.TotalSize)
}

// Empty is google.protobuf.Empty, the result of
// DeleteTaskPushNotificationConfig: {}.
type Empty struct{}

// AppendJSON appends {}.
func (Empty) AppendJSON(dst []byte) ([]byte, error) { return append(dst, "{}"...), nil }
