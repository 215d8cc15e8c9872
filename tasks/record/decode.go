package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// The record format (record.go) is read into these types, with their own
// field names, and then converted: the A2A types' JSON methods and field
// tags, which are the wire's, take no part in reading a store.

// Head is a head.
type Head struct {
	Task        Task         `json:"task"`
	CallerTiers []string     `json:"callerTiers"`
	CallerTier  string       `json:"callerTier"`
	FunctionID  string       `json:"functionId"`
	PushConfigs []PushConfig `json:"pushConfigs"`
	Group       *Group       `json:"processGroup"`
	Seq         uint64       `json:"seq"`
	CreatedAt   time.Time    `json:"createdAt"`
	UpdatedAt   time.Time    `json:"updatedAt"`
}

// Whole is a whole record of schemas 2 to 4: a head whose task holds
// its history and artifacts, with what layout.go keeps beside the head.
type Whole struct {
	Head
	Owner      string          `json:"owner"`
	Input      json.RawMessage `json:"input"`
	MessageIDs []string        `json:"messageIds"`
}

// Task is TASK; the task of a whole record has its history and
// artifacts.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    Status         `json:"status"`
	History   []Message      `json:"history"`
	Artifacts []Artifact     `json:"artifacts"`
	Metadata  map[string]any `json:"metadata"`
}

type Status struct {
	State     string   `json:"state"`
	Message   *Message `json:"message"`
	Timestamp string   `json:"timestamp"`
}

type Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId"`
	TaskID           string         `json:"taskId"`
	Role             string         `json:"role"`
	Parts            []Part         `json:"parts"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds"`
	Extensions       []string       `json:"extensions"`
	Metadata         map[string]any `json:"metadata"`
}

type Part struct {
	Kind     string          `json:"kind"`
	Text     string          `json:"text"`
	File     *File           `json:"file"`
	Data     json.RawMessage `json:"data"`
	Metadata map[string]any  `json:"metadata"`
}

type File struct {
	Name     string `json:"name"`
	MimeType string `json:"mimeType"`
	Bytes    string `json:"bytes"`
	URI      string `json:"uri"`
}

type Artifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parts       []Part         `json:"parts"`
	Extensions  []string       `json:"extensions"`
	Metadata    map[string]any `json:"metadata"`
}

type PushConfig struct {
	ID             string      `json:"id"`
	URL            string      `json:"url"`
	Token          string      `json:"token"`
	Authentication *PushAuth   `json:"authentication"`
	Wire           a2a.Version `json:"wireVersion"`
}

type PushAuth struct {
	Schemes     []string `json:"schemes"`
	Credentials string   `json:"credentials"`
}

type Group struct {
	ID          int    `json:"pgid"`
	LeaderStart uint64 `json:"leaderStart"`
	Session     int    `json:"session"`
	BootID      string `json:"bootId"`
}

type Event struct {
	Seq       uint64    `json:"seq"`
	Status    *Status   `json:"status"`
	Artifact  *Artifact `json:"artifact"`
	Append    bool      `json:"append"`
	LastChunk bool      `json:"lastChunk"`
}

// decode decodes b into a T and converts it with f.
func decode[T, U any](b []byte, f func(*T) U) (U, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		var zero U
		return zero, err
	}
	return f(&v), nil
}

// DecodeHead decodes a head: a record without its history, artifacts,
// input and message ids, and without what a store keeps beside the head
// (its owner, the history's length, the artifacts' sizes).
func DecodeHead(b []byte) (*tasks.Record, error) { return decode(b, (*Head).Record) }

// DecodeMessage decodes a history message of the task of in.
func DecodeMessage(b []byte, in IDs) (a2a.Message, error) {
	return decode(b, func(m *Message) a2a.Message { return m.message(in) })
}

// DecodeArtifact decodes an artifact.
func DecodeArtifact(b []byte) (a2a.Artifact, error) { return decode(b, (*Artifact).artifact) }

// DecodeChunk decodes a chunk: the parts appended to an artifact.
func DecodeChunk(b []byte) ([]a2a.Part, error) {
	return decode(b, func(ps *[]Part) []a2a.Part { return Parts(*ps) })
}

// DecodeEvent decodes an event's value, an event of the task of in.
func DecodeEvent(v []byte, in IDs) (tasks.Event, error) {
	var e Event
	if err := json.Unmarshal(v, &e); err != nil {
		return tasks.Event{}, err
	}
	out := tasks.Event{Seq: e.Seq, Append: e.Append, LastChunk: e.LastChunk}
	if e.Status != nil {
		st := e.Status.status(in)
		out.Status = &st
	}
	if e.Artifact != nil {
		a := e.Artifact.artifact()
		out.Artifact = &a
	}
	return out, nil
}

// record is h as a record (without what the head's header holds).
func (h *Head) Record() *tasks.Record {
	r := &tasks.Record{
		Task:        h.Task.task(),
		CallerTiers: h.CallerTiers, CallerTier: h.CallerTier, FunctionID: h.FunctionID,
		PushConfigs: convert(h.PushConfigs, (*PushConfig).config),
		Seq:         h.Seq, CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt,
	}
	if h.Group != nil {
		g := functions.ProcessGroup(*h.Group)
		r.Group = &g
	}
	return r
}

// record is w as a record, its history's length counted.
func (w *Whole) Record() *tasks.Record {
	r := w.Head.Record()
	r.Owner, r.Input, r.MessageIDs = w.Owner, w.Input, w.MessageIDs
	r.HistoryLen = len(r.Task.History)
	return r
}

func (c *PushConfig) config() a2a.PushConfig {
	out := a2a.PushConfig{ID: c.ID, URL: c.URL, Token: c.Token, Wire: c.Wire}
	if c.Authentication != nil {
		auth := a2a.PushAuth(*c.Authentication)
		out.Authentication = &auth
	}
	return out
}

// task is t, its messages filled with its ids.
func (t *Task) task() a2a.Task {
	in := IDs{Task: t.ID, Context: t.ContextID}
	return a2a.Task{
		ID: t.ID, ContextID: t.ContextID, Status: t.Status.status(in),
		History: Messages(t.History, in), Artifacts: Artifacts(t.Artifacts), Metadata: t.Metadata,
	}
}

func (s *Status) status(in IDs) a2a.TaskStatus {
	st := a2a.TaskStatus{State: a2a.TaskState(s.State), Timestamp: s.Timestamp}
	if s.Message != nil {
		m := s.Message.message(in)
		st.Message = &m
	}
	return st
}

// message is m, a message of the task of in, with the ids it left out.
func (m *Message) message(in IDs) a2a.Message {
	out := a2a.Message{
		MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: a2a.Role(m.Role),
		Parts: Parts(m.Parts), ReferenceTaskIDs: m.ReferenceTaskIDs, Extensions: m.Extensions, Metadata: m.Metadata,
	}
	tasks.Fill(&out, in.Task, in.Context)
	return out
}

func (a *Artifact) artifact() a2a.Artifact {
	return a2a.Artifact{
		ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description,
		Parts: Parts(a.Parts), Extensions: a.Extensions, Metadata: a.Metadata,
	}
}

// convert converts a list with f; nil stays nil, as an absent list
// decodes.
func convert[T, U any](in []T, f func(*T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i := range in {
		out[i] = f(&in[i])
	}
	return out
}

// Messages converts the history messages of the task of in.
func Messages(ms []Message, in IDs) []a2a.Message {
	return convert(ms, func(m *Message) a2a.Message { return m.message(in) })
}

func Artifacts(as []Artifact) []a2a.Artifact { return convert(as, (*Artifact).artifact) }
func Parts(ps []Part) []a2a.Part             { return convert(ps, (*Part).part) }

func (p *Part) part() a2a.Part {
	out := a2a.Part{Kind: a2a.PartKind(p.Kind), Text: p.Text, Data: p.Data, Metadata: p.Metadata}
	if p.File != nil {
		f := a2a.FileContent(*p.File)
		out.File = &f
	}
	return out
}

// headPrefix is how every head begins (AppendHead): its task's id and
// context id come first.
const headPrefix = `{"task":{"kind":"task","id":`

// HeadIDs returns the ids of the task of head b without decoding the rest
// of it, for a read that needs only them (the events of a task, whose
// status messages leave them out).
func HeadIDs(b []byte) (IDs, error) {
	rest, ok := bytes.CutPrefix(b, []byte(headPrefix))
	if !ok {
		return IDs{}, errors.New("not a head")
	}
	var in IDs
	var err error
	if in.Task, rest, err = jsonString(rest); err != nil {
		return IDs{}, err
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"contextId":`)); !ok {
		return IDs{}, errors.New("a head without its context id")
	}
	if in.Context, _, err = jsonString(rest); err != nil {
		return IDs{}, err
	}
	return in, nil
}

// jsonString decodes the JSON string b begins with, and returns what
// follows it.
func jsonString(b []byte) (string, []byte, error) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, errors.New("not a JSON string")
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte is never the closing quote
		case '"':
			if bytes.IndexByte(b[1:i], '\\') < 0 {
				return string(b[1:i]), b[i+1:], nil
			}
			var s string
			err := json.Unmarshal(b[:i+1], &s)
			return s, b[i+1:], err
		}
	}
	return "", nil, errors.New("an unterminated JSON string")
}
