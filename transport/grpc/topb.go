package grpc

import (
	"encoding/base64"
	"encoding/json"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

// The tasks and events every send, get, cancel, list and stream answers
// with are written into the generated types directly, rather than
// through their ProtoJSON (see codec.go): that crossing was a fifth of
// the server's work on a send. Each writer gives what the 1.0 encoder's
// JSON, read by protojson, gives (topb_test.go holds them to it), and
// fails where that encoder fails.

func pbTask(t *a2a.Task) (*a2apb.Task, error) {
	st, err := pbStatus(&t.Status)
	if err != nil {
		return nil, err
	}
	out := &a2apb.Task{Id: t.ID, ContextId: t.ContextID, Status: st}
	for i := range t.Artifacts {
		a, err := pbArtifact(&t.Artifacts[i])
		if err != nil {
			return nil, err
		}
		out.Artifacts = append(out.Artifacts, a)
	}
	for i := range t.History {
		m, err := pbMessage(&t.History[i])
		if err != nil {
			return nil, err
		}
		out.History = append(out.History, m)
	}
	out.Metadata, err = pbStruct(t.Metadata)
	return out, err
}

func pbStatus(s *a2a.TaskStatus) (*a2apb.TaskStatus, error) {
	name := v1.StateName(s.State)
	if name == "" {
		return nil, unsupported("task state " + string(s.State))
	}
	out := &a2apb.TaskStatus{State: a2apb.TaskState(a2apb.TaskState_value[name])}
	if s.Message != nil {
		m, err := pbMessage(s.Message)
		if err != nil {
			return nil, err
		}
		out.Message = m
	}
	if s.Timestamp != "" {
		ts, err := time.Parse(time.RFC3339Nano, s.Timestamp)
		if err != nil {
			return nil, err
		}
		out.Timestamp = timestamppb.New(ts)
	}
	return out, nil
}

func pbMessage(m *a2a.Message) (*a2apb.Message, error) {
	role := v1.RoleName(m.Role)
	if role == "" {
		return nil, unsupported("role " + string(m.Role))
	}
	out := &a2apb.Message{MessageId: m.MessageID, ContextId: m.ContextID, TaskId: m.TaskID,
		Role: a2apb.Role(a2apb.Role_value[role]), Extensions: m.Extensions, ReferenceTaskIds: m.ReferenceTaskIDs}
	parts, err := pbParts(m.Parts)
	if err != nil {
		return nil, err
	}
	out.Parts = parts
	out.Metadata, err = pbStruct(m.Metadata)
	return out, err
}

func pbArtifact(a *a2a.Artifact) (*a2apb.Artifact, error) {
	parts, err := pbParts(a.Parts)
	if err != nil {
		return nil, err
	}
	out := &a2apb.Artifact{ArtifactId: a.ArtifactID, Name: a.Name, Description: a.Description, Parts: parts, Extensions: a.Extensions}
	out.Metadata, err = pbStruct(a.Metadata)
	return out, err
}

func pbParts(parts []a2a.Part) ([]*a2apb.Part, error) {
	out := make([]*a2apb.Part, 0, len(parts))
	for i := range parts {
		p, err := pbPart(&parts[i])
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// pbPart is p as 1.0 has it: text, raw (a file's bytes), url (a file's
// URI) or data, with a file's media type and name.
func pbPart(p *a2a.Part) (*a2apb.Part, error) {
	out := &a2apb.Part{}
	switch p.Kind {
	case a2a.PartText:
		out.Content = &a2apb.Part_Text{Text: p.Text}
	case a2a.PartData:
		data := p.Data
		if len(data) == 0 {
			data = json.RawMessage("{}")
		}
		var v structpb.Value
		if err := protojson.Unmarshal(data, &v); err != nil {
			return nil, err
		}
		out.Content = &a2apb.Part_Data{Data: &v}
	case a2a.PartFile:
		f := p.File
		switch {
		case f == nil || (f.Bytes == "" && f.URI == ""):
			return nil, unsupported("file part without bytes or uri")
		case f.Bytes != "":
			raw, err := base64.StdEncoding.DecodeString(f.Bytes)
			if err != nil {
				return nil, err
			}
			out.Content = &a2apb.Part_Raw{Raw: raw}
		default:
			out.Content = &a2apb.Part_Url{Url: f.URI}
		}
		out.MediaType, out.Filename = f.MimeType, f.Name
	default:
		return nil, unsupported("part kind " + string(p.Kind))
	}
	var err error
	out.Metadata, err = pbStruct(p.Metadata)
	return out, err
}

// pbStruct is metadata as a Struct; nil when there is none.
func pbStruct(m map[string]any) (*structpb.Struct, error) {
	if len(m) == 0 {
		return nil, nil
	}
	if s, err := structpb.NewStruct(m); err == nil {
		return s, nil
	}
	// A value structpb does not take as it is (a json.Number, a typed
	// slice): through its JSON, as the encoder writes it.
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var s structpb.Struct
	return &s, protojson.Unmarshal(b, &s)
}

// pbEvent is one streamed event as a StreamResponse.
func pbEvent(e *v1.StreamResponse) (*a2apb.StreamResponse, error) {
	switch {
	case e.Task != nil:
		t, err := pbTask(e.Task)
		return &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Task{Task: t}}, err
	case e.Message != nil:
		m, err := pbMessage(e.Message)
		return &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Message{Message: m}}, err
	case e.StatusUpdate != nil:
		u := e.StatusUpdate
		st, err := pbStatus(&u.Status)
		if err != nil {
			return nil, err
		}
		out := &a2apb.TaskStatusUpdateEvent{TaskId: u.TaskID, ContextId: u.ContextID, Status: st}
		out.Metadata, err = pbStruct(u.Metadata)
		return &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: out}}, err
	case e.ArtifactUpdate != nil:
		u := e.ArtifactUpdate
		a, err := pbArtifact(&u.Artifact)
		if err != nil {
			return nil, err
		}
		out := &a2apb.TaskArtifactUpdateEvent{TaskId: u.TaskID, ContextId: u.ContextID, Artifact: a, Append: u.Append, LastChunk: u.LastChunk}
		out.Metadata, err = pbStruct(u.Metadata)
		return &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_ArtifactUpdate{ArtifactUpdate: out}}, err
	}
	return nil, unsupported("empty stream response")
}

func unsupported(what string) error { return &json.UnsupportedValueError{Str: what} }
