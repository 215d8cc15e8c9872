package boltstore

// A task is kept as a small head in tasks and its growing parts in body,
// so that an append writes what it adds and a read of a foreign task
// stops at the owner:
//
//	tasks  taskID → seq(8) 0x01 len(owner) owner historyLen len(index) index
//	                head JSON (package record: v1 in schema 5, v2 from 6)
//	body   len(taskID) taskID 'a' i(4) j(4) → artifact i: its JSON (j = 0),
//	                                          or parts appended to it
//	                                          (j > 0, a JSON array)
//	       len(taskID) taskID 'h' n(8)      → history message n, JSON
//	       len(taskID) taskID 'i'           → the input of the task's
//	                                          current or last call, JSON
//	       len(taskID) taskID 'm' messageID → (empty) an idempotency key
//	                                          the task holds
//	       len(taskID) taskID 's' seq(8)    → event seq, JSON (the task's
//	                                          stream)
//
// len(x), historyLen and len(index) are uvarints; the length prefix keeps
// one task's keys from running into another's whatever bytes the ids hold.
// index is the artifacts' index: per artifact, in order, len(id) id
// chunks bytes (uvarints): its id, how many body keys it has (the
// artifact, then the chunks appended to it) and what its parts take
// (tasks.PartBytes). A task's keys are together, so that a change of it
// writes the pages of one key range, and its artifacts and history come
// first, so that a read of the whole task is one seek. The owner comes
// before anything that needs decoding, so that a read checks it first.
// The head JSON (package record) is the task without its history, artifacts
// and input. Every change rewrites the head, so it is kept small; what
// grows, or may be large, is written once, when it is added.
//
// The whole record of schemas 2 to 4, seq(8) then the record's JSON (with
// its history, artifacts, input and message ids), and the events bucket
// beside it, are read only by the migration to 5 and by Check.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
	"github.com/a2ad/a2ad/tasks/record"
)

// Writing the body bucket: the operations a change makes on a task's
// events, history, artifacts, input and message ids (layout.go says what
// the keys are).

// bodyOps are the body writes of a change, encoded outside the writer:
// their keys and values one after another in buf (one allocation, not two
// per write), each op the bounds of its key and value.
type bodyOps struct {
	buf []byte
	ops []bodyOp
}

// bodyOp is one write to body: a put of buf[k:v] = buf[v:end], or a
// delete of buf[k:v] when del. A put that may replace a key (replace)
// and a delete count what they take away when the store's usage is
// counted (growth).
type bodyOp struct {
	k, v, end int
	del       bool
	replace   bool
}

// key starts an op: it appends task id's body prefix of kind and returns
// where the key begins.
func (o *bodyOps) key(id string, kind byte) int {
	if o.buf == nil {
		o.buf = make([]byte, 0, 1024)
	}
	k := len(o.buf)
	o.buf = appendBodyPrefix(o.buf, id, kind)
	return k
}

// done ends the op that began at k, its key ending at v and its value at
// the end of buf.
func (o *bodyOps) done(k, v int) { o.ops = append(o.ops, bodyOp{k: k, v: v, end: len(o.buf)}) }

// put writes the key of kind that rest completes, with value val.
func (o *bodyOps) put(id string, kind byte, rest, val []byte) {
	k := o.key(id, kind)
	o.buf = append(o.buf, rest...)
	v := len(o.buf)
	o.buf = append(o.buf, val...)
	o.done(k, v)
}

// del deletes artifact key (i, j).
func (o *bodyOps) del(id string, i, j uint32) {
	k := o.key(id, kindArtifact)
	o.buf = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(o.buf, i), j)
	o.ops = append(o.ops, bodyOp{k: k, v: len(o.buf), end: len(o.buf), del: true})
}

// added is what the ops' keys and values take: what they add to a new
// task, which has nothing to replace.
func (o *bodyOps) added() int64 {
	var n int64
	for _, op := range o.ops {
		if !op.del {
			n += int64(op.end - op.k)
		}
	}
	return n
}

// growth is what the ops add to the store: their keys and values, less
// what the keys they replace or delete take now.
func (o *bodyOps) growth(tx *engine.Tx) int64 {
	n := o.added()
	var b *engine.Bucket
	for _, op := range o.ops {
		if !op.del && !op.replace {
			continue
		}
		if b == nil {
			b = tx.Bucket(bucketBody)
		}
		if old := b.Get(o.buf[op.k:op.v]); old != nil {
			n -= int64(op.v - op.k + len(old))
		}
	}
	return n
}

func (o *bodyOps) apply(tx *engine.Tx) error {
	if len(o.ops) == 0 {
		return nil
	}
	b := tx.Bucket(bucketBody)
	b.FillPercent = appendFill
	for _, op := range o.ops {
		var err error
		if op.del {
			err = b.Delete(o.buf[op.k:op.v])
		} else {
			err = b.Put(o.buf[op.k:op.v], o.buf[op.v:op.end])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// putEvent writes encoded event seq of task id, its message without ids
// (see record.IDs).
func (o *bodyOps) putEvent(id string, in record.IDs, seq uint64, e *tasks.Event) error {
	k := o.key(id, kindEvent)
	o.buf = binary.BigEndian.AppendUint64(o.buf, seq)
	v := len(o.buf)
	var err error
	if o.buf, err = record.AppendEvent(o.buf, e, in); err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	o.done(k, v)
	return nil
}

// putInput encodes in as the task's input, which it replaces.
func (o *bodyOps) putInput(id string, in json.RawMessage) error {
	if !json.Valid(in) {
		return &json.UnsupportedValueError{Str: "input is not valid JSON"}
	}
	o.put(id, kindInput, nil, in)
	o.ops[len(o.ops)-1].replace = true
	return nil
}

// putMessageID records that task id holds messageID.
func (o *bodyOps) putMessageID(id, messageID string) {
	k := o.key(id, kindMsgID)
	o.buf = append(o.buf, messageID...)
	o.done(k, len(o.buf))
}

// appendHistory encodes msgs as history messages from, onwards, of task
// id, without ids (see record.IDs).
func (o *bodyOps) appendHistory(id string, in record.IDs, from uint64, msgs []a2a.Message) error {
	for i := range msgs {
		k := o.key(id, kindHistory)
		o.buf = binary.BigEndian.AppendUint64(o.buf, from+uint64(i))
		v := len(o.buf)
		var err error
		if o.buf, err = record.AppendMessage(o.buf, &msgs[i], in); err != nil {
			return fmt.Errorf("encode message: %w", err)
		}
		o.done(k, v)
	}
	return nil
}

// artifactChunk starts artifact key (i, j) and returns where it begins
// and where its value will.
func (o *bodyOps) artifactChunk(id string, i, j uint32) (k, v int) {
	k = o.key(id, kindArtifact)
	o.buf = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(o.buf, i), j)
	return k, len(o.buf)
}

// newArtifact encodes a as artifact i.
func (o *bodyOps) newArtifact(id string, i uint32, a *a2a.Artifact) error {
	k, v := o.artifactChunk(id, i, 0)
	var err error
	if o.buf, err = record.AppendArtifact(o.buf, a); err != nil {
		return fmt.Errorf("encode artifact: %w", err)
	}
	o.done(k, v)
	return nil
}

// applyArtifact encodes the body writes of an artifact event on arts, the
// index, and returns the index after it: the rule of tasks.ApplyArtifact,
// on keys. An appended chunk is one new key; a replaced artifact drops
// its chunks.
func (o *bodyOps) applyArtifact(id string, arts []artRef, chunk *a2a.Artifact, appendParts bool) ([]artRef, error) {
	for i := range arts {
		if arts[i].ID != chunk.ArtifactID {
			continue
		}
		if appendParts {
			k, v := o.artifactChunk(id, uint32(i), arts[i].Chunks)
			var err error
			if o.buf, err = tasks.AppendCanonicalParts(o.buf, chunk.Parts); err != nil {
				return nil, fmt.Errorf("encode artifact chunk: %w", err)
			}
			o.done(k, v)
			arts[i].Chunks++
			arts[i].Bytes += tasks.PartBytes(chunk.Parts)
			return arts, nil
		}
		for j := uint32(1); j < arts[i].Chunks; j++ {
			o.del(id, uint32(i), j)
		}
		arts[i].Chunks, arts[i].Bytes = 1, tasks.PartBytes(chunk.Parts)
		if err := o.newArtifact(id, uint32(i), chunk); err != nil {
			return nil, err
		}
		o.ops[len(o.ops)-1].replace = true
		return arts, nil
	}
	i := uint32(len(arts))
	return append(arts, artRef{ID: chunk.ArtifactID, Chunks: 1, Bytes: tasks.PartBytes(chunk.Parts)}), o.newArtifact(id, i, chunk)
}

// deleteBody deletes every body key of task id, and the idempotency keys
// of owner that its message ids name, and returns what they took (keys
// and values, as storedSize counts them).
func deleteBody(tx *engine.Tx, owner, id string) (int64, error) {
	prefix := lengthPrefixed(id, "")
	c := tx.Bucket(bucketBody).Cursor()
	idem := tx.Bucket(bucketIdem)
	var size int64
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Seek(prefix) {
		size += int64(len(k) + len(v))
		if len(k) > len(prefix) && k[len(prefix)] == kindMsgID {
			ik := idemKey(owner, string(k[len(prefix)+1:]))
			if iv := idem.Get(ik); iv != nil {
				size += int64(len(ik) + len(iv))
			}
			if err := idem.Delete(ik); err != nil {
				return 0, err
			}
		}
		if err := c.Delete(); err != nil {
			return 0, err
		}
	}
	return size, nil
}

// bodySize is what task id's body keys take, and the idempotency keys of
// owner its message ids name (storedSize).
func bodySize(tx *engine.Tx, owner, id string) int64 {
	prefix := lengthPrefixed(id, "")
	c := tx.Bucket(bucketBody).Cursor()
	idem := tx.Bucket(bucketIdem)
	var size int64
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		size += int64(len(k) + len(v))
		if len(k) > len(prefix) && k[len(prefix)] == kindMsgID {
			ik := idemKey(owner, string(k[len(prefix)+1:]))
			if iv := idem.Get(ik); iv != nil {
				size += int64(len(ik) + len(iv))
			}
		}
	}
	return size
}

// input returns a copy of task id's input.
func input(tx *engine.Tx, id string) json.RawMessage {
	v := tx.Bucket(bucketBody).Get(inputKey(id))
	if v == nil {
		return nil
	}
	return append(json.RawMessage(nil), v...)
}

// messageIDs returns the message ids task id holds.
func messageIDs(tx *engine.Tx, id string) []string {
	var out []string
	prefix := bodyPrefix(id, kindMsgID)
	c := tx.Bucket(bucketBody).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		out = append(out, string(k[len(prefix):]))
	}
	return out
}
