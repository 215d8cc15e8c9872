package pgstore

import (
	"encoding/json"
	"fmt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/record"
)

// What a task takes in the store, for the quotas: its row (id, owner,
// head, input, and taskOverhead for its index entries), the rows of its
// events, history and artifacts (task id, 8 bytes of key, body), and its
// idempotency keys (owner, message id, task id, hash). It is approximate,
// but exact in its own terms: a write adds what it adds, and deleting a
// task subtracts what it held (tasks.stored). Check recomputes it.
const taskOverhead = 96

func rowBytes(id string, body []byte) int64 { return int64(len(id) + 8 + len(body)) }

func idemBytes(key *tasks.IdemKey, id string) int64 {
	return int64(len(key.Owner) + len(key.MessageID) + len(id) + 32)
}

// change is a write of one task, encoded outside the transaction: the
// new head and columns of its row, and the rows it adds or replaces.
type change struct {
	rec  *tasks.Record
	ids  record.IDs // what its messages leave out: none (record v1) while a replica reads only v1
	head []byte
	idx  index

	evSeq        []int64
	evBody       [][]byte
	msgN         []int32
	msgBody      [][]byte
	artI, artJ   []int32 // artifact rows written (replaced, if there)
	artBody      [][]byte
	drop         []int32  // artifacts replaced: their chunks go
	fresh        bool     // a new task's: no row of it is there to replace
	inline       bool     // a new task's events, history and artifacts go in its row
	input        []byte   // nil: unchanged
	configs      [][]byte // the webhooks the change queues a delivery for
	grow         int64    // what the rows written add, less what they replace
	prevInputLen int64
	prevHeadLen  int64
}

// encodeEvents assigns the events' sequence numbers after c.rec's and
// encodes them; c.rec.Seq ends at the last one.
func (c *change) encodeEvents(events []tasks.Event) error {
	id := c.rec.Task.ID
	for i := range events {
		c.rec.Seq++
		events[i].Seq = c.rec.Seq
		b, err := record.AppendEvent(nil, &events[i], c.ids)
		if err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
		c.evSeq, c.evBody = append(c.evSeq, int64(c.rec.Seq)), append(c.evBody, b)
		c.grow += rowBytes(id, b)
	}
	return nil
}

// encodeHistory encodes msgs as history messages from, onwards.
func (c *change) encodeHistory(from int, msgs []a2a.Message) error {
	for i := range msgs {
		b, err := record.AppendMessage(nil, &msgs[i], c.ids)
		if err != nil {
			return fmt.Errorf("encode message: %w", err)
		}
		c.msgN, c.msgBody = append(c.msgN, int32(from+i)), append(c.msgBody, b)
		c.grow += rowBytes(c.rec.Task.ID, b)
	}
	return nil
}

// putArtifactRow writes row (i, j) of the artifacts.
func (c *change) putArtifactRow(i, j int32, b []byte) {
	c.artI, c.artJ, c.artBody = append(c.artI, i), append(c.artJ, j), append(c.artBody, b)
	n := rowBytes(c.rec.Task.ID, b)
	c.idx.stored[i] += n
	c.grow += n
}

// newArtifact writes a as artifact i, which has no other row.
func (c *change) newArtifact(i int32, a *a2a.Artifact) error {
	b, err := record.AppendArtifact(nil, a)
	if err != nil {
		return fmt.Errorf("encode artifact: %w", err)
	}
	c.putArtifactRow(i, 0, b)
	return nil
}

// applyArtifact writes an artifact event as the rule of
// tasks.ApplyArtifact says, on rows: a chunk appended to an artifact is a
// row of its own; a replaced artifact drops its chunks.
func (c *change) applyArtifact(chunk *a2a.Artifact, appendParts bool) error {
	x := &c.idx
	for i := range x.ids {
		if string(x.ids[i]) != chunk.ArtifactID {
			continue
		}
		if appendParts {
			b, err := tasks.AppendCanonicalParts(nil, chunk.Parts)
			if err != nil {
				return fmt.Errorf("encode artifact chunk: %w", err)
			}
			c.putArtifactRow(int32(i), x.chunks[i], b)
			x.chunks[i]++
			x.bytes[i] += tasks.PartBytes(chunk.Parts)
			return nil
		}
		c.unwrite(int32(i))
		c.drop = append(c.drop, int32(i))
		c.grow -= x.stored[i]
		x.chunks[i], x.bytes[i], x.stored[i] = 1, tasks.PartBytes(chunk.Parts), 0
		return c.newArtifact(int32(i), chunk)
	}
	x.ids = append(x.ids, []byte(chunk.ArtifactID))
	x.chunks = append(x.chunks, 1)
	x.bytes = append(x.bytes, tasks.PartBytes(chunk.Parts))
	x.stored = append(x.stored, 0)
	return c.newArtifact(int32(len(x.ids)-1), chunk)
}

// unwrite forgets the rows of artifact i this change was to write: a
// later event replaces them.
func (c *change) unwrite(i int32) {
	k := 0
	for n := range c.artI {
		if c.artI[n] != i {
			c.artI[k], c.artJ[k], c.artBody[k] = c.artI[n], c.artJ[n], c.artBody[n]
			k++
		}
	}
	c.artI, c.artJ, c.artBody = c.artI[:k], c.artJ[:k], c.artBody[:k]
}

// setInput encodes in as the task's input, replacing the old one.
func (c *change) setInput(in json.RawMessage) error {
	if len(in) == 0 {
		return nil
	}
	if !json.Valid(in) {
		return fmt.Errorf("encode task: input is not valid JSON")
	}
	c.input = in
	c.grow += int64(len(in)) - c.prevInputLen
	return nil
}

// encodeHead encodes c.rec's head and counts its growth.
func (c *change) encodeHead() error {
	b, err := record.AppendHead(make([]byte, 0, 512), c.rec, c.ids)
	if err != nil {
		return fmt.Errorf("encode task: %w", err)
	}
	c.head = b
	c.grow += int64(len(b)) - c.prevHeadLen
	return nil
}

// maxOutboxConfigID is the longest webhook id the outbox queues a
// delivery for: its (task_id, config_id) index takes rows of at most
// 2,704 bytes. The decoders cap ids at a2a.MaxIDBytes; a webhook with a
// longer id (set before the cap) gets no deliveries, so that the
// transitions of its task, which queue them, still write: a webhook must
// never strand its task in a state no transition can leave.
const maxOutboxConfigID = 2048

// deliveries names the webhooks a transition of c.rec from prev queues a
// delivery for: each of them (but one whose id is past
// maxOutboxConfigID), if it reaches a terminal or interrupted state.
func (c *change) deliveries(prev a2a.TaskState) {
	if len(c.rec.PushConfigs) == 0 || !tasks.Notifies(prev, c.rec.State()) {
		return
	}
	seen := map[string]bool{}
	for _, cfg := range c.rec.PushConfigs {
		if len(cfg.ID) > maxOutboxConfigID {
			continue
		}
		if !seen[cfg.ID] {
			seen[cfg.ID] = true
			c.configs = append(c.configs, []byte(cfg.ID))
		}
	}
}

// encodeNew encodes rec, whole, as a new task with its first events, its
// messages without ids (see change.ids).
func encodeNew(rec *tasks.Record, events []tasks.Event, ids record.IDs) (*change, error) {
	c := &change{rec: rec, ids: ids, fresh: true}
	if err := c.encodeEvents(events); err != nil {
		return nil, err
	}
	if err := c.encodeHistory(0, rec.Task.History); err != nil {
		return nil, err
	}
	for i := range rec.Task.Artifacts {
		a := &rec.Task.Artifacts[i]
		c.idx.ids = append(c.idx.ids, []byte(a.ArtifactID))
		c.idx.chunks = append(c.idx.chunks, 1)
		c.idx.bytes = append(c.idx.bytes, tasks.PartBytes(a.Parts))
		c.idx.stored = append(c.idx.stored, 0)
		if err := c.newArtifact(int32(i), a); err != nil {
			return nil, err
		}
	}
	if err := c.setInput(rec.Input); err != nil {
		return nil, err
	}
	rec.HistoryLen = len(rec.Task.History)
	c.grow += int64(len(rec.Task.ID)+len(rec.Owner)) + taskOverhead
	if err := c.encodeHead(); err != nil {
		return nil, err
	}
	c.deliveries("")
	c.inline = c.fitsInline()
	return c, nil
}

// maxInline is the most a new task's first events, messages and
// artifacts take to be held in its row (schema 3): past it they are rows
// of their tables, as a later write's are, so that a task's row stays
// small enough to be stored whole (PostgreSQL compresses or moves out a
// row past about 2 KB) and to be written again by each later change of
// the task.
const maxInline = 1024

// fitsInline reports whether c, a new task's, is held in its row: its
// events are 1, 2, ... and what they, its messages and its artifacts
// take is at most maxInline.
func (c *change) fitsInline() bool {
	n := 0
	for i, b := range c.evBody {
		if c.evSeq[i] != int64(i+1) {
			return false
		}
		n += len(b)
	}
	for _, b := range c.msgBody {
		n += len(b)
	}
	for _, b := range c.artBody {
		n += len(b)
	}
	return n <= maxInline
}

// encodeChange encodes what an UpdateFunc did to rec, the head of the task
// read as rw, from prev: the messages it appended, the artifact events
// among events, the input it set. Nothing already stored is written again
// but the row. Its messages leave ids out (see change.ids).
func encodeChange(rw *row, rec *tasks.Record, prev a2a.TaskState, events []tasks.Event, ids record.IDs) (*change, error) {
	c := &change{rec: rec, ids: ids, idx: rw.idx.clone(), prevInputLen: rw.inputLen, prevHeadLen: int64(len(rw.head))}
	if err := c.encodeEvents(events); err != nil {
		return nil, err
	}
	if err := c.encodeHistory(rec.HistoryLen, rec.Task.History); err != nil {
		return nil, err
	}
	for i := range events {
		if a := events[i].Artifact; a != nil {
			if err := c.applyArtifact(a, events[i].Append); err != nil {
				return nil, err
			}
		}
	}
	if err := c.setInput(rec.Input); err != nil {
		return nil, err
	}
	rec.HistoryLen += len(rec.Task.History)
	if err := c.encodeHead(); err != nil {
		return nil, err
	}
	c.deliveries(prev)
	return c, nil
}
