package a2a

import (
	"encoding/json"
	"strconv"

	"github.com/a2ad/a2ad/internal/jsonw"
)

// The Append methods write the 0.3 wire JSON of a value to dst without
// reflection. They are what MarshalJSON uses, and what hot paths call
// directly: encoding/json re-scans the output of every nested MarshalJSON,
// which made encoding a task cost several times its size.

// AppendJSON appends p's JSON.
func (p *Part) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"kind":`...)
	dst = jsonw.AppendString(dst, string(p.Kind))
	switch p.Kind {
	case PartText:
		dst = append(dst, `,"text":`...)
		dst = jsonw.AppendString(dst, p.Text)
	case PartFile:
		dst = append(dst, `,"file":{`...)
		if p.File != nil {
			dst = appendFile(dst, p.File)
		}
		dst = append(dst, '}')
	case PartData:
		dst = append(dst, `,"data":`...)
		if len(p.Data) == 0 {
			dst = append(dst, "{}"...)
		} else {
			var err error
			if dst, err = jsonw.AppendCompact(dst, p.Data); err != nil {
				return nil, err
			}
		}
	default:
		return nil, &json.UnsupportedValueError{Str: "part kind " + strconv.Quote(string(p.Kind))}
	}
	return appendMetadata(dst, p.Metadata)
}

func appendFile(dst []byte, f *FileContent) []byte {
	sep := byte(0)
	field := func(name, v string) {
		if v == "" {
			return
		}
		if sep != 0 {
			dst = append(dst, sep)
		}
		sep = ','
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, `":`...)
		dst = jsonw.AppendString(dst, v)
	}
	field("name", f.Name)
	field("mimeType", f.MimeType)
	field("bytes", f.Bytes)
	field("uri", f.URI)
	return dst
}

func appendParts(dst []byte, parts []Part) ([]byte, error) {
	dst = append(dst, '[')
	for i := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = parts[i].AppendJSON(dst); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// AppendJSON appends m's JSON.
func (m *Message) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"kind":"message","messageId":`...)
	dst = jsonw.AppendString(dst, m.MessageID)
	if m.ContextID != "" {
		dst = append(dst, `,"contextId":`...)
		dst = jsonw.AppendString(dst, m.ContextID)
	}
	if m.TaskID != "" {
		dst = append(dst, `,"taskId":`...)
		dst = jsonw.AppendString(dst, m.TaskID)
	}
	dst = append(dst, `,"role":`...)
	dst = jsonw.AppendString(dst, string(m.Role))
	dst = append(dst, `,"parts":`...)
	var err error
	if dst, err = appendParts(dst, m.Parts); err != nil {
		return nil, err
	}
	if len(m.ReferenceTaskIDs) > 0 {
		dst = append(dst, `,"referenceTaskIds":`...)
		dst = jsonw.AppendStrings(dst, m.ReferenceTaskIDs)
	}
	if len(m.Extensions) > 0 {
		dst = append(dst, `,"extensions":`...)
		dst = jsonw.AppendStrings(dst, m.Extensions)
	}
	return appendMetadata(dst, m.Metadata)
}

// AppendJSON appends s's JSON (no kind: a status is not discriminated).
func (s *TaskStatus) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"state":`...)
	dst = jsonw.AppendString(dst, string(s.State))
	if s.Message != nil {
		dst = append(dst, `,"message":`...)
		var err error
		if dst, err = s.Message.AppendJSON(dst); err != nil {
			return nil, err
		}
	}
	if s.Timestamp != "" {
		dst = append(dst, `,"timestamp":`...)
		dst = jsonw.AppendString(dst, s.Timestamp)
	}
	return append(dst, '}'), nil
}

// AppendJSON appends a's JSON.
func (a *Artifact) AppendJSON(dst []byte) ([]byte, error) { return a.appendJSON(dst, appendParts) }

// appendJSON appends a's JSON, its parts written by parts: the two wire
// versions differ only there.
func (a *Artifact) appendJSON(dst []byte, parts func([]byte, []Part) ([]byte, error)) ([]byte, error) {
	dst = append(dst, `{"artifactId":`...)
	dst = jsonw.AppendString(dst, a.ArtifactID)
	if a.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = jsonw.AppendString(dst, a.Name)
	}
	if a.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonw.AppendString(dst, a.Description)
	}
	dst = append(dst, `,"parts":`...)
	var err error
	if dst, err = parts(dst, a.Parts); err != nil {
		return nil, err
	}
	if len(a.Extensions) > 0 {
		dst = append(dst, `,"extensions":`...)
		dst = jsonw.AppendStrings(dst, a.Extensions)
	}
	return appendMetadata(dst, a.Metadata)
}

// AppendJSON appends t's JSON.
func (t *Task) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"kind":"task","id":`...)
	dst = jsonw.AppendString(dst, t.ID)
	dst = append(dst, `,"contextId":`...)
	dst = jsonw.AppendString(dst, t.ContextID)
	dst = append(dst, `,"status":`...)
	var err error
	if dst, err = t.Status.AppendJSON(dst); err != nil {
		return nil, err
	}
	if len(t.History) > 0 {
		dst = append(dst, `,"history":[`...)
		for i := range t.History {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = t.History[i].AppendJSON(dst); err != nil {
				return nil, err
			}
		}
		dst = append(dst, ']')
	}
	if len(t.Artifacts) > 0 {
		dst = append(dst, `,"artifacts":[`...)
		for i := range t.Artifacts {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = t.Artifacts[i].AppendJSON(dst); err != nil {
				return nil, err
			}
		}
		dst = append(dst, ']')
	}
	return appendMetadata(dst, t.Metadata)
}

// AppendJSON appends e's JSON.
func (e *StatusUpdateEvent) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"kind":"status-update","taskId":`...)
	dst = jsonw.AppendString(dst, e.TaskID)
	dst = append(dst, `,"contextId":`...)
	dst = jsonw.AppendString(dst, e.ContextID)
	dst = append(dst, `,"status":`...)
	var err error
	if dst, err = e.Status.AppendJSON(dst); err != nil {
		return nil, err
	}
	dst = append(dst, `,"final":`...)
	dst = strconv.AppendBool(dst, e.Final)
	return appendMetadata(dst, e.Metadata)
}

// AppendJSON appends e's JSON.
func (e *ArtifactUpdateEvent) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"kind":"artifact-update","taskId":`...)
	dst = jsonw.AppendString(dst, e.TaskID)
	dst = append(dst, `,"contextId":`...)
	dst = jsonw.AppendString(dst, e.ContextID)
	dst = append(dst, `,"artifact":`...)
	var err error
	if dst, err = e.Artifact.AppendJSON(dst); err != nil {
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

// appendMetadata appends `,"metadata":{...}` when m is not empty, then
// the closing brace of the enclosing object.
func appendMetadata(dst []byte, m map[string]any) ([]byte, error) {
	dst, err := jsonw.AppendMapMember(dst, `,"metadata":`, m)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}
