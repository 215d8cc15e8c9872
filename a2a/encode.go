package a2a

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The Append methods write the 0.3 wire JSON of a value to dst without
// reflection. They are what MarshalJSON uses, and what hot paths call
// directly: encoding/json re-scans the output of every nested MarshalJSON,
// which made encoding a task cost several times its size.

// AppendJSON appends p's JSON.
func (p *Part) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"kind":`...)
	dst = AppendString(dst, string(p.Kind))
	switch p.Kind {
	case PartText:
		dst = append(dst, `,"text":`...)
		dst = AppendString(dst, p.Text)
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
			if dst, err = appendRaw(dst, p.Data); err != nil {
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
		dst = AppendString(dst, v)
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
	dst = AppendString(dst, m.MessageID)
	if m.ContextID != "" {
		dst = append(dst, `,"contextId":`...)
		dst = AppendString(dst, m.ContextID)
	}
	if m.TaskID != "" {
		dst = append(dst, `,"taskId":`...)
		dst = AppendString(dst, m.TaskID)
	}
	dst = append(dst, `,"role":`...)
	dst = AppendString(dst, string(m.Role))
	dst = append(dst, `,"parts":`...)
	var err error
	if dst, err = appendParts(dst, m.Parts); err != nil {
		return nil, err
	}
	if len(m.ReferenceTaskIDs) > 0 {
		dst = append(dst, `,"referenceTaskIds":`...)
		dst = appendStrings(dst, m.ReferenceTaskIDs)
	}
	if len(m.Extensions) > 0 {
		dst = append(dst, `,"extensions":`...)
		dst = appendStrings(dst, m.Extensions)
	}
	return appendMetadata(dst, m.Metadata)
}

// AppendJSON appends s's JSON (no kind: a status is not discriminated).
func (s *TaskStatus) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"state":`...)
	dst = AppendString(dst, string(s.State))
	if s.Message != nil {
		dst = append(dst, `,"message":`...)
		var err error
		if dst, err = s.Message.AppendJSON(dst); err != nil {
			return nil, err
		}
	}
	if s.Timestamp != "" {
		dst = append(dst, `,"timestamp":`...)
		dst = AppendString(dst, s.Timestamp)
	}
	return append(dst, '}'), nil
}

// AppendJSON appends a's JSON.
func (a *Artifact) AppendJSON(dst []byte) ([]byte, error) { return a.appendJSON(dst, appendParts) }

// appendJSON appends a's JSON, its parts written by parts: the two wire
// versions differ only there.
func (a *Artifact) appendJSON(dst []byte, parts func([]byte, []Part) ([]byte, error)) ([]byte, error) {
	dst = append(dst, `{"artifactId":`...)
	dst = AppendString(dst, a.ArtifactID)
	if a.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = AppendString(dst, a.Name)
	}
	if a.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = AppendString(dst, a.Description)
	}
	dst = append(dst, `,"parts":`...)
	var err error
	if dst, err = parts(dst, a.Parts); err != nil {
		return nil, err
	}
	if len(a.Extensions) > 0 {
		dst = append(dst, `,"extensions":`...)
		dst = appendStrings(dst, a.Extensions)
	}
	return appendMetadata(dst, a.Metadata)
}

// AppendJSON appends t's JSON.
func (t *Task) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"kind":"task","id":`...)
	dst = AppendString(dst, t.ID)
	dst = append(dst, `,"contextId":`...)
	dst = AppendString(dst, t.ContextID)
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
	dst = AppendString(dst, e.TaskID)
	dst = append(dst, `,"contextId":`...)
	dst = AppendString(dst, e.ContextID)
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
	dst = AppendString(dst, e.TaskID)
	dst = append(dst, `,"contextId":`...)
	dst = AppendString(dst, e.ContextID)
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
	if len(m) > 0 {
		b, err := json.Marshal(m) // rare and free-form: reflection is fine
		if err != nil {
			return nil, err
		}
		dst = append(dst, `,"metadata":`...)
		dst = append(dst, b...)
	}
	return append(dst, '}'), nil
}

// appendRaw appends a JSON value that came from outside (a data part),
// compacted; an invalid one is an error, as encoding/json would make it.
func appendRaw(dst []byte, raw json.RawMessage) ([]byte, error) {
	n := len(dst)
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	if buf.Len() == n {
		return nil, &json.UnsupportedValueError{Str: "empty raw JSON"}
	}
	return buf.Bytes(), nil
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as encoding/json does
// (HTML-safe, U+2028 and U+2029 escaped, invalid UTF-8 replaced).
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
