package boltstore

import (
	"encoding/json"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// The record format (record.go) is read into these types, with their own
// field names, and then converted: the A2A types' JSON methods and field
// tags, which are the wire's, take no part in reading a store.

// recHead is a head.
type recHead struct {
	Task        recTask         `json:"task"`
	CallerTiers []string        `json:"callerTiers"`
	CallerTier  string          `json:"callerTier"`
	FunctionID  string          `json:"functionId"`
	PushConfigs []recPushConfig `json:"pushConfigs"`
	Group       *recGroup       `json:"processGroup"`
	Seq         uint64          `json:"seq"`
	CreatedAt   time.Time       `json:"createdAt"`
	UpdatedAt   time.Time       `json:"updatedAt"`
}

// recWhole is a whole record of schemas 2 to 4: a head whose task holds
// its history and artifacts, with what layout.go keeps beside the head.
type recWhole struct {
	recHead
	Owner      string          `json:"owner"`
	Input      json.RawMessage `json:"input"`
	MessageIDs []string        `json:"messageIds"`
}

// recTask is TASK; the task of a whole record has its history and
// artifacts.
type recTask struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    recStatus      `json:"status"`
	History   []recMessage   `json:"history"`
	Artifacts []recArtifact  `json:"artifacts"`
	Metadata  map[string]any `json:"metadata"`
}

type recStatus struct {
	State     string      `json:"state"`
	Message   *recMessage `json:"message"`
	Timestamp string      `json:"timestamp"`
}

type recMessage struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId"`
	TaskID           string         `json:"taskId"`
	Role             string         `json:"role"`
	Parts            []recPart      `json:"parts"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds"`
	Extensions       []string       `json:"extensions"`
	Metadata         map[string]any `json:"metadata"`
}

type recPart struct {
	Kind     string          `json:"kind"`
	Text     string          `json:"text"`
	File     *recFile        `json:"file"`
	Data     json.RawMessage `json:"data"`
	Metadata map[string]any  `json:"metadata"`
}

type recFile struct {
	Name     string `json:"name"`
	MimeType string `json:"mimeType"`
	Bytes    string `json:"bytes"`
	URI      string `json:"uri"`
}

type recArtifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parts       []recPart      `json:"parts"`
	Extensions  []string       `json:"extensions"`
	Metadata    map[string]any `json:"metadata"`
}

type recPushConfig struct {
	ID             string       `json:"id"`
	URL            string       `json:"url"`
	Token          string       `json:"token"`
	Authentication *recPushAuth `json:"authentication"`
	Wire           a2a.Version  `json:"wireVersion"`
}

type recPushAuth struct {
	Schemes     []string `json:"schemes"`
	Credentials string   `json:"credentials"`
}

type recGroup struct {
	ID          int    `json:"pgid"`
	LeaderStart uint64 `json:"leaderStart"`
	Session     int    `json:"session"`
	BootID      string `json:"bootId"`
}

type recEvent struct {
	Seq       uint64       `json:"seq"`
	Status    *recStatus   `json:"status"`
	Artifact  *recArtifact `json:"artifact"`
	Append    bool         `json:"append"`
	LastChunk bool         `json:"lastChunk"`
}

// recDoc is what rawTask.doc holds: a head, and the history messages,
// artifacts and chunks read with it.
type recDoc struct {
	Head      recHead       `json:"head"`
	History   []recMessage  `json:"history"`
	Artifacts []recArtifact `json:"artifacts"`
	Chunks    [][]recPart   `json:"chunks"`
}

// decodeEvent decodes an event's value.
func decodeEvent(v []byte) (tasks.Event, error) {
	var e recEvent
	if err := json.Unmarshal(v, &e); err != nil {
		return tasks.Event{}, err
	}
	out := tasks.Event{Seq: e.Seq, Append: e.Append, LastChunk: e.LastChunk}
	if e.Status != nil {
		st := e.Status.status()
		out.Status = &st
	}
	if e.Artifact != nil {
		a := e.Artifact.artifact()
		out.Artifact = &a
	}
	return out, nil
}

// record is h as a record (without what the head's header holds).
func (h *recHead) record() *tasks.Record {
	r := &tasks.Record{
		Task:        h.Task.task(),
		CallerTiers: h.CallerTiers, CallerTier: h.CallerTier, FunctionID: h.FunctionID,
		PushConfigs: convert(h.PushConfigs, (*recPushConfig).config),
		Seq:         h.Seq, CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt,
	}
	if h.Group != nil {
		g := functions.ProcessGroup(*h.Group)
		r.Group = &g
	}
	return r
}

// record is w as a record, its history's length counted.
func (w *recWhole) record() *tasks.Record {
	r := w.recHead.record()
	r.Owner, r.Input, r.MessageIDs = w.Owner, w.Input, w.MessageIDs
	r.HistoryLen = len(r.Task.History)
	return r
}

func (c *recPushConfig) config() a2a.PushConfig {
	out := a2a.PushConfig{ID: c.ID, URL: c.URL, Token: c.Token, Wire: c.Wire}
	if c.Authentication != nil {
		auth := a2a.PushAuth(*c.Authentication)
		out.Authentication = &auth
	}
	return out
}

func (t *recTask) task() a2a.Task {
	return a2a.Task{
		ID: t.ID, ContextID: t.ContextID, Status: t.Status.status(),
		History: toMessages(t.History), Artifacts: toArtifacts(t.Artifacts), Metadata: t.Metadata,
	}
}

func (s *recStatus) status() a2a.TaskStatus {
	st := a2a.TaskStatus{State: a2a.TaskState(s.State), Timestamp: s.Timestamp}
	if s.Message != nil {
		m := s.Message.message()
		st.Message = &m
	}
	return st
}

func (m *recMessage) message() a2a.Message {
	return a2a.Message{
		MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: a2a.Role(m.Role),
		Parts: toParts(m.Parts), ReferenceTaskIDs: m.ReferenceTaskIDs, Extensions: m.Extensions, Metadata: m.Metadata,
	}
}

func (a *recArtifact) artifact() a2a.Artifact {
	return a2a.Artifact{
		ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description,
		Parts: toParts(a.Parts), Extensions: a.Extensions, Metadata: a.Metadata,
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

func toMessages(ms []recMessage) []a2a.Message    { return convert(ms, (*recMessage).message) }
func toArtifacts(as []recArtifact) []a2a.Artifact { return convert(as, (*recArtifact).artifact) }
func toParts(ps []recPart) []a2a.Part             { return convert(ps, (*recPart).part) }

func (p *recPart) part() a2a.Part {
	out := a2a.Part{Kind: a2a.PartKind(p.Kind), Text: p.Text, Data: p.Data, Metadata: p.Metadata}
	if p.File != nil {
		f := a2a.FileContent(*p.File)
		out.File = &f
	}
	return out
}
