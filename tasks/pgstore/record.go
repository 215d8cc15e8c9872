package pgstore

// The record encoding: the bytes the store keeps for a task's head, its
// history messages, its artifacts and the parts appended to them, and its
// events. Everything else of the store reads and writes them through
// these functions only.
//
// For now this is the JSON of tasks.Record and of the A2A types, through
// encoding/json; it moves to the record format the stores share, which
// a2ad's wire encoders take no part in, when that lands.

import (
	"encoding/json"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// encodeHead encodes rec without its history, artifacts, input and
// message ids, which the store keeps in rows of their own, and without
// its owner, a column.
func encodeHead(rec *tasks.Record) ([]byte, error) {
	h := *rec
	h.Task.History, h.Task.Artifacts = nil, nil
	h.Owner, h.Input, h.MessageIDs = "", nil, nil
	return json.Marshal(&h)
}

// decodeHead decodes a head into a record.
func decodeHead(b []byte) (*tasks.Record, error) {
	r := new(tasks.Record)
	if err := json.Unmarshal(b, r); err != nil {
		return nil, err
	}
	return r, nil
}

func encodeMessage(m *a2a.Message) ([]byte, error) { return json.Marshal(m) }

func decodeMessage(b []byte) (m a2a.Message, err error) { return m, json.Unmarshal(b, &m) }

func encodeArtifact(a *a2a.Artifact) ([]byte, error) { return json.Marshal(a) }

func decodeArtifact(b []byte) (a a2a.Artifact, err error) { return a, json.Unmarshal(b, &a) }

// encodeChunk encodes parts appended to an artifact.
func encodeChunk(parts []a2a.Part) ([]byte, error) { return json.Marshal(parts) }

func decodeChunk(b []byte) (ps []a2a.Part, err error) { return ps, json.Unmarshal(b, &ps) }

func encodeEvent(e *tasks.Event) ([]byte, error) { return json.Marshal(e) }

func decodeEvent(b []byte) (e tasks.Event, err error) { return e, json.Unmarshal(b, &e) }
