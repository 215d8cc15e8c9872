package v1

import (
	"encoding/json"
	"strconv"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wire"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// The encoders append the 1.0 JSON of a value to dst, with no reflection
// except for free-form metadata. ProtoJSON leaves out fields that hold
// their default value; so do these encoders for optional fields. Fields
// the 1.0 spec marks required are always written. A value 1.0 cannot
// express (a state or role it has no name for, a part of unknown kind) is
// an error, never broken JSON.

func unsupported(what string) error { return &json.UnsupportedValueError{Str: what} }

// AppendPart appends p's JSON: one of "text", "raw" (a file's base64
// bytes), "url" (a file's URI) or "data", then "mediaType" and "filename"
// for a file, and "metadata". A file part with both bytes and a URI
// (which the 0.3 decoder refuses) is written with its bytes; one with
// neither is an error.
func AppendPart(dst []byte, p *a2a.Part) ([]byte, error) {
	switch p.Kind {
	case a2a.PartText:
		dst = append(dst, `{"text":`...)
		dst = jsonw.AppendString(dst, p.Text)
	case a2a.PartData:
		var err error
		if dst, err = wire.AppendData(append(dst, `{"data":`...), p.Data); err != nil {
			return nil, err
		}
	case a2a.PartFile:
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
		dst = jsonw.AppendStringMember(dst, `,"mediaType":`, f.MimeType)
		dst = jsonw.AppendStringMember(dst, `,"filename":`, f.Name)
	default:
		return nil, unsupported("part kind " + strconv.Quote(string(p.Kind)))
	}
	return wire.EndObject(dst, p.Metadata)
}

// AppendMessage appends m's JSON.
func AppendMessage(dst []byte, m *a2a.Message) ([]byte, error) {
	return appendMessage(dst, m, AppendPart)
}

// appendMessage appends m's JSON, each part written by part.
func appendMessage(dst []byte, m *a2a.Message, part func([]byte, *a2a.Part) ([]byte, error)) ([]byte, error) {
	role := RoleName(m.Role)
	if role == "" {
		return nil, unsupported("role " + strconv.Quote(string(m.Role)))
	}
	return wire.AppendMessage(dst, `{"messageId":`, m, role, false, part)
}

// AppendStatus appends s's JSON.
func AppendStatus(dst []byte, s *a2a.TaskStatus) ([]byte, error) {
	return appendStatus(dst, s, AppendMessage)
}

// appendStatus appends s's JSON, its message written by message.
func appendStatus(dst []byte, s *a2a.TaskStatus, message func([]byte, *a2a.Message) ([]byte, error)) ([]byte, error) {
	state := StateName(s.State)
	if state == "" {
		return nil, unsupported("task state " + strconv.Quote(string(s.State)))
	}
	return wire.AppendStatus(dst, state, s, message)
}

// AppendArtifact appends a's JSON.
func AppendArtifact(dst []byte, a *a2a.Artifact) ([]byte, error) {
	return wire.AppendArtifact(dst, a, AppendPart)
}

// AppendTask appends t's JSON, the bare Task that GetTask and CancelTask
// answer with.
func AppendTask(dst []byte, t *a2a.Task) ([]byte, error) {
	return wire.AppendTask(dst, `{"id":`, t, false, AppendStatus, AppendMessage, AppendArtifact)
}

// AppendStatusUpdate appends e's JSON (TaskStatusUpdateEvent). 1.0 has no
// "final": the end of a stream says it.
func AppendStatusUpdate(dst []byte, e *a2a.StatusUpdateEvent) ([]byte, error) {
	dst = wire.AppendTaskHead(dst, `{"taskId":`, e.TaskID, e.ContextID, `,"status":`)
	dst, err := AppendStatus(dst, &e.Status)
	if err != nil {
		return nil, err
	}
	return wire.EndObject(dst, e.Metadata)
}

// AppendArtifactUpdate appends e's JSON (TaskArtifactUpdateEvent).
func AppendArtifactUpdate(dst []byte, e *a2a.ArtifactUpdateEvent) ([]byte, error) {
	return wire.AppendArtifactUpdate(dst, `{"taskId":`, e, AppendArtifact)
}

// AppendPushConfig appends c's JSON, the flattened
// TaskPushNotificationConfig {taskId, id, url, token, authentication}.
// 1.0 authentication has a single scheme: the first of the 0.3 schemes
// is written, the others are dropped.
func AppendPushConfig(dst []byte, c *a2a.TaskPushConfig) ([]byte, error) {
	pc := &c.PushNotificationConfig
	dst = append(dst, `{"taskId":`...)
	dst = jsonw.AppendString(dst, c.TaskID)
	dst = jsonw.AppendStringMember(dst, `,"id":`, pc.ID)
	dst = append(dst, `,"url":`...)
	dst = jsonw.AppendString(dst, pc.URL)
	dst = jsonw.AppendStringMember(dst, `,"token":`, pc.Token)
	if a := pc.Authentication; a != nil {
		scheme := ""
		if len(a.Schemes) > 0 {
			scheme = a.Schemes[0]
		}
		dst = append(dst, `,"authentication":{"scheme":`...)
		dst = jsonw.AppendString(dst, scheme)
		dst = jsonw.AppendStringMember(dst, `,"credentials":`, a.Credentials)
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}
