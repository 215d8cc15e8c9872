package a2a

import (
	"encoding/json"
	"strconv"

	"github.com/a2ad/a2ad/internal/jsonw"
)

// The AppendJSONV1 methods write the A2A 1.0 wire JSON of a value: the
// ProtoJSON of lf.a2a.v1 (camelCase names, TASK_STATE_* and ROLE_* enums,
// no "kind" discriminators, one unified Part). Like the 0.3 AppendJSON
// methods they use no reflection, except for free-form metadata.
//
// ProtoJSON leaves out fields that hold their default value; so do these
// encoders for optional fields. Fields the 1.0 spec marks required are
// always written.

// ResultV1 is a value that has a 1.0 wire form and can be the result of a
// 1.0 JSON-RPC method: *Task (GetTask, CancelTask), *StreamResponseV1
// (SendMessage and every streamed event), *TaskPushConfig,
// *PushConfigListV1, *TaskListV1 and EmptyV1.
type ResultV1 interface {
	AppendJSONV1(dst []byte) ([]byte, error)
}

// AppendResultV1 appends the JSON-RPC success response carrying r's 1.0
// JSON to dst. If r does not encode, dst is returned unchanged with the
// error, so that the caller can append an error response instead.
func AppendResultV1(dst []byte, id json.RawMessage, r ResultV1) ([]byte, error) {
	n := len(dst)
	out, err := r.AppendJSONV1(AppendResultStart(dst, id))
	if err != nil {
		return dst[:n], err
	}
	return append(out, '}'), nil
}

// V1 returns s's 1.0 name, such as TASK_STATE_INPUT_REQUIRED. StateUnknown
// and "" are TASK_STATE_UNSPECIFIED, as 1.0 has no "unknown"; any other
// value gives "".
func (s TaskState) V1() string {
	switch s {
	case StateSubmitted:
		return "TASK_STATE_SUBMITTED"
	case StateWorking:
		return "TASK_STATE_WORKING"
	case StateInputRequired:
		return "TASK_STATE_INPUT_REQUIRED"
	case StateAuthRequired:
		return "TASK_STATE_AUTH_REQUIRED"
	case StateCompleted:
		return "TASK_STATE_COMPLETED"
	case StateCanceled:
		return "TASK_STATE_CANCELED"
	case StateFailed:
		return "TASK_STATE_FAILED"
	case StateRejected:
		return "TASK_STATE_REJECTED"
	case StateUnknown, "":
		return "TASK_STATE_UNSPECIFIED"
	}
	return ""
}

// TaskStateFromV1 returns the state whose 1.0 name is name;
// TASK_STATE_UNSPECIFIED gives StateUnknown. ok is false for any other
// name, including the 0.3 spellings.
func TaskStateFromV1(name string) (s TaskState, ok bool) {
	switch name {
	case "TASK_STATE_SUBMITTED":
		return StateSubmitted, true
	case "TASK_STATE_WORKING":
		return StateWorking, true
	case "TASK_STATE_INPUT_REQUIRED":
		return StateInputRequired, true
	case "TASK_STATE_AUTH_REQUIRED":
		return StateAuthRequired, true
	case "TASK_STATE_COMPLETED":
		return StateCompleted, true
	case "TASK_STATE_CANCELED":
		return StateCanceled, true
	case "TASK_STATE_FAILED":
		return StateFailed, true
	case "TASK_STATE_REJECTED":
		return StateRejected, true
	case "TASK_STATE_UNSPECIFIED":
		return StateUnknown, true
	}
	return "", false
}

// V1 returns r's 1.0 name: ROLE_USER, ROLE_AGENT, ROLE_UNSPECIFIED for "",
// and "" for any other value.
func (r Role) V1() string {
	switch r {
	case RoleUser:
		return "ROLE_USER"
	case RoleAgent:
		return "ROLE_AGENT"
	case "":
		return "ROLE_UNSPECIFIED"
	}
	return ""
}

func unsupported(what string) error { return &json.UnsupportedValueError{Str: what} }

// AppendJSONV1 appends p's 1.0 JSON: one of "text", "raw" (a file's
// base64 bytes), "url" (a file's URI) or "data", then "mediaType" and
// "filename" for a file, and "metadata". A file part with both bytes and
// a URI (which the 0.3 decoder refuses) is written with its bytes; one
// with neither is an error.
func (p *Part) AppendJSONV1(dst []byte) ([]byte, error) {
	switch p.Kind {
	case PartText:
		dst = append(dst, `{"text":`...)
		dst = jsonw.AppendString(dst, p.Text)
	case PartData:
		dst = append(dst, `{"data":`...)
		if len(p.Data) == 0 {
			dst = append(dst, "{}"...)
		} else {
			var err error
			if dst, err = jsonw.AppendCompact(dst, p.Data); err != nil {
				return nil, err
			}
		}
	case PartFile:
		f := p.File
		switch {
		case f == nil || (f.Bytes == "" && f.URI == ""):
			return nil, unsupported("file part without bytes or uri")
		case f.Bytes != "":
			dst = append(dst, `{"raw":`...)
			dst = jsonw.AppendString(dst, f.Bytes)
		default:
			dst = append(dst, `{"url":`...)
			dst = jsonw.AppendString(dst, f.URI)
		}
		if f.MimeType != "" {
			dst = append(dst, `,"mediaType":`...)
			dst = jsonw.AppendString(dst, f.MimeType)
		}
		if f.Name != "" {
			dst = append(dst, `,"filename":`...)
			dst = jsonw.AppendString(dst, f.Name)
		}
	default:
		return nil, unsupported("part kind " + strconv.Quote(string(p.Kind)))
	}
	return appendMetadata(dst, p.Metadata)
}

func appendPartsV1(dst []byte, parts []Part) ([]byte, error) {
	dst = append(dst, '[')
	for i := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = parts[i].AppendJSONV1(dst); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// AppendJSONV1 appends m's 1.0 JSON.
func (m *Message) AppendJSONV1(dst []byte) ([]byte, error) {
	role := m.Role.V1()
	if role == "" {
		return nil, unsupported("role " + strconv.Quote(string(m.Role)))
	}
	dst = append(dst, `{"messageId":`...)
	dst = jsonw.AppendString(dst, m.MessageID)
	if m.ContextID != "" {
		dst = append(dst, `,"contextId":`...)
		dst = jsonw.AppendString(dst, m.ContextID)
	}
	if m.TaskID != "" {
		dst = append(dst, `,"taskId":`...)
		dst = jsonw.AppendString(dst, m.TaskID)
	}
	dst = append(dst, `,"role":"`...)
	dst = append(dst, role...)
	dst = append(dst, `","parts":`...)
	var err error
	if dst, err = appendPartsV1(dst, m.Parts); err != nil {
		return nil, err
	}
	if len(m.Extensions) > 0 {
		dst = append(dst, `,"extensions":`...)
		dst = jsonw.AppendStrings(dst, m.Extensions)
	}
	if len(m.ReferenceTaskIDs) > 0 {
		dst = append(dst, `,"referenceTaskIds":`...)
		dst = jsonw.AppendStrings(dst, m.ReferenceTaskIDs)
	}
	return appendMetadata(dst, m.Metadata)
}

// AppendJSONV1 appends s's 1.0 JSON. A state 1.0 cannot name is an error.
func (s *TaskStatus) AppendJSONV1(dst []byte) ([]byte, error) {
	state := s.State.V1()
	if state == "" {
		return nil, unsupported("task state " + strconv.Quote(string(s.State)))
	}
	dst = append(dst, `{"state":"`...)
	dst = append(dst, state...)
	dst = append(dst, '"')
	if s.Message != nil {
		dst = append(dst, `,"message":`...)
		var err error
		if dst, err = s.Message.AppendJSONV1(dst); err != nil {
			return nil, err
		}
	}
	if s.Timestamp != "" {
		dst = append(dst, `,"timestamp":`...)
		dst = jsonw.AppendString(dst, s.Timestamp)
	}
	return append(dst, '}'), nil
}

// AppendJSONV1 appends a's 1.0 JSON.
func (a *Artifact) AppendJSONV1(dst []byte) ([]byte, error) { return a.appendJSON(dst, appendPartsV1) }

// AppendJSONV1 appends t's 1.0 JSON, the bare Task that GetTask and
// CancelTask answer with.
func (t *Task) AppendJSONV1(dst []byte) ([]byte, error) {
	dst = append(dst, `{"id":`...)
	dst = jsonw.AppendString(dst, t.ID)
	dst = append(dst, `,"contextId":`...)
	dst = jsonw.AppendString(dst, t.ContextID)
	dst = append(dst, `,"status":`...)
	var err error
	if dst, err = t.Status.AppendJSONV1(dst); err != nil {
		return nil, err
	}
	if len(t.Artifacts) > 0 {
		dst = append(dst, `,"artifacts":[`...)
		for i := range t.Artifacts {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = t.Artifacts[i].AppendJSONV1(dst); err != nil {
				return nil, err
			}
		}
		dst = append(dst, ']')
	}
	if len(t.History) > 0 {
		dst = append(dst, `,"history":[`...)
		for i := range t.History {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = t.History[i].AppendJSONV1(dst); err != nil {
				return nil, err
			}
		}
		dst = append(dst, ']')
	}
	return appendMetadata(dst, t.Metadata)
}

// AppendJSONV1 appends e's 1.0 JSON (TaskStatusUpdateEvent). 1.0 has no
// "final": the end of a stream says it.
func (e *StatusUpdateEvent) AppendJSONV1(dst []byte) ([]byte, error) {
	dst = append(dst, `{"taskId":`...)
	dst = jsonw.AppendString(dst, e.TaskID)
	dst = append(dst, `,"contextId":`...)
	dst = jsonw.AppendString(dst, e.ContextID)
	dst = append(dst, `,"status":`...)
	var err error
	if dst, err = e.Status.AppendJSONV1(dst); err != nil {
		return nil, err
	}
	return appendMetadata(dst, e.Metadata)
}

// AppendJSONV1 appends e's 1.0 JSON (TaskArtifactUpdateEvent).
func (e *ArtifactUpdateEvent) AppendJSONV1(dst []byte) ([]byte, error) {
	dst = append(dst, `{"taskId":`...)
	dst = jsonw.AppendString(dst, e.TaskID)
	dst = append(dst, `,"contextId":`...)
	dst = jsonw.AppendString(dst, e.ContextID)
	dst = append(dst, `,"artifact":`...)
	var err error
	if dst, err = e.Artifact.AppendJSONV1(dst); err != nil {
		return nil, err
	}
	if e.Append {
		dst = append(dst, `,"append":true`...)
	}
	if e.LastChunk {
		dst = append(dst, `,"lastChunk":true`...)
	}
	return appendMetadata(dst, e.Metadata)
}

// StreamResponseV1 is the 1.0 oneof wrapper around a task, a message or
// a task event: {"task":…}, {"message":…}, {"statusUpdate":…} or
// {"artifactUpdate":…}. It is the result of SendMessage (task or
// message), each event of SendStreamingMessage and SubscribeToTask, and
// the body of a 1.0 webhook call. Exactly one field must be set.
type StreamResponseV1 struct {
	Task           *Task
	Message        *Message
	StatusUpdate   *StatusUpdateEvent
	ArtifactUpdate *ArtifactUpdateEvent
}

// AppendJSONV1 appends r's 1.0 JSON. Unless exactly one field is set, it
// is an error.
func (r *StreamResponseV1) AppendJSONV1(dst []byte) ([]byte, error) {
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
		dst, err = r.Task.AppendJSONV1(append(dst, `{"task":`...))
	case r.Message != nil:
		dst, err = r.Message.AppendJSONV1(append(dst, `{"message":`...))
	case r.StatusUpdate != nil:
		dst, err = r.StatusUpdate.AppendJSONV1(append(dst, `{"statusUpdate":`...))
	default:
		dst, err = r.ArtifactUpdate.AppendJSONV1(append(dst, `{"artifactUpdate":`...))
	}
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// AppendJSONV1 appends c's 1.0 JSON, the flattened
// TaskPushNotificationConfig {taskId, id, url, token, authentication}.
// 1.0 authentication has a single scheme: the first of the 0.3 schemes
// is written, the others are dropped.
func (c *TaskPushConfig) AppendJSONV1(dst []byte) ([]byte, error) {
	pc := &c.PushNotificationConfig
	dst = append(dst, `{"taskId":`...)
	dst = jsonw.AppendString(dst, c.TaskID)
	if pc.ID != "" {
		dst = append(dst, `,"id":`...)
		dst = jsonw.AppendString(dst, pc.ID)
	}
	dst = append(dst, `,"url":`...)
	dst = jsonw.AppendString(dst, pc.URL)
	if pc.Token != "" {
		dst = append(dst, `,"token":`...)
		dst = jsonw.AppendString(dst, pc.Token)
	}
	if a := pc.Authentication; a != nil {
		scheme := ""
		if len(a.Schemes) > 0 {
			scheme = a.Schemes[0]
		}
		dst = append(dst, `,"authentication":{"scheme":`...)
		dst = jsonw.AppendString(dst, scheme)
		if a.Credentials != "" {
			dst = append(dst, `,"credentials":`...)
			dst = jsonw.AppendString(dst, a.Credentials)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

// PushConfigListV1 is the result of ListTaskPushNotificationConfigs.
type PushConfigListV1 struct {
	Configs []TaskPushConfig
	// NextPageToken is "" on the last page.
	NextPageToken string
}

// AppendJSONV1 appends l's 1.0 JSON, {"configs":[…],"nextPageToken":…};
// both members are always present.
func (l *PushConfigListV1) AppendJSONV1(dst []byte) ([]byte, error) {
	dst = append(dst, `{"configs":[`...)
	for i := range l.Configs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = l.Configs[i].AppendJSONV1(dst); err != nil {
			return nil, err
		}
	}
	dst = append(dst, `],"nextPageToken":`...)
	dst = jsonw.AppendString(dst, l.NextPageToken)
	return append(dst, '}'), nil
}

// AppendTaskListV1 appends the 1.0 JSON of a ListTasks result:
// {"tasks":[…],"nextPageToken":…,"pageSize":…,"totalSize":…}, every
// member always present ("tasks" is [] when there are none). The tasks are
// written as they are: trimming history or artifacts is the caller's.
func AppendTaskListV1[T Task | *Task](dst []byte, tasks []T, nextPageToken string, pageSize, totalSize int) ([]byte, error) {
	dst = append(dst, `{"tasks":[`...)
	for i := range tasks {
		if i > 0 {
			dst = append(dst, ',')
		}
		var t *Task
		switch v := any(&tasks[i]).(type) {
		case *Task:
			t = v
		case **Task:
			t = *v
		}
		if t == nil {
			return nil, unsupported("nil task in a task list")
		}
		var err error
		if dst, err = t.AppendJSONV1(dst); err != nil {
			return nil, err
		}
	}
	dst = append(dst, `],"nextPageToken":`...)
	dst = jsonw.AppendString(dst, nextPageToken)
	dst = append(dst, `,"pageSize":`...)
	dst = strconv.AppendInt(dst, int64(pageSize), 10)
	dst = append(dst, `,"totalSize":`...)
	dst = strconv.AppendInt(dst, int64(totalSize), 10)
	return append(dst, '}'), nil
}

// TaskListV1 is a ListTasks result, for AppendResultV1.
type TaskListV1[T Task | *Task] struct {
	Tasks         []T
	NextPageToken string
	PageSize      int
	TotalSize     int
}

// AppendJSONV1 appends l's 1.0 JSON, as AppendTaskListV1 does.
func (l *TaskListV1[T]) AppendJSONV1(dst []byte) ([]byte, error) {
	return AppendTaskListV1(dst, l.Tasks, l.NextPageToken, l.PageSize, l.TotalSize)
}

// EmptyV1 is google.protobuf.Empty, the result of
// DeleteTaskPushNotificationConfig: {}.
type EmptyV1 struct{}

// AppendJSONV1 appends {}.
func (EmptyV1) AppendJSONV1(dst []byte) ([]byte, error) { return append(dst, "{}"...), nil }
