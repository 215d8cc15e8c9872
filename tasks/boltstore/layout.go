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
	"errors"
	"fmt"
	"math"

	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
	"github.com/a2ad/a2ad/tasks/record"
)

var bucketBody = []byte("body")

// headFormat is the byte after a head's sequence; a whole record (of
// schemas 2 to 4) has its JSON's '{' there.
const headFormat = 0x01

// The kinds of body keys, in their order.
const (
	kindArtifact = 'a'
	kindHistory  = 'h'
	kindInput    = 'i'
	kindMsgID    = 'm'
	kindEvent    = 's'
)

// artRef is an artifact in a head's index: its id, how many body keys
// (the artifact, then the chunks appended to it) it has, and what its
// parts take as tasks.ArtifactBytes counts it.
type artRef struct {
	ID     string
	Chunks uint32
	Bytes  int64
}

// head is a head value split, nothing decoded.
type head struct {
	seq        uint64
	owner      []byte
	historyLen uint64
	index      []byte // the artifacts' index, encoded
	json       []byte
}

var errLayout = errors.New("not a head of this schema")

// splitHead splits v without copying or decoding it.
func splitHead(v []byte) (head, error) {
	if len(v) < 9 || v[8] != headFormat {
		return head{}, errLayout
	}
	h := head{seq: binary.BigEndian.Uint64(v)}
	rest := v[9:]
	n, w := binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return head{}, errLayout
	}
	h.owner, rest = rest[w:w+int(n)], rest[w+int(n):]
	if h.historyLen, w = binary.Uvarint(rest); w <= 0 {
		return head{}, errLayout
	}
	rest = rest[w:]
	if n, w = binary.Uvarint(rest); w <= 0 || uint64(len(rest)-w) < n {
		return head{}, errLayout
	}
	h.index, h.json = rest[w:w+int(n)], rest[w+int(n):]
	return h, nil
}

// arts decodes the artifacts' index.
func (h head) arts() ([]artRef, error) {
	var out []artRef
	for b := h.index; len(b) > 0; {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return nil, errLayout
		}
		a := artRef{ID: string(b[w : w+int(n)])}
		b = b[w+int(n):]
		chunks, w := binary.Uvarint(b)
		if w <= 0 || chunks > math.MaxUint32 {
			return nil, errLayout
		}
		b = b[w:]
		size, w := binary.Uvarint(b)
		if w <= 0 || size > math.MaxInt64 {
			return nil, errLayout
		}
		b = b[w:]
		a.Chunks, a.Bytes = uint32(chunks), int64(size)
		out = append(out, a)
	}
	return out, nil
}

// appendIndex appends the artifacts' index arts.
func appendIndex(dst []byte, arts []artRef) []byte {
	for _, a := range arts {
		dst = binary.AppendUvarint(dst, uint64(len(a.ID)))
		dst = append(dst, a.ID...)
		dst = binary.AppendUvarint(dst, uint64(a.Chunks))
		dst = binary.AppendUvarint(dst, uint64(a.Bytes))
	}
	return dst
}

// appendHeadValue appends rec's head value: its history holds historyLen
// messages and arts indexes its artifacts; its status message leaves out
// ids (see record.AppendHead).
func appendHeadValue(dst []byte, rec *tasks.Record, historyLen uint64, arts []artRef, ids record.IDs) ([]byte, error) {
	dst = binary.BigEndian.AppendUint64(dst, rec.Seq)
	dst = append(dst, headFormat)
	dst = binary.AppendUvarint(dst, uint64(len(rec.Owner)))
	dst = append(dst, rec.Owner...)
	dst = binary.AppendUvarint(dst, historyLen)
	var idx [128]byte
	index := appendIndex(idx[:0], arts)
	dst = binary.AppendUvarint(dst, uint64(len(index)))
	dst = append(dst, index...)
	return record.AppendHead(dst, rec, ids)
}

// decodeHead decodes a head value of task id into a record without
// history and artifacts, and the artifacts' index.
func decodeHead(id string, v []byte) (*tasks.Record, []artRef, error) {
	h, err := splitHead(v)
	if err != nil {
		return nil, nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	return h.decode(id)
}

// decode decodes h into a record without history and artifacts, with
// the artifacts' index.
func (h head) decode(id string) (*tasks.Record, []artRef, error) {
	r, err := record.DecodeHead(h.json)
	if err != nil {
		return nil, nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	arts, err := h.arts()
	if err != nil {
		return nil, nil, fmt.Errorf("decode task %s: the artifacts' index: %w", id, err)
	}
	h.fill(r)
	r.ArtifactSizes = artifactSizes(arts)
	return r, arts, nil
}

// fill sets what the header of h says in r, whose JSON h's decoded to.
func (h head) fill(r *tasks.Record) {
	r.Owner, r.Seq, r.HistoryLen = string(h.owner), h.seq, int(h.historyLen)
}

// artifactSizes is the index arts as a record shows it.
func artifactSizes(arts []artRef) []tasks.ArtifactSize {
	if len(arts) == 0 {
		return nil
	}
	out := make([]tasks.ArtifactSize, len(arts))
	for i, a := range arts {
		out[i] = tasks.ArtifactSize{ID: a.ID, Bytes: a.Bytes}
	}
	return out
}

// decodeWhole decodes a whole record, of schemas 2 to 4: seq(8) and the
// record's JSON.
func decodeWhole(id string, v []byte) (*tasks.Record, error) {
	if len(v) < 9 || v[8] != '{' {
		return nil, fmt.Errorf("decode task %s: not a whole record (schemas 2 to 4)", id)
	}
	var w record.Whole
	if err := json.Unmarshal(v[8:], &w); err != nil {
		return nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	r := w.Record()
	r.Seq = binary.BigEndian.Uint64(v)
	return r, nil
}

// bodyPrefix is the start of task id's keys of kind in body.
func bodyPrefix(id string, kind byte) []byte {
	return appendBodyPrefix(make([]byte, 0, 2+len(id)+1+8), id, kind)
}

func appendBodyPrefix(dst []byte, id string, kind byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(id)))
	dst = append(dst, id...)
	return append(dst, kind)
}

func inputKey(id string) []byte { return bodyPrefix(id, kindInput) }

// recDoc is what rawTask.doc holds: a head, and the history messages,
// artifacts and chunks read with it.
type recDoc struct {
	Head      record.Head       `json:"head"`
	History   []record.Message  `json:"history"`
	Artifacts []record.Artifact `json:"artifacts"`
	Chunks    [][]record.Part   `json:"chunks"`
}

// rawTask is a task as read in a transaction: its head value and the
// JSON document of what was read, {"head":…,"history":[…],"artifacts":
// […],"chunks":[…]}, copied out, decoded once the transaction has ended
// with one json.Unmarshal.
type rawTask struct {
	head    []byte   // the head value, as stored
	doc     []byte   // recDoc's JSON
	chunkOf []uint32 // the artifact each of doc's chunks is appended to
	all     bool     // the artifacts were read
	err     error    // the body read does not fit together
}

// readTask copies task id of owner out of tx with what sc asks for. The
// owner is checked before anything else of the task is read, and with the
// same work whether the task is foreign or missing: the lookup is a seek,
// which for a missing id lands on the next task, whose owner is compared
// all the same. A foreign task is then tasks.ErrNotOwner at the cost of a
// missing one, tasks.ErrNotFound.
func readTask(tx *engine.Tx, owner, id string, sc tasks.Scope) (*rawTask, error) {
	k, v := tx.Bucket(bucketTasks).Cursor().Seek([]byte(id))
	h, err := headOf(k, v, owner, id)
	if err != nil {
		return nil, err
	}
	return copyTask(tx, nil, id, v, h, sc), nil
}

// headOf is the head of task id of owner from a seek for it that found k
// and v: ErrNotFound if k is not id; ErrNotOwner if v is not owner's.
func headOf(k, v []byte, owner, id string) (head, error) {
	owned := ownedBy(v, owner)
	switch {
	case string(k) != id:
		return head{}, tasks.ErrNotFound
	case !owned:
		return head{}, tasks.ErrNotOwner // or a head that does not parse: Check reports it
	}
	h, err := splitHead(v)
	if err != nil {
		return head{}, fmt.Errorf("read task %s: %w", id, err)
	}
	return h, nil
}

// reader reads tasks of one transaction with one cursor per bucket: a
// page of a listing reads many.
type reader struct {
	tx          *engine.Tx
	tasks, body *engine.Cursor // body: opened when a read first needs it
}

func newReader(tx *engine.Tx) *reader {
	return &reader{tx: tx, tasks: tx.Bucket(bucketTasks).Cursor()}
}

// read is readTask.
func (rd *reader) read(owner, id string, sc tasks.Scope) (*rawTask, error) {
	k, v := rd.tasks.Seek([]byte(id))
	h, err := headOf(k, v, owner, id)
	if err != nil {
		return nil, err
	}
	if rd.body == nil && needsBody(h, sc) {
		rd.body = rd.tx.Bucket(bucketBody).Cursor()
	}
	return copyTask(rd.tx, rd.body, id, v, h, sc), nil
}

// ownedBy reports whether the head value v names owner, reading no more
// of v than its header; a value that is no head is owned by no one.
func ownedBy(v []byte, owner string) bool {
	if len(v) < 10 || v[8] != headFormat {
		return false
	}
	n, w := binary.Uvarint(v[9:])
	return w > 0 && n == uint64(len(owner)) && uint64(len(v)-9-w) >= n && string(v[9+w:9+w+int(n)]) == owner
}

// parts are the values of a task's body a read copies, still in the
// transaction's memory; the usual task's fit in the arrays.
type parts struct {
	arts, chunks, history [][]byte
	chunkOf               []uint32
	size                  int // of all the values
	err                   error
	a, c, hs              [4][]byte
}

// needsBody reports whether a read of h with sc reads any of its body.
func needsBody(h head, sc tasks.Scope) bool {
	return sc.Artifacts || (sc.History != 0 && h.historyLen > 0)
}

// copyTask copies the head value v of task id, split as h, and the
// history and artifacts sc asks for, out of tx (with body, a cursor of
// its body bucket, when not nil): into one buffer, the head then the
// document, sized once.
func copyTask(tx *engine.Tx, body *engine.Cursor, id string, v []byte, h head, sc tasks.Scope) *rawTask {
	var p parts
	p.arts, p.chunks, p.history = p.a[:0], p.c[:0], p.hs[:0]
	if needsBody(h, sc) {
		if body == nil {
			body = tx.Bucket(bucketBody).Cursor()
		}
		p.read(body, id, h.historyLen, sc)
	}
	const frame = len(`{"head":,"artifacts":[],"chunks":[],"history":[]}`)
	n := len(v) + len(h.json) + frame + p.size + len(p.arts) + len(p.chunks) + len(p.history)
	buf := append(make([]byte, 0, n), v...)
	rt := &rawTask{head: buf[:len(v):len(v)], chunkOf: p.chunkOf, err: p.err, all: sc.Artifacts}
	doc := append(append(buf[len(v):], `{"head":`...), h.json...)
	if sc.Artifacts {
		doc = appendList(append(doc, `,"artifacts":`...), p.arts)
		doc = appendList(append(doc, `,"chunks":`...), p.chunks)
	}
	if len(p.history) > 0 {
		doc = appendList(append(doc, `,"history":`...), p.history)
	}
	rt.doc = append(doc, '}')
	return rt
}

// appendList appends vals as a JSON array.
func appendList(dst []byte, vals [][]byte) []byte {
	dst = append(dst, '[')
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, v...)
	}
	return append(dst, ']')
}

// read gathers the history and artifacts sc asks for, with one pass of
// one cursor when the whole history is asked for: a task's artifact keys
// come right before its history.
func (p *parts) read(c *engine.Cursor, id string, historyLen uint64, sc tasks.Scope) {
	wantHistory := sc.History != 0 && historyLen > 0
	if !wantHistory && !sc.Artifacts {
		return
	}
	var from uint64 // the first history message to read
	if sc.History > 0 && uint64(sc.History) < historyLen {
		from = historyLen - uint64(sc.History)
	}
	var keys [2][64]byte // the prefixes, on the stack for the usual ids
	prefix := appendBodyPrefix(keys[0][:0], id, kindArtifact)
	var k, v []byte
	if sc.Artifacts {
		var n uint32 // artifacts so far
		for k, v = c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+8 {
				continue // Check reports it
			}
			i, j := binary.BigEndian.Uint32(k[len(prefix):]), binary.BigEndian.Uint32(k[len(prefix)+4:])
			p.size += len(v)
			if j > 0 {
				p.chunks = append(p.chunks, v)
				p.chunkOf = append(p.chunkOf, i)
				continue
			}
			if i != n {
				p.err = fmt.Errorf("artifact %d out of order", i)
			}
			p.arts = append(p.arts, v)
			n++
		}
	}
	if !wantHistory {
		return
	}
	hist := appendBodyPrefix(keys[1][:0], id, kindHistory)
	if !sc.Artifacts || from > 0 || k == nil || !bytes.HasPrefix(k, hist) {
		k, v = c.Seek(binary.BigEndian.AppendUint64(hist[:len(hist):len(hist)], from))
	}
	for ; k != nil && bytes.HasPrefix(k, hist); k, v = c.Next() {
		p.size += len(v)
		p.history = append(p.history, v)
	}
	p.fitHistory(sc.HistoryBytes)
}

// fitHistory leaves out of the history read the oldest messages, until
// the rest take budget bytes at most (0: no bound), as
// tasks.LastFitting does: the values are the messages' stored encodings,
// still in the transaction's memory, so what is left out is never copied.
func (p *parts) fitHistory(budget int64) {
	if budget <= 0 {
		return
	}
	var used int64
	for i := len(p.history) - 1; i >= 0; i-- {
		if used += int64(len(p.history[i])); used > budget {
			for _, v := range p.history[:i+1] {
				p.size -= len(v)
			}
			p.history = p.history[i+1:]
			return
		}
	}
}

// decode decodes rt into a record holding what was read. With index, the
// record has its ArtifactSizes and the artifacts' index is returned too
// (an update needs them; a read does not).
func (rt *rawTask) decode(id string, index bool) (*tasks.Record, []artRef, error) {
	if rt.err != nil {
		return nil, nil, fmt.Errorf("decode task %s: %w", id, rt.err)
	}
	h, err := splitHead(rt.head)
	if err != nil {
		return nil, nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	var doc recDoc
	if err := json.Unmarshal(rt.doc, &doc); err != nil {
		return nil, nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	r := doc.Head.Record()
	h.fill(r)
	if len(doc.History) > 0 {
		r.Task.History = record.Messages(doc.History, record.IDsOf(&r.Task))
	}
	if rt.all {
		for k, parts := range doc.Chunks {
			i := rt.chunkOf[k]
			if int(i) >= len(doc.Artifacts) {
				return nil, nil, fmt.Errorf("decode task %s: a chunk of artifact %d, which it does not have", id, i)
			}
			doc.Artifacts[i].Parts = append(doc.Artifacts[i].Parts, parts...)
		}
		if len(doc.Artifacts) > 0 {
			r.Task.Artifacts = record.Artifacts(doc.Artifacts)
		}
	}
	if !index {
		return r, nil, nil
	}
	arts, err := h.arts()
	if err != nil {
		return nil, nil, fmt.Errorf("decode task %s: the artifacts' index: %w", id, err)
	}
	r.ArtifactSizes = artifactSizes(arts)
	return r, arts, nil
}
