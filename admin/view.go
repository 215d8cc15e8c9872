package admin

// The admin listener's JSON: the one marshaller of its shapes. The
// handlers encode these types and Client (and through it `a2ad tasks`)
// decodes them. The operator view's keys are locked by golden tests
// (cmd/a2ad/testdata/wire/opview-*.golden): arrays are always present ([]
// when empty), what may be absent is null (never 0 or ""), units are in
// the names.

import (
	"encoding/json"
	"time"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	"github.com/a2ad/a2ad/tasks"
)

// Overview is GET /admin/v1/overview.
type Overview struct {
	Version       string    `json:"version"`
	StartedAt     time.Time `json:"startedAt"`
	UptimeSeconds int64     `json:"uptimeSeconds"`
	Catalog       struct {
		Path          string `json:"path"`
		Version       string `json:"version"`
		Functions     int    `json:"functions"`
		ExposedSkills int    `json:"exposedSkills"`
	} `json:"catalog"`
	// Keys is the number of entries of the keys file; null without one.
	Keys  *int `json:"keys"`
	Store struct {
		Path      string `json:"path"`
		SizeBytes int64  `json:"sizeBytes"`
		DataBytes int64  `json:"dataBytes"`
	} `json:"store"`
	Tasks struct {
		Total       int `json:"total"`
		NonTerminal int `json:"nonTerminal"`
		Terminal    int `json:"terminal"`
		// ByState has every state; a state not counted (the store holds
		// more tasks than stateCountLimit) is null.
		ByState         map[string]*int `json:"byState"`
		ByStateComplete bool            `json:"byStateComplete"`
		StateCountLimit int             `json:"stateCountLimit"`
	} `json:"tasks"`
	Push struct {
		OutboxDepth int `json:"outboxDepth"`
		DeadLetters int `json:"deadLetters"`
	} `json:"push"`
}

// TaskSummary is a task in a listing.
type TaskSummary struct {
	ID        string        `json:"id"`
	ContextID string        `json:"contextId"`
	State     a2a.TaskState `json:"state"`
	// StatusTimestamp is the status's timestamp; null when it has none.
	StatusTimestamp *string `json:"statusTimestamp"`
	// Caller is the caller that owns the task; null for the anonymous
	// caller.
	Caller      *string  `json:"caller"`
	CallerTiers []string `json:"callerTiers"`
	// Function is the function the task calls; null while it waits for a
	// message that names one.
	Function *string `json:"function"`
	// Events is the number of events in its log (the last one's seq).
	Events    uint64    `json:"events"`
	Webhooks  int       `json:"webhooks"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// TaskList is GET /admin/v1/tasks.
type TaskList struct {
	Tasks []TaskSummary `json:"tasks"`
	// NextPageToken, when not null, fetches the next page. A page may be
	// short of limit, even empty, while it is not null.
	NextPageToken *string `json:"nextPageToken"`
	ScannedTasks  int     `json:"scannedTasks"`
}

// Webhook is a task's webhook without its secrets.
type Webhook struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	WireVersion string   `json:"wireVersion"`
	HasToken    bool     `json:"hasToken"`
	AuthSchemes []string `json:"authSchemes"`
}

// TaskDetail is the task of GET /admin/v1/tasks/{id}.
type TaskDetail struct {
	TaskSummary
	// Status is the A2A status as stored (0.3 shape, message included).
	Status          json.RawMessage `json:"status"`
	WebhookConfigs  []Webhook       `json:"webhookConfigs"`
	MessageIDs      []string        `json:"messageIds"`
	HistoryMessages int             `json:"historyMessages"`
	Artifacts       int             `json:"artifacts"`
	InputBytes      int             `json:"inputBytes"`
}

// Event is one entry of a task's event log.
type Event struct {
	Seq  uint64 `json:"seq"`
	Kind string `json:"kind"` // "status" or "artifact"
	// State and Timestamp are a status event's; null otherwise (or when
	// the status has no timestamp).
	State     *a2a.TaskState `json:"state"`
	Timestamp *string        `json:"timestamp"`
	// ArtifactID is an artifact event's; null otherwise.
	ArtifactID *string `json:"artifactId"`
	Append     bool    `json:"append"`
	LastChunk  bool    `json:"lastChunk"`
	// Status and Artifact are the event as stored (0.3 shapes); the one
	// that does not apply is null.
	Status   json.RawMessage `json:"status"`
	Artifact json.RawMessage `json:"artifact"`
}

// TaskView is GET /admin/v1/tasks/{id}, and the answer of a cancel.
type TaskView struct {
	Task   TaskDetail `json:"task"`
	Events []Event    `json:"events"`
}

// DeadLetter is a push delivery given up on: never its token,
// credentials or body.
type DeadLetter struct {
	ID        uint64    `json:"id"`
	TaskID    string    `json:"taskId"`
	ConfigID  string    `json:"configId"`
	URL       string    `json:"url"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"lastError"`
	CreatedAt time.Time `json:"createdAt"`
	DeadAt    time.Time `json:"deadAt"`
}

// DeadLetterList is GET /admin/v1/dead-letters.
type DeadLetterList struct {
	DeadLetters   []DeadLetter `json:"deadLetters"`
	NextPageToken *string      `json:"nextPageToken"`
}

// ErrorBody is every error of the admin listener (echo's shape).
type ErrorBody struct {
	Message string `json:"message"`
}

// OutboxList is GET /admin/push/dead-letters: the dead letters of the
// push outbox, oldest first, and the number of deliveries waiting.
type OutboxList struct {
	DeadLetters []DeadLetter `json:"deadLetters"`
	OutboxDepth int          `json:"outboxDepth"`
}

// ReloadReport says what a reload did. Its JSON is the answer of
// POST /admin/v1/reload; arrays are never null.
type ReloadReport struct {
	Catalog CatalogReload `json:"catalog"`
	// Keys is null without a keys file.
	Keys *KeysReload `json:"keys"`
	// AuditLogReopened is null when the audit trail has no file of its
	// own.
	AuditLogReopened *bool `json:"auditLogReopened"`
	// TLS is absent without --tls-cert (not null, so that the answers
	// of servers without TLS read as before).
	TLS *TLSReload `json:"tls,omitempty"`
	// CardKeys is absent without --card-signing-key.
	CardKeys *CardKeysReload `json:"cardKeys,omitempty"`
}

// CardKeysReload is the card signing keys' part of a reload: the key
// files, read again.
type CardKeysReload struct {
	// Reloaded is false when a file has a problem: the keys in force stay.
	Reloaded bool     `json:"reloaded"`
	Problems []string `json:"problems"`
	// KeyIDs are the kids of the keys that sign the card after the reload.
	KeyIDs []string `json:"keyIds"`
}

// TLSReload is the TLS part of a reload: the certificate, its key and the
// client CAs, read again for new handshakes.
type TLSReload struct {
	// Reloaded is false when a file has a problem: what was in force
	// stays.
	Reloaded bool     `json:"reloaded"`
	Problems []string `json:"problems"`
	// NotAfter is when the certificate in force after the reload expires
	// (RFC 3339, UTC).
	NotAfter string `json:"notAfter"`
}

// CatalogReload is the catalogue part of a reload.
type CatalogReload struct {
	// Reloaded is false when the new file has problems: the catalogue in
	// force stays.
	Reloaded bool `json:"reloaded"`
	// Changed is true when the new version differs from the old.
	Changed bool `json:"changed"`
	// Version is the version in force after the reload.
	Version   string   `json:"version"`
	Functions int      `json:"functions"`
	Problems  []string `json:"problems"`
}

// KeysReload is the keys part of a reload.
type KeysReload struct {
	Reloaded bool     `json:"reloaded"`
	Entries  int      `json:"entries"`
	Problems []string `json:"problems"`
	// StreamsEnded counts the open streams ended because the reload
	// revoked, disabled or removed their key.
	StreamsEnded int `json:"streamsEnded"`
}

func summaryOf(r *tasks.Record) TaskSummary {
	s := TaskSummary{
		ID: r.Task.ID, ContextID: r.Task.ContextID, State: r.State(),
		StatusTimestamp: nonEmpty(r.Task.Status.Timestamp),
		Caller:          nonEmpty(r.Owner),
		CallerTiers:     append(make([]string, 0, len(r.Caller().Tiers)), r.Caller().Tiers...),
		Function:        nonEmpty(r.FunctionID),
		Events:          r.Seq,
		Webhooks:        len(r.PushConfigs),
		CreatedAt:       r.CreatedAt.UTC(),
		UpdatedAt:       r.UpdatedAt.UTC(),
	}
	return s
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func viewOf(r *tasks.Record, evs []tasks.Event) (*TaskView, error) {
	status, err := v03.AppendStatus(nil, &r.Task.Status)
	if err != nil {
		return nil, err
	}
	d := TaskDetail{
		TaskSummary:     summaryOf(r),
		Status:          status,
		WebhookConfigs:  make([]Webhook, 0, len(r.PushConfigs)),
		MessageIDs:      append(make([]string, 0, len(r.MessageIDs)), r.MessageIDs...),
		HistoryMessages: len(r.Task.History),
		Artifacts:       len(r.Task.Artifacts),
		InputBytes:      len(r.Input),
	}
	for _, pc := range r.PushConfigs {
		w := Webhook{ID: pc.ID, URL: pc.URL, WireVersion: pc.Wire.String(), HasToken: pc.Token != "", AuthSchemes: []string{}}
		if pc.Authentication != nil {
			w.AuthSchemes = append(w.AuthSchemes, pc.Authentication.Schemes...)
		}
		d.WebhookConfigs = append(d.WebhookConfigs, w)
	}
	out := &TaskView{Task: d, Events: make([]Event, 0, len(evs))}
	for _, e := range evs {
		ev := Event{Seq: e.Seq, Append: e.Append, LastChunk: e.LastChunk}
		switch {
		case e.Status != nil:
			st := e.Status.State
			ev.Kind, ev.State, ev.Timestamp = "status", &st, nonEmpty(e.Status.Timestamp)
			if ev.Status, err = v03.AppendStatus(nil, e.Status); err != nil {
				return nil, err
			}
		case e.Artifact != nil:
			ev.Kind, ev.ArtifactID = "artifact", &e.Artifact.ArtifactID
			if ev.Artifact, err = v03.AppendArtifact(nil, e.Artifact); err != nil {
				return nil, err
			}
		default:
			ev.Kind = "unknown"
		}
		out.Events = append(out.Events, ev)
	}
	return out, nil
}
