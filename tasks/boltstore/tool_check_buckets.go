package boltstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/record"
)

// What each bucket's entries must be, and what each task must have in
// them: the invariants of tool_check.go's table, one pair of functions a bucket.

func activeEntry(c *checker, k, _ []byte) {
	id := string(k)
	key := strconv.Quote(id)
	if t := c.lookup("active", key, id); t != nil && t.state.Terminal() {
		c.problem("active", key, "task is %s, which is terminal", t.state)
	}
}

func activeTask(c *checker, id string, t *taskInfo) {
	if !t.state.Terminal() && !has(c.tx.Bucket(bucketActive), []byte(id)) {
		c.problem("active", strconv.Quote(id), "missing: task is %s", t.state)
	}
}

func ownersEntry(c *checker, k, _ []byte) {
	owner, id, ok := parseLengthPrefixed(k)
	if !ok || id == "" {
		c.problem("owners", strconv.Quote(string(k)), "key does not parse")
		return
	}
	key := strconv.Quote(owner) + " " + strconv.Quote(id)
	if t := c.lookup("owners", key, id); t != nil && t.owner != owner {
		c.problem("owners", key, "task belongs to %q", t.owner)
	}
}

func ownersTask(c *checker, id string, t *taskInfo) {
	if !has(c.tx.Bucket(bucketOwners), ownerKey(t.owner, id)) {
		c.problem("owners", strconv.Quote(t.owner)+" "+strconv.Quote(id), "missing")
	}
}

// idemValue splits an idem value into the task id and the message hash.
func idemValue(v []byte) (id string, ok bool) {
	if len(v) < 33 || v[len(v)-33] != 0 {
		return "", false
	}
	return string(v[:len(v)-33]), true
}

func idemEntry(c *checker, k, v []byte) {
	owner, msgID, ok := parseLengthPrefixed(k)
	if !ok || msgID == "" {
		c.problem("idem", strconv.Quote(string(k)), "key does not parse")
		return
	}
	key := strconv.Quote(owner) + " " + strconv.Quote(msgID)
	id, ok := idemValue(v)
	if !ok {
		c.problem("idem", key, "value does not parse")
		return
	}
	t, found := c.tasks[id]
	switch {
	case !found:
		c.problem("idem", key, "task %q does not exist", id)
	case t.bad:
	case t.owner != owner:
		c.problem("idem", key, "task %q belongs to %q", id, t.owner)
	case !slices.Contains(t.messageIDs, msgID):
		c.problem("idem", key, "task %q does not hold this message id", id)
	}
}

func idemTask(c *checker, id string, t *taskInfo) {
	b := c.tx.Bucket(bucketIdem)
	for _, m := range t.messageIDs {
		key := strconv.Quote(t.owner) + " " + strconv.Quote(m)
		v := b.Get(idemKey(t.owner, m))
		if v == nil {
			c.problem("idem", key, "missing: task %q holds this message id", id)
			continue
		}
		if got, ok := idemValue(v); ok && got != id {
			c.problem("idem", key, "points at task %q, but task %q holds this message id", got, id)
		}
	}
}

func expiryKeyString(k []byte) string {
	ns := int64(binary.BigEndian.Uint64(k[:8]))
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) + " " + strconv.Quote(string(k[8:]))
}

func expiryEntry(c *checker, k, _ []byte) {
	if len(k) <= 8 {
		c.problem("expiry", strconv.Quote(string(k)), "key does not parse")
		return
	}
	id := string(k[8:])
	key := expiryKeyString(k)
	t := c.lookup("expiry", key, id)
	switch {
	case t == nil:
	case !t.state.Terminal():
		c.problem("expiry", key, "task is %s, which is not terminal", t.state)
	case !bytes.Equal(k, expiryKey(t.updatedAt, id)):
		c.problem("expiry", key, "task was last updated at %s", t.updatedAt.UTC().Format(time.RFC3339Nano))
	}
}

func expiryTask(c *checker, id string, t *taskInfo) {
	if !t.state.Terminal() {
		return
	}
	k := expiryKey(t.updatedAt, id)
	if !has(c.tx.Bucket(bucketExpiry), k) {
		c.problem("expiry", expiryKeyString(k), "missing: task is %s", t.state)
	}
}

func eventsEntry(c *checker, k, v []byte) {
	if len(k) < 10 || k[len(k)-9] != 0 {
		c.problem("events", strconv.Quote(string(k)), "key does not parse")
		return
	}
	countEvent(c, "events", string(k[:len(k)-9]), binary.BigEndian.Uint64(k[len(k)-8:]), v)
}

// countEvent checks the event seq of task id, whose value is v, and counts
// it.
func countEvent(c *checker, bucket, id string, seq uint64, v []byte) {
	key := strconv.Quote(id) + " " + strconv.FormatUint(seq, 10)
	if bucket == "body" {
		key = strconv.Quote(id) + " event " + strconv.FormatUint(seq, 10)
	}
	var e record.Event
	if err := json.Unmarshal(v, &e); err != nil {
		c.problem(bucket, key, "does not decode: %s", jsonProblem(err))
	} else if e.Seq != seq {
		c.problem(bucket, key, "event holds sequence %d", e.Seq)
	}
	t := c.lookup(bucket, key, id)
	switch {
	case t == nil:
	case seq == 0 || seq > t.seq:
		c.problem(bucket, key, "outside the task's sequences 1..%d", t.seq)
	default:
		t.events++
	}
}

func eventsTask(c *checker, id string, t *taskInfo) {
	// Keys are unique and eventsEntry counted only those in 1..seq, so
	// the count tells how many are missing.
	if t.events < t.seq {
		bucket := "events"
		if t.split {
			bucket = "body"
		}
		c.problem(bucket, strconv.Quote(id), "%d of the task's %d events missing", t.seq-t.events, t.seq)
	}
}

func deliveryEntry(c *checker, k, v []byte) {
	if len(k) != 8 {
		c.problem("outbox", strconv.Quote(string(k)), "key does not parse")
		return
	}
	id := binary.BigEndian.Uint64(k)
	key := strconv.FormatUint(id, 10)
	var e outboxEntry
	if err := json.Unmarshal(v, &e); err != nil {
		c.problem("outbox", key, "does not decode: %s", jsonProblem(err))
		return
	}
	if e.TaskID == "" {
		c.problem("outbox", key, "names no task")
		return
	}
	if c.report.Schema < "4" {
		return
	}
	if e.ConfigID == "" {
		c.problem("outbox", key, "names no webhook")
	}
	c.lookup("outbox", key, e.TaskID)
	pv := c.tx.Bucket(bucketPending).Get(pendingKey(e.TaskID, e.ConfigID))
	if len(pv) != 16 || binary.BigEndian.Uint64(pv) != id {
		c.problem("outbox", key, "not the pending delivery of task %q webhook %q", e.TaskID, e.ConfigID)
	}
	if !has(c.tx.Bucket(bucketDue), dueKey(e.NextAt, id)) {
		c.problem("outbox", key, "missing from due at %s", e.NextAt.UTC().Format(time.RFC3339Nano))
	}
}

func deadEntry(c *checker, k, v []byte) {
	if len(k) != 8 {
		c.problem("dead", strconv.Quote(string(k)), "key does not parse")
		return
	}
	key := strconv.FormatUint(binary.BigEndian.Uint64(k), 10)
	var e deadLetter
	if err := json.Unmarshal(v, &e); err != nil {
		c.problem("dead", key, "does not decode: %s", jsonProblem(err))
		return
	}
	if e.TaskID == "" {
		c.problem("dead", key, "names no task")
	}
}

func pendingEntry(c *checker, k, v []byte) {
	taskID, configID, ok := parseLengthPrefixed(k)
	if !ok || taskID == "" {
		c.problem("pending", strconv.Quote(string(k)), "key does not parse")
		return
	}
	key := strconv.Quote(taskID) + " " + strconv.Quote(configID)
	if len(v) != 16 {
		c.problem("pending", key, "value does not parse")
		return
	}
	id := binary.BigEndian.Uint64(v)
	var e outboxEntry
	ov := c.tx.Bucket(bucketOutbox).Get(u64Key(id))
	switch {
	case ov == nil:
		c.problem("pending", key, "delivery %d does not exist", id)
	case json.Unmarshal(ov, &e) != nil: // outbox reports it
	case e.TaskID != taskID || e.ConfigID != configID:
		c.problem("pending", key, "delivery %d is of task %q webhook %q", id, e.TaskID, e.ConfigID)
	}
}

func dueEntry(c *checker, k, _ []byte) {
	if len(k) != 16 {
		c.problem("due", strconv.Quote(string(k)), "key does not parse")
		return
	}
	id := binary.BigEndian.Uint64(k[8:])
	key := time.Unix(0, int64(binary.BigEndian.Uint64(k))).UTC().Format(time.RFC3339Nano) + " " + strconv.FormatUint(id, 10)
	var e outboxEntry
	ov := c.tx.Bucket(bucketOutbox).Get(u64Key(id))
	switch {
	case ov == nil:
		c.problem("due", key, "delivery %d does not exist", id)
	case json.Unmarshal(ov, &e) != nil: // outbox reports it
	case !bytes.Equal(k, dueKey(e.NextAt, id)):
		c.problem("due", key, "delivery %d is due at %s", id, e.NextAt.UTC().Format(time.RFC3339Nano))
	}
}

func recentKeyString(owner string, rest []byte) string {
	return strconv.Quote(owner) + " " + time.Unix(0, int64(binary.BigEndian.Uint64(rest))).UTC().Format(time.RFC3339Nano) +
		" " + strconv.Quote(string(rest[8:]))
}

func recentEntry(c *checker, k, v []byte) {
	owner, rest, ok := parseLengthPrefixed(k)
	if !ok || len(rest) <= 8 {
		c.problem("recent", strconv.Quote(string(k)), "key does not parse")
		return
	}
	c.recentOwners[owner]++
	id := rest[8:]
	key := recentKeyString(owner, []byte(rest))
	// The same id under another owner is a different key: compare owners
	// before keys.
	t := c.lookup("recent", key, id)
	switch {
	case t == nil:
	case t.owner != owner:
		c.problem("recent", key, "task belongs to %q", t.owner)
	case !bytes.Equal(k, t.listKey):
		at := binary.BigEndian.Uint64(t.listKey[len(k)-len(rest):])
		c.problem("recent", key, "task's list time is %s", time.Unix(0, int64(at)).UTC().Format(time.RFC3339Nano))
	case !bytes.Equal(v, t.listValue):
		t.listed = true
		c.problem("recent", key, "value does not match the task's status time, state and context")
	default:
		t.listed = true
	}
}

func recentTask(c *checker, id string, t *taskInfo) {
	if !t.listed {
		_, rest, _ := parseLengthPrefixed(t.listKey)
		c.problem("recent", recentKeyString(t.owner, []byte(rest)), "missing")
	}
}

func countsEntry(c *checker, k, v []byte) {
	owner, rest, ok := parseLengthPrefixed(k)
	if !ok || rest != "" {
		c.problem("counts", strconv.Quote(string(k)), "key does not parse")
		return
	}
	key := strconv.Quote(owner)
	c.countsSeen[owner] = true
	if len(v) != 8 {
		c.problem("counts", key, "value does not parse")
		return
	}
	n, want := binary.BigEndian.Uint64(v), c.recentOwners[owner]
	switch {
	case n == 0:
		c.problem("counts", key, "is zero (the entry should be gone)")
	case n != want:
		c.problem("counts", key, "is %d, but the owner has %s in recent", n, entries(want))
	}
}

func countsTask(c *checker, _ string, t *taskInfo) {
	if n := c.recentOwners[t.owner]; n > 0 && !c.countsSeen[t.owner] {
		c.countsSeen[t.owner] = true // reported once
		c.problem("counts", strconv.Quote(t.owner), "missing: the owner has %s in recent", entries(n))
	}
}

func entries(n uint64) string {
	if n == 1 {
		return "1 entry"
	}
	return strconv.FormatUint(n, 10) + " entries"
}

func bodyEntry(c *checker, k, v []byte) {
	id, rest, ok := parseLengthPrefixed(k)
	if !ok || rest == "" {
		c.problem("body", strconv.Quote(string(k)), "key does not parse")
		return
	}
	kind, rest := rest[0], rest[1:]
	switch {
	case kind == kindEvent && len(rest) == 8:
		countEvent(c, "body", id, binary.BigEndian.Uint64([]byte(rest)), v)
	case kind == kindHistory && len(rest) == 8:
		n := binary.BigEndian.Uint64([]byte(rest))
		key := strconv.Quote(id) + " message " + strconv.FormatUint(n, 10)
		var m record.Message
		if err := json.Unmarshal(v, &m); err != nil {
			c.problem("body", key, "does not decode: %s", jsonProblem(err))
		}
		switch t := c.lookup("body", key, id); {
		case t == nil:
		case !t.split:
			c.problem("body", key, "task is whole, in the layout before schema 5")
		case n >= t.historyLen:
			c.problem("body", key, "past the task's history of %d messages", t.historyLen)
		default:
			t.messages++
		}
	case kind == kindArtifact && len(rest) == 8:
		i, j := binary.BigEndian.Uint32([]byte(rest)), binary.BigEndian.Uint32([]byte(rest[4:]))
		key := strconv.Quote(id) + " artifact " + strconv.FormatUint(uint64(i), 10) + " chunk " + strconv.FormatUint(uint64(j), 10)
		var (
			a     record.Artifact
			parts []record.Part
			err   error
		)
		if j == 0 {
			err = json.Unmarshal(v, &a)
			parts = a.Parts
		} else {
			err = json.Unmarshal(v, &parts)
		}
		if err != nil {
			c.problem("body", key, "does not decode: %s", jsonProblem(err))
		}
		switch t := c.lookup("body", key, id); {
		case t == nil:
		case !t.split:
			c.problem("body", key, "task is whole, in the layout before schema 5")
		case int(i) >= len(t.arts):
			c.problem("body", key, "past the task's %s", count(len(t.arts), "artifact"))
		case j >= t.arts[i].Chunks:
			c.problem("body", key, "past the artifact's %s", count(int(t.arts[i].Chunks), "key"))
		default:
			t.chunks++
			t.artBad = t.artBad || err != nil
			if t.artBytes == nil {
				t.artBytes = make([]int64, len(t.arts))
			}
			t.artBytes[i] += tasks.PartBytes(record.Parts(parts))
			if j == 0 && err == nil && a.ArtifactID != t.arts[i].ID {
				c.problem("body", key, "holds artifact %q, but the task's index names %q", a.ArtifactID, t.arts[i].ID)
			}
		}
	case kind == kindInput && rest == "":
		key := strconv.Quote(id) + " input"
		if !json.Valid(v) {
			c.problem("body", key, "is not JSON")
		}
		if t := c.lookup("body", key, id); t != nil && !t.split {
			c.problem("body", key, "task is whole, in the layout before schema 5")
		}
	case kind == kindMsgID && rest != "":
		key := strconv.Quote(id) + " message id " + strconv.Quote(rest)
		if t := c.lookup("body", key, id); t != nil && !t.split {
			c.problem("body", key, "task is whole, in the layout before schema 5")
		}
	default:
		c.problem("body", strconv.Quote(string(k)), "key does not parse")
	}
}

func bodyTask(c *checker, id string, t *taskInfo) {
	if !t.split {
		return
	}
	if t.messages < t.historyLen {
		c.problem("body", strconv.Quote(id), "%d of the task's %s missing", t.historyLen-t.messages, count(int(t.historyLen), "history message"))
	}
	var want uint64
	for _, a := range t.arts {
		want += uint64(a.Chunks)
	}
	if t.chunks < want {
		c.problem("body", strconv.Quote(id), "%d of the task's %s missing", want-t.chunks, count(int(want), "artifact key"))
		return
	}
	for i, a := range t.arts {
		if got := t.artBytes[i]; got != a.Bytes && !t.artBad {
			c.problem("body", strconv.Quote(id)+" artifact "+strconv.Itoa(i), "holds %d bytes, but the task's index says %d", got, a.Bytes)
		}
	}
}

// count says n things, "1 thing" or "n things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
