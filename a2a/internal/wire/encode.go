package wire

import (
	"encoding/json"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// The writers of the shapes both versions have. A writer that fails
// returns a nil slice and the error, as the codecs' encoders do.

// AppendList appends items as a JSON array, each item written by item.
func AppendList[T any](dst []byte, items []T, item func([]byte, *T) ([]byte, error)) ([]byte, error) {
	dst = append(dst, '[')
	for i := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = item(dst, &items[i]); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// AppendListMember appends key, a literal such as `,"history":`, and items
// when there are any.
func AppendListMember[T any](dst []byte, key string, items []T, item func([]byte, *T) ([]byte, error)) ([]byte, error) {
	if len(items) == 0 {
		return dst, nil
	}
	return AppendList(append(dst, key...), items, item)
}

// AppendData appends a data part's JSON object, compacted: {} when it
// is empty.
func AppendData(dst []byte, data json.RawMessage) ([]byte, error) {
	if len(data) == 0 {
		return append(dst, "{}"...), nil
	}
	return jsonw.AppendCompact(dst, data)
}

// AppendTaskHead appends the members a task or a task event starts with:
// open (the object's opening up to the task id's value), the task and
// context ids, and then member, the key of the value that follows.
func AppendTaskHead(dst []byte, open, taskID, contextID, member string) []byte {
	dst = append(dst, open...)
	dst = jsonw.AppendString(dst, taskID)
	dst = append(dst, `,"contextId":`...)
	dst = jsonw.AppendString(dst, contextID)
	return append(dst, member...)
}

// AppendMessage appends m's JSON: open is the object's opening up to the
// message id's value (0.3 has a kind first), role the role as the version
// names it, and part writes each part. refsFirst writes referenceTaskIds
// before extensions, as 0.3 does; 1.0 writes them after.
func AppendMessage(dst []byte, open string, m *a2a.Message, role string, refsFirst bool, part func([]byte, *a2a.Part) ([]byte, error)) ([]byte, error) {
	dst = append(dst, open...)
	dst = jsonw.AppendString(dst, m.MessageID)
	dst = jsonw.AppendStringMember(dst, `,"contextId":`, m.ContextID)
	dst = jsonw.AppendStringMember(dst, `,"taskId":`, m.TaskID)
	dst = append(dst, `,"role":`...)
	dst = jsonw.AppendString(dst, role)
	dst, err := AppendList(append(dst, `,"parts":`...), m.Parts, part)
	if err != nil {
		return nil, err
	}
	if refsFirst {
		dst = jsonw.AppendStringsMember(dst, `,"referenceTaskIds":`, m.ReferenceTaskIDs)
	}
	dst = jsonw.AppendStringsMember(dst, `,"extensions":`, m.Extensions)
	if !refsFirst {
		dst = jsonw.AppendStringsMember(dst, `,"referenceTaskIds":`, m.ReferenceTaskIDs)
	}
	return EndObject(dst, m.Metadata)
}

// AppendStatus appends s's JSON, its state as the version names it
// (state) and its message written by message.
func AppendStatus(dst []byte, state string, s *a2a.TaskStatus, message func([]byte, *a2a.Message) ([]byte, error)) ([]byte, error) {
	dst = append(dst, `{"state":`...)
	dst = jsonw.AppendString(dst, state)
	if s.Message != nil {
		var err error
		if dst, err = message(append(dst, `,"message":`...), s.Message); err != nil {
			return nil, err
		}
	}
	dst = jsonw.AppendStringMember(dst, `,"timestamp":`, s.Timestamp)
	return append(dst, '}'), nil
}

// AppendTask appends t's JSON: open is the object's opening up to the
// task id's value (0.3 has a kind first), and status, message and
// artifact are the version's writers. historyFirst writes the history
// before the artifacts, as 0.3 does; 1.0 writes it after.
func AppendTask(dst []byte, open string, t *a2a.Task, historyFirst bool,
	status func([]byte, *a2a.TaskStatus) ([]byte, error),
	message func([]byte, *a2a.Message) ([]byte, error),
	artifact func([]byte, *a2a.Artifact) ([]byte, error),
) ([]byte, error) {
	dst = AppendTaskHead(dst, open, t.ID, t.ContextID, `,"status":`)
	dst, err := status(dst, &t.Status)
	if err != nil {
		return nil, err
	}
	if historyFirst {
		if dst, err = AppendListMember(dst, `,"history":`, t.History, message); err != nil {
			return nil, err
		}
	}
	if dst, err = AppendListMember(dst, `,"artifacts":`, t.Artifacts, artifact); err != nil {
		return nil, err
	}
	if !historyFirst {
		if dst, err = AppendListMember(dst, `,"history":`, t.History, message); err != nil {
			return nil, err
		}
	}
	return EndObject(dst, t.Metadata)
}

// AppendArtifact appends a's JSON, which is the same in both versions but
// for its parts, each written by part.
func AppendArtifact(dst []byte, a *a2a.Artifact, part func([]byte, *a2a.Part) ([]byte, error)) ([]byte, error) {
	dst = append(dst, `{"artifactId":`...)
	dst = jsonw.AppendString(dst, a.ArtifactID)
	dst = jsonw.AppendStringMember(dst, `,"name":`, a.Name)
	dst = jsonw.AppendStringMember(dst, `,"description":`, a.Description)
	dst = append(dst, `,"parts":`...)
	dst, err := AppendList(dst, a.Parts, part)
	if err != nil {
		return nil, err
	}
	dst = jsonw.AppendStringsMember(dst, `,"extensions":`, a.Extensions)
	return EndObject(dst, a.Metadata)
}

// AppendArtifactUpdate appends e's JSON: open is the object's opening up
// to the task id's value (0.3 has a kind first), and artifact writes the
// artifact.
func AppendArtifactUpdate(dst []byte, open string, e *a2a.ArtifactUpdateEvent, artifact func([]byte, *a2a.Artifact) ([]byte, error)) ([]byte, error) {
	dst = AppendTaskHead(dst, open, e.TaskID, e.ContextID, `,"artifact":`)
	dst, err := artifact(dst, &e.Artifact)
	if err != nil {
		return nil, err
	}
	if e.Append {
		dst = append(dst, `,"append":true`...)
	}
	if e.LastChunk {
		dst = append(dst, `,"lastChunk":true`...)
	}
	return EndObject(dst, e.Metadata)
}

// EndObject appends `,"metadata":{...}` when m is not empty, then the
// closing brace of the object being written: every A2A object that has
// metadata ends with it, in both versions.
func EndObject(dst []byte, m map[string]any) ([]byte, error) {
	dst, err := jsonw.AppendMapMember(dst, `,"metadata":`, m)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}
