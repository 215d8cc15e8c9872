package a2a

import (
	"encoding/json"
	"time"
)

// TaskState is the state of a task. The values are the 0.3 spellings.
type TaskState string

// The task states of A2A.
const (
	StateSubmitted     TaskState = "submitted"
	StateWorking       TaskState = "working"
	StateInputRequired TaskState = "input-required"
	StateAuthRequired  TaskState = "auth-required"
	StateCompleted     TaskState = "completed"
	StateCanceled      TaskState = "canceled"
	StateFailed        TaskState = "failed"
	StateRejected      TaskState = "rejected"
	StateUnknown       TaskState = "unknown"
)

// Terminal reports whether no further transition may leave s.
func (s TaskState) Terminal() bool {
	switch s {
	case StateCompleted, StateCanceled, StateFailed, StateRejected:
		return true
	}
	return false
}

// Interrupted reports whether s waits for the client (input or auth).
func (s TaskState) Interrupted() bool {
	return s == StateInputRequired || s == StateAuthRequired
}

// Role says who wrote a message.
type Role string

// The message roles.
const (
	RoleUser  Role = "user"
	RoleAgent Role = "agent"
)

// PartKind discriminates the content of a Part.
type PartKind string

// The part kinds.
const (
	PartText PartKind = "text"
	PartFile PartKind = "file"
	PartData PartKind = "data"
)

// Part is one piece of message or artifact content. Exactly one of Text,
// File and Data is meaningful, as Kind says.
type Part struct {
	Kind     PartKind
	Text     string
	File     *FileContent
	Data     json.RawMessage // a JSON object
	Metadata map[string]any
}

// FileContent is a file carried inline (Bytes, base64) or by reference (URI).
type FileContent struct {
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Bytes    string `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Kind: PartText, Text: s} }

// DataPart returns a data part; data must be a JSON object.
func DataPart(data json.RawMessage) Part { return Part{Kind: PartData, Data: data} }

// Message is one turn of the conversation.
type Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             Role           `json:"role"`
	Parts            []Part         `json:"parts"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	Metadata         map[string]any `json:"metadata,omitempty"`
}

// TaskStatus is a task's state with the message that explains it.
type TaskStatus struct {
	State     TaskState `json:"state"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []Part         `json:"parts"`
	Extensions  []string       `json:"extensions,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// Task is the unit of work a2ad runs for one call of a function.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	History   []Message      `json:"history,omitempty"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// WithHistoryLength returns a shallow copy of t that keeps only the last n
// history messages; n < 0 keeps all of them, 0 none.
func (t Task) WithHistoryLength(n int) Task {
	if n < 0 || n >= len(t.History) {
		return t
	}
	if n == 0 {
		t.History = nil
		return t
	}
	t.History = t.History[len(t.History)-n:]
	return t
}

// StatusUpdateEvent reports a change of a task's status.
type StatusUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Final     bool           `json:"final"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// ArtifactUpdateEvent reports a new artifact, or a chunk of one.
type ArtifactUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  Artifact       `json:"artifact"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// Spill is how an answer is written while it is made, so that a large one
// is never held whole: the encoders of a task or a page of tasks that
// take one call it before each part, with the bytes appended so far (the
// answer's whole prefix), and go on appending to the slice it returns:
// dst itself, or dst[:0] once it has written dst out. Parts are where an
// answer's bytes are.
type Spill func(dst []byte) []byte

// timestampLayout is how A2A timestamps are written: RFC 3339, UTC, with
// milliseconds.
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// Timestamp formats t as A2A timestamps are written (timestampLayout).
// It writes the digits itself: time.Format parses its layout on every
// call (only RFC 3339 itself has a fast path), and every task status
// has a timestamp.
func Timestamp(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(timestampLayout)
	}
	hour, minute, sec := t.Clock()
	b := [24]byte{4: '-', 7: '-', 10: 'T', 13: ':', 16: ':', 19: '.', 23: 'Z'}
	digits(b[0:4], year)
	digits(b[5:7], int(month))
	digits(b[8:10], day)
	digits(b[11:13], hour)
	digits(b[14:16], minute)
	digits(b[17:19], sec)
	digits(b[20:23], t.Nanosecond()/1e6) // truncated, as Format does
	return string(b[:])
}

// digits writes n, zero-padded, into all of b.
func digits(b []byte, n int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
}

// PushConfig is a webhook for a task's notifications (0.3
// PushNotificationConfig).
type PushConfig struct {
	ID             string    `json:"id,omitempty"`
	URL            string    `json:"url"`
	Token          string    `json:"token,omitempty"`
	Authentication *PushAuth `json:"authentication,omitempty"`
	// Wire is the protocol version the config was set with: its
	// notifications are sent in that version's shape.
	Wire Version `json:"wireVersion,omitempty"`
}

// PushAuth says how to authenticate to a webhook.
type PushAuth struct {
	Schemes     []string `json:"schemes"`
	Credentials string   `json:"credentials,omitempty"`
}

// TaskPushConfig is a task's webhook, as push methods take and return it.
type TaskPushConfig struct {
	TaskID                 string     `json:"taskId"`
	PushNotificationConfig PushConfig `json:"pushNotificationConfig"`
}
