package tasks

import (
	"time"

	"github.com/a2ad/a2ad/a2a"
)

// Exported is one task and everything a store keeps of it, as a store's
// export hands it to another store's import (a2ad store migrate): what a
// task reads as, and what lets its stream, its retries and its webhooks go
// on in the other store as they would have in the first.
type Exported struct {
	// Record is the task's head: its task without history and artifacts,
	// its owner, input, message ids, webhooks and sequence.
	Record *Record
	// History is the task's history, in order.
	History []a2a.Message
	// Artifacts are the task's artifacts, each as first stored and then
	// the parts appended to it, chunk by chunk.
	Artifacts []ExportedArtifact
	// Events are the task's stream, with their sequence numbers (1 to
	// Record.Seq).
	Events []Event
	// Keys are the idempotency keys bound to the task, its owner's.
	Keys []ExportedKey
	// Deliveries are the task's push deliveries not yet made.
	Deliveries []ExportedDelivery
}

// ExportedArtifact is an artifact and the chunks appended to it.
type ExportedArtifact struct {
	Artifact a2a.Artifact
	Chunks   [][]a2a.Part
}

// ExportedKey is an idempotency key: a message id of the task's owner and
// the hash of its message (KeyFor), so that a retry of the message
// in the other store is known as the same one.
type ExportedKey struct {
	MessageID string
	Hash      [32]byte
}

// ExportedDelivery is a push delivery waiting in the outbox: the webhook,
// the event sequence of the transition it reports, and its attempts.
type ExportedDelivery struct {
	ConfigID  string
	Seq       uint64
	Attempts  int
	NextAt    time.Time
	LastError string
	CreatedAt time.Time
}

// ExportCounts are what an export handed over, or what an import wrote,
// kind by kind.
type ExportCounts struct {
	Tasks, Events, Messages, Artifacts, Keys, Deliveries, DeadLetters int64
}

// Add adds what e holds.
func (c *ExportCounts) Add(e *Exported) {
	c.Tasks++
	c.Events += int64(len(e.Events))
	c.Messages += int64(len(e.History))
	for i := range e.Artifacts {
		c.Artifacts += 1 + int64(len(e.Artifacts[i].Chunks))
	}
	c.Keys += int64(len(e.Keys))
	c.Deliveries += int64(len(e.Deliveries))
}
