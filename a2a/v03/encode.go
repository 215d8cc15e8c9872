package v03

import (
	"encoding/json"
	"strconv"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wire"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// The encoders append the 0.3 JSON of a value to dst. A value 0.3 cannot
// express (a part of unknown kind, data that is not JSON, metadata that
// does not encode) is an error, never broken JSON.

// AppendPart appends p's JSON: its kind, then "text", "file" or "data",
// then its metadata.
func AppendPart(dst []byte, p *a2a.Part) ([]byte, error) {
	dst = append(dst, `{"kind":`...)
	dst = jsonw.AppendString(dst, string(p.Kind))
	switch p.Kind {
	case a2a.PartText:
		dst = append(dst, `,"text":`...)
		dst = jsonw.AppendString(dst, p.Text)
	case a2a.PartFile:
		dst = append(dst, `,"file":`...)
		dst = appendFile(dst, p.File)
	case a2a.PartData:
		var err error
		if dst, err = wire.AppendData(append(dst, `,"data":`...), p.Data); err != nil {
			return nil, err
		}
	default:
		return nil, &json.UnsupportedValueError{Str: "part kind " + strconv.Quote(string(p.Kind))}
	}
	return wire.EndObject(dst, p.Metadata)
}

// appendFile appends f's JSON object, {} for a nil f.
func appendFile(dst []byte, f *a2a.FileContent) []byte {
	if f == nil {
		return append(dst, "{}"...)
	}
	// Each member is written with a leading comma; the first one's
	// becomes the opening brace.
	start := len(dst)
	dst = jsonw.AppendStringMember(dst, `,"name":`, f.Name)
	dst = jsonw.AppendStringMember(dst, `,"mimeType":`, f.MimeType)
	dst = jsonw.AppendStringMember(dst, `,"bytes":`, f.Bytes)
	dst = jsonw.AppendStringMember(dst, `,"uri":`, f.URI)
	if len(dst) == start {
		return append(dst, "{}"...)
	}
	dst[start] = '{'
	return append(dst, '}')
}

// AppendMessage appends m's JSON.
func AppendMessage(dst []byte, m *a2a.Message) ([]byte, error) {
	return appendMessage(dst, m, AppendPart)
}

// appendMessage appends m's JSON, each part written by part.
func appendMessage(dst []byte, m *a2a.Message, part func([]byte, *a2a.Part) ([]byte, error)) ([]byte, error) {
	return wire.AppendMessage(dst, `{"kind":"message","messageId":`, m, string(m.Role), true, part)
}

// AppendStatus appends s's JSON (no kind: a status is not discriminated).
func AppendStatus(dst []byte, s *a2a.TaskStatus) ([]byte, error) {
	return wire.AppendStatus(dst, string(s.State), s, AppendMessage)
}

// AppendArtifact appends a's JSON.
func AppendArtifact(dst []byte, a *a2a.Artifact) ([]byte, error) {
	return wire.AppendArtifact(dst, a, AppendPart)
}

// AppendTask appends t's JSON.
func AppendTask(dst []byte, t *a2a.Task) ([]byte, error) {
	return wire.AppendTask(dst, openTask, t, true, AppendStatus, AppendMessage, AppendArtifact)
}

// openTask opens a task's JSON.
const openTask = `{"kind":"task","id":`

// AppendStatusUpdate appends e's JSON.
func AppendStatusUpdate(dst []byte, e *a2a.StatusUpdateEvent) ([]byte, error) {
	dst = wire.AppendTaskHead(dst, `{"kind":"status-update","taskId":`, e.TaskID, e.ContextID, `,"status":`)
	dst, err := AppendStatus(dst, &e.Status)
	if err != nil {
		return nil, err
	}
	dst = append(dst, `,"final":`...)
	dst = strconv.AppendBool(dst, e.Final)
	return wire.EndObject(dst, e.Metadata)
}

// AppendArtifactUpdate appends e's JSON.
func AppendArtifactUpdate(dst []byte, e *a2a.ArtifactUpdateEvent) ([]byte, error) {
	return wire.AppendArtifactUpdate(dst, `{"kind":"artifact-update","taskId":`, e, AppendArtifact)
}

// AppendListTasksResult appends r as the result of tasks/list in the
// shape the a2a-go v0.3 client reads (a2a.ListTasksResponse): tasks,
// total_size, page_size and next_page_token, all four always present
// (next_page_token is "" on the last page).
func AppendListTasksResult(dst []byte, r *a2a.ListTasksResult) ([]byte, error) {
	dst, err := wire.AppendList(append(dst, `{"tasks":`...), r.Tasks, AppendTask)
	if err != nil {
		return nil, err
	}
	return appendListEnd(dst, r), nil
}

// appendListEnd appends what follows r's tasks in its JSON.
func appendListEnd(dst []byte, r *a2a.ListTasksResult) []byte {
	dst = append(dst, `,"total_size":`...)
	dst = strconv.AppendInt(dst, int64(r.TotalSize), 10)
	dst = append(dst, `,"page_size":`...)
	dst = strconv.AppendInt(dst, int64(r.PageSize), 10)
	dst = append(dst, `,"next_page_token":`...)
	dst = jsonw.AppendString(dst, r.NextPageToken)
	return append(dst, '}')
}
