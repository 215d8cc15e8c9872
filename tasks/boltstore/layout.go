package boltstore

// A task is kept as a small head in tasks and its growing parts in body,
// so that an append writes what it adds and a read of a foreign task
// stops at the owner:
//
//	tasks  taskID → seq(8) 0x01 len(owner) owner historyLen head JSON
//	body   len(taskID) taskID 'a' i(4) j(4) → artifact i: its JSON (j = 0),
//	                                          or parts appended to it
//	                                          (j > 0, a JSON array)
//	       len(taskID) taskID 'e' seq(8)    → event seq, JSON
//	       len(taskID) taskID 'h' n(8)      → history message n, JSON
//	       len(taskID) taskID 'i'           → the input of the task's
//	                                          current or last call, JSON
//	       len(taskID) taskID 'm' messageID → (empty) an idempotency key
//	                                          the task holds
//
// len(x) and historyLen are uvarints; the length prefix keeps one task's
// keys from running into another's whatever bytes the ids hold; a task's
// keys are together, so that a change of it writes the pages of one key
// range, and the bucket is one more that a write touches, not three. The owner
// comes before anything that needs decoding, so that a read checks it
// first. The head JSON (storedHead) is the task without its history,
// artifacts and input, with an index of the artifacts: each one's id and
// how many body keys it has. Every change rewrites the head, so it is
// kept small; what grows, or may be large, is written once, when it is
// added.
//
// The schema 3 value, seq(8) then the whole record's JSON, is read only
// by the migration and by Check.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

var bucketBody = []byte("body")

// headFormat is the byte after a head's sequence; a schema 3 record has
// its JSON's '{' there.
const headFormat = 0x01

// The kinds of body keys.
const (
	kindArtifact = 'a'
	kindEvent    = 'e'
	kindHistory  = 'h'
	kindInput    = 'i'
	kindMsgID    = 'm'
)

// artRef is an artifact in a head's index: its id, how many body keys
// (the artifact, then the chunks appended to it) it has, and what its
// parts take as tasks.ArtifactBytes counts it.
type artRef struct {
	ID     string `json:"id"`
	Chunks uint32 `json:"chunks"`
	Bytes  int64  `json:"bytes"`
}

// storedHead is the head's JSON: what appendHead writes is what
// encoding/json writes for it.
type storedHead struct {
	Task        a2a.Task                `json:"task"` // without history and artifacts
	CallerTiers []string                `json:"callerTiers,omitempty"`
	CallerTier  string                  `json:"callerTier,omitempty"`
	FunctionID  string                  `json:"functionId,omitempty"`
	PushConfigs []a2a.PushConfig        `json:"pushConfigs,omitempty"`
	Group       *functions.ProcessGroup `json:"processGroup,omitempty"`
	Seq         uint64                  `json:"seq"`
	CreatedAt   time.Time               `json:"createdAt"`
	UpdatedAt   time.Time               `json:"updatedAt"`
	Artifacts   []artRef                `json:"artifacts,omitempty"`
}

// head is a head value split, nothing decoded.
type head struct {
	seq        uint64
	owner      []byte
	historyLen uint64
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
	h.json = rest[w:]
	return h, nil
}

// appendHeadValue appends rec's head value: its history holds historyLen
// messages and arts indexes its artifacts.
func appendHeadValue(dst []byte, rec *tasks.Record, historyLen uint64, arts []artRef) ([]byte, error) {
	dst = binary.BigEndian.AppendUint64(dst, rec.Seq)
	dst = append(dst, headFormat)
	dst = binary.AppendUvarint(dst, uint64(len(rec.Owner)))
	dst = append(dst, rec.Owner...)
	dst = binary.AppendUvarint(dst, historyLen)
	return appendHead(dst, rec, arts)
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

func (h head) decode(id string) (*tasks.Record, []artRef, error) {
	var sh storedHead
	if err := json.Unmarshal(h.json, &sh); err != nil {
		return nil, nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	return h.record(&sh), sh.Artifacts, nil
}

// record is the record of the head h, whose JSON decoded to sh.
func (h head) record(sh *storedHead) *tasks.Record {
	r := &tasks.Record{
		Task: sh.Task, Owner: string(h.owner), CallerTiers: sh.CallerTiers, CallerTier: sh.CallerTier,
		FunctionID: sh.FunctionID, PushConfigs: sh.PushConfigs, Group: sh.Group,
		Seq: h.seq, CreatedAt: sh.CreatedAt, UpdatedAt: sh.UpdatedAt, HistoryLen: int(h.historyLen),
	}
	if len(sh.Artifacts) > 0 {
		r.ArtifactSizes = make([]tasks.ArtifactSize, len(sh.Artifacts))
		for i, a := range sh.Artifacts {
			r.ArtifactSizes[i] = tasks.ArtifactSize{ID: a.ID, Bytes: a.Bytes}
		}
	}
	return r
}

// decodeSchema3 decodes a record of the schema 3 layout: seq(8) and the
// whole record's JSON.
func decodeSchema3(id string, v []byte) (*tasks.Record, error) {
	if len(v) < 9 || v[8] != '{' {
		return nil, fmt.Errorf("decode task %s: not a record of schema 3", id)
	}
	var r tasks.Record
	if err := json.Unmarshal(v[8:], &r); err != nil {
		return nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	r.Seq = binary.BigEndian.Uint64(v)
	r.HistoryLen = len(r.Task.History)
	return &r, nil
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

// rawTask is a task as read in a transaction: its head value and the
// JSON document of what was read, {"head":…,"history":[…],"artifacts":
// […],"chunks":[…]}, copied out, decoded once the transaction has ended
// with one json.Unmarshal.
type rawTask struct {
	head    []byte   // the head value, as stored
	doc     []byte   // storedTask's JSON
	chunkOf []uint32 // the artifact each of doc's chunks is appended to
	all     bool     // the artifacts were read
	err     error    // the body read does not fit together
}

// storedTask is what rawTask.doc holds.
type storedTask struct {
	Head      storedHead     `json:"head"`
	History   []a2a.Message  `json:"history"`
	Artifacts []a2a.Artifact `json:"artifacts"`
	Chunks    [][]a2a.Part   `json:"chunks"`
}

// newRawTask starts a rawTask of the head value v, split as h. The head
// and the document share one buffer, with room for a small task's body.
func newRawTask(v []byte, h head) *rawTask {
	buf := make([]byte, 0, len(v)+len(h.json)+1024)
	buf = append(buf, v...)
	rt := &rawTask{head: buf[:len(v):len(v)]}
	rt.doc = append(append(buf[len(v):], `{"head":`...), h.json...)
	return rt
}

// readTask copies task id of owner out of tx with what sc asks for. The
// owner is checked before anything else of the task is read, and with the
// same work whether the task is foreign or missing: the lookup is a seek,
// which for a missing id lands on the next task, whose owner is compared
// all the same. A foreign task is then tasks.ErrNotOwner at the cost of a
// missing one, tasks.ErrNotFound.
func readTask(tx *bolt.Tx, owner, id string, sc tasks.Scope) (*rawTask, error) {
	k, v := tx.Bucket(bucketTasks).Cursor().Seek([]byte(id))
	owned := ownedBy(v, owner)
	switch {
	case string(k) != id:
		return nil, tasks.ErrNotFound
	case !owned:
		return nil, tasks.ErrNotOwner // or a head that does not parse: Check reports it
	}
	h, err := splitHead(v)
	if err != nil {
		return nil, fmt.Errorf("read task %s: %w", id, err)
	}
	rt := newRawTask(v, h)
	rt.readParts(tx, id, h.historyLen, sc)
	return rt, nil
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

// readParts copies the history and artifacts sc asks for into the
// document, with one pass of one cursor when the whole history is asked
// for: a task's artifact keys come right before its history.
func (rt *rawTask) readParts(tx *bolt.Tx, id string, historyLen uint64, sc tasks.Scope) {
	defer func() { rt.doc = append(rt.doc, '}') }()
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
	c := tx.Bucket(bucketBody).Cursor()
	var k, v []byte
	if sc.Artifacts {
		// The artifacts go into the document as they come; the chunks
		// appended to them, rarer, into a list of their own after it.
		rt.all = true
		rt.doc = append(rt.doc, `,"artifacts":[`...)
		var chunks []byte
		var n uint32 // artifacts so far
		for k, v = c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+8 {
				continue // Check reports it
			}
			i, j := binary.BigEndian.Uint32(k[len(prefix):]), binary.BigEndian.Uint32(k[len(prefix)+4:])
			if j > 0 {
				if len(rt.chunkOf) > 0 {
					chunks = append(chunks, ',')
				}
				chunks = append(chunks, v...)
				rt.chunkOf = append(rt.chunkOf, i)
				continue
			}
			if i != n {
				rt.err = fmt.Errorf("artifact %d out of order", i)
			}
			if n > 0 {
				rt.doc = append(rt.doc, ',')
			}
			rt.doc = append(rt.doc, v...)
			n++
		}
		rt.doc = append(append(append(rt.doc, `],"chunks":[`...), chunks...), ']')
	}
	if !wantHistory {
		return
	}
	hist := appendBodyPrefix(keys[1][:0], id, kindHistory)
	if !sc.Artifacts || from > 0 || k == nil || !bytes.HasPrefix(k, hist) {
		k, v = c.Seek(binary.BigEndian.AppendUint64(hist[:len(hist):len(hist)], from))
	}
	rt.doc = append(rt.doc, `,"history":[`...)
	first := true
	for ; k != nil && bytes.HasPrefix(k, hist); k, v = c.Next() {
		if !first {
			rt.doc = append(rt.doc, ',')
		}
		first = false
		rt.doc = append(rt.doc, v...)
	}
	rt.doc = append(rt.doc, ']')
}

// decode decodes rt into a record holding what was read, and the index of
// its artifacts.
func (rt *rawTask) decode(id string) (*tasks.Record, []artRef, error) {
	if rt.err != nil {
		return nil, nil, fmt.Errorf("decode task %s: %w", id, rt.err)
	}
	h, err := splitHead(rt.head)
	if err != nil {
		return nil, nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	var st storedTask
	if err := json.Unmarshal(rt.doc, &st); err != nil {
		return nil, nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	r := h.record(&st.Head)
	if len(st.History) > 0 {
		r.Task.History = st.History
	}
	if rt.all {
		for k, parts := range st.Chunks {
			i := rt.chunkOf[k]
			if int(i) >= len(st.Artifacts) {
				return nil, nil, fmt.Errorf("decode task %s: a chunk of artifact %d, which it does not have", id, i)
			}
			st.Artifacts[i].Parts = append(st.Artifacts[i].Parts, parts...)
		}
		if len(st.Artifacts) > 0 {
			r.Task.Artifacts = st.Artifacts
		}
	}
	return r, st.Head.Artifacts, nil
}

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
func (o *bodyOps) growth(tx *bolt.Tx) int64 {
	n := o.added()
	var b *bolt.Bucket
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

func (o *bodyOps) apply(tx *bolt.Tx) error {
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

// putEvent writes encoded event seq of task id.
func (o *bodyOps) putEvent(id string, seq uint64, e *tasks.Event) error {
	k := o.key(id, kindEvent)
	o.buf = binary.BigEndian.AppendUint64(o.buf, seq)
	v := len(o.buf)
	var err error
	if o.buf, err = appendEvent(o.buf, e); err != nil {
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

// appendHistory encodes msgs as history messages from, onwards.
func (o *bodyOps) appendHistory(id string, from uint64, msgs []a2a.Message) error {
	for i := range msgs {
		k := o.key(id, kindHistory)
		o.buf = binary.BigEndian.AppendUint64(o.buf, from+uint64(i))
		v := len(o.buf)
		var err error
		if o.buf, err = msgs[i].AppendJSON(o.buf); err != nil {
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
	if o.buf, err = a.AppendJSON(o.buf); err != nil {
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
			o.buf = append(o.buf, '[')
			for p := range chunk.Parts {
				if p > 0 {
					o.buf = append(o.buf, ',')
				}
				var err error
				if o.buf, err = chunk.Parts[p].AppendJSON(o.buf); err != nil {
					return nil, fmt.Errorf("encode artifact chunk: %w", err)
				}
			}
			o.buf = append(o.buf, ']')
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
func deleteBody(tx *bolt.Tx, owner, id string) (int64, error) {
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
func bodySize(tx *bolt.Tx, owner, id string) int64 {
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
func input(tx *bolt.Tx, id string) json.RawMessage {
	v := tx.Bucket(bucketBody).Get(inputKey(id))
	if v == nil {
		return nil
	}
	return append(json.RawMessage(nil), v...)
}

// messageIDs returns the message ids task id holds.
func messageIDs(tx *bolt.Tx, id string) []string {
	var out []string
	prefix := bodyPrefix(id, kindMsgID)
	c := tx.Bucket(bucketBody).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		out = append(out, string(k[len(prefix):]))
	}
	return out
}
