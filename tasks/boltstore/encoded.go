package boltstore

import (
	"fmt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
	"github.com/a2ad/a2ad/tasks/record"
)

// A task's head value starts with its sequence number (8 bytes,
// big-endian). The writer compares the whole head to detect a change made
// since it was read, without decoding it: every change of a task rewrites
// its head, so an unchanged head means an unchanged task. All JSON work
// happens in the callers' goroutines, outside the single writer.

// encoded is a change of one task, ready to write.
type encoded struct {
	rec        *tasks.Record
	ids        record.IDs       // what its messages leave out (record v2), or none (v1)
	value      []byte           // the head
	body       bodyOps          // events, history, artifacts, input, message ids
	deliveries []queuedDelivery // push deliveries the transition queues
	listed     []byte           // the task's key in recent before the change; nil for a new task
	arts       []artRef         // the artifacts' index after the change
}

// encodeEvents assigns the events' sequence numbers after rec's and
// encodes them. rec.Seq ends at the last event's sequence.
func (e *encoded) encodeEvents(events []tasks.Event) error {
	for i := range events {
		e.rec.Seq++
		events[i].Seq = e.rec.Seq
		if err := e.body.putEvent(e.rec.Task.ID, e.ids, e.rec.Seq, &events[i]); err != nil {
			return err
		}
	}
	return nil
}

// encodeNew encodes rec, whole, as a new task with its first events: its
// head, its history, its artifacts and its message ids; its messages
// leave out ids (record v2: record.IDsOf(&rec.Task)), or none (v1, as
// the migration to schema 5 writes).
func encodeNew(rec *tasks.Record, events []tasks.Event, ids record.IDs) (*encoded, error) {
	e := &encoded{rec: rec, ids: ids}
	if err := e.encodeEvents(events); err != nil {
		return nil, err
	}
	id := rec.Task.ID
	if err := e.body.appendHistory(id, ids, 0, rec.Task.History); err != nil {
		return nil, err
	}
	arts := make([]artRef, len(rec.Task.Artifacts))
	for i := range rec.Task.Artifacts {
		arts[i] = artRef{ID: rec.Task.Artifacts[i].ArtifactID, Chunks: 1, Bytes: tasks.PartBytes(rec.Task.Artifacts[i].Parts)}
		if err := e.body.newArtifact(id, uint32(i), &rec.Task.Artifacts[i]); err != nil {
			return nil, err
		}
	}
	if len(rec.Input) > 0 {
		if err := e.body.putInput(id, rec.Input); err != nil {
			return nil, fmt.Errorf("encode task: %w", err)
		}
	}
	for _, m := range rec.MessageIDs {
		e.body.putMessageID(id, m)
	}
	rec.HistoryLen = len(rec.Task.History)
	return e, e.encodeHead(arts)
}

// encodeChange encodes what an UpdateFunc did to rec, the head of a task
// whose history held rec.HistoryLen messages and whose artifacts arts
// indexes: the messages it appended to rec.Task.History, the artifact
// events among events, the input it set, and key's message id if key is
// not nil. Nothing already stored is written again but the head.
func encodeChange(rec *tasks.Record, arts []artRef, events []tasks.Event, key *tasks.IdemKey) (*encoded, error) {
	e := &encoded{rec: rec, ids: record.IDsOf(&rec.Task)}
	if err := e.encodeEvents(events); err != nil {
		return nil, err
	}
	id := rec.Task.ID
	if err := e.body.appendHistory(id, e.ids, uint64(rec.HistoryLen), rec.Task.History); err != nil {
		return nil, err
	}
	arts = append([]artRef(nil), arts...)
	for i := range events {
		if a := events[i].Artifact; a != nil {
			var err error
			if arts, err = e.body.applyArtifact(id, arts, a, events[i].Append); err != nil {
				return nil, err
			}
		}
	}
	if len(rec.Input) > 0 {
		if err := e.body.putInput(id, rec.Input); err != nil {
			return nil, fmt.Errorf("encode task: %w", err)
		}
	}
	if key != nil {
		e.body.putMessageID(id, key.MessageID)
	}
	rec.HistoryLen += len(rec.Task.History)
	return e, e.encodeHead(arts)
}

func (e *encoded) encodeHead(arts []artRef) error {
	v, err := appendHeadValue(make([]byte, 0, 512), e.rec, uint64(e.rec.HistoryLen), arts, e.ids)
	if err != nil {
		return fmt.Errorf("encode task: %w", err)
	}
	e.value, e.arts = v, arts
	return nil
}

// put writes e and keeps the active and expiry indexes in step with the
// state; prev is the state before ("" for a new task).
func (e *encoded) put(tx *engine.Tx, prev a2a.TaskState) error {
	rec := e.rec
	id := []byte(rec.Task.ID)
	tb := tx.Bucket(bucketTasks)
	tb.FillPercent = appendFill
	if err := tb.Put(id, e.value); err != nil {
		return err
	}
	if err := e.body.apply(tx); err != nil {
		return err
	}
	if err := putListing(tx, e.listed, rec); err != nil {
		return err
	}
	if err := putDeliveries(tx, e.deliveries); err != nil {
		return err
	}
	state := rec.State()
	if state.Terminal() {
		if err := tx.Bucket(bucketActive).Delete(id); err != nil {
			return err
		}
		if !prev.Terminal() {
			xb := tx.Bucket(bucketExpiry)
			xb.FillPercent = appendFill
			return xb.Put(expiryKey(rec.UpdatedAt, rec.Task.ID), nil)
		}
		return nil
	}
	if prev == "" || prev.Terminal() {
		ab := tx.Bucket(bucketActive)
		ab.FillPercent = appendFill
		return ab.Put(id, nil)
	}
	return nil
}
