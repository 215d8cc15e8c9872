package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"

	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
)

// What each owner keeps stored, for the quotas (tasks.Quota). One bucket,
// written in the transaction of every write that changes a task:
//
//	usage  len(owner) owner  → bytes(8): what the owner's tasks take; an
//	                           owner with nothing stored has no entry
//
// What a task takes (storedSize) is its head (key and value), its body
// (keys and values: events, history, artifacts, input, message ids), the
// idempotency keys its message ids name (keys and values), and indexBytes
// for its index entries. It is approximate (page overhead is not counted) but exact in
// its own terms: each write adds what it adds (the change of the record's
// length, the new events and key), and deleting a task subtracts what it
// held, counted as it is deleted. Outbox entries are not counted: they
// belong to webhook deliveries, which outlive the task. The owner's task
// count is the listing index's (counts).
//
// meta "usage" is present once the totals are kept; a store written
// before (of any schema) gets them at open. A marker rather than a schema
// version, so that it composes with other migrations.
var (
	bucketUsage = []byte("usage")

	keyUsage     = []byte("usage")
	usageVersion = []byte("1")
)

// indexBytes is what a task's fixed index entries take, approximately:
// owners (key), recent (key and value), active or expiry (key). It
// depends only on what never changes.
func indexBytes(owner, id string) int64 { return int64(2*len(owner) + 3*len(id) + 88) }

// eventBytes is what one event takes: key and value.
func eventBytes(id string, v []byte) int64 { return int64(len(id) + 9 + len(v)) }

// idemBytes is what the idempotency entry of key, bound to task id, takes.
func idemBytes(key *tasks.IdemKey, id string) int64 {
	return int64(len(idemKey(key.Owner, key.MessageID)) + len(id) + 33)
}

// usageOf is owner's stored bytes.
func usageOf(tx *engine.Tx, owner string) int64 {
	return int64(countOf(tx.Bucket(bucketUsage).Get(lengthPrefixed(owner, ""))))
}

// checkQuota returns the *tasks.QuotaError of a write that would take
// owner past q: a new task (newTask) past q.Tasks, or grow more bytes past
// q.Bytes. A write that does not grow is never refused.
func checkQuota(tx *engine.Tx, owner string, q tasks.Quota, newTask bool, grow int64) error {
	if q.Tasks > 0 && newTask {
		n := int64(countOf(tx.Bucket(bucketCounts).Get(lengthPrefixed(owner, ""))))
		if n+1 > q.Tasks {
			return &tasks.QuotaError{Which: tasks.QuotaTasks, Used: n, Limit: q.Tasks}
		}
	}
	if q.Bytes > 0 && grow > 0 {
		if used := usageOf(tx, owner); used+grow > q.Bytes {
			return &tasks.QuotaError{Which: tasks.QuotaBytes, Used: used, Limit: q.Bytes}
		}
	}
	return nil
}

// addUsage adds delta to owner's stored bytes.
func addUsage(tx *engine.Tx, owner string, delta int64) error {
	if delta == 0 {
		return nil
	}
	ub := tx.Bucket(bucketUsage)
	k := lengthPrefixed(owner, "")
	n := int64(countOf(ub.Get(k))) + delta
	if n <= 0 {
		return ub.Delete(k)
	}
	return ub.Put(k, binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(n)))
}

// storedSize is what task id of owner, whose head is v, takes in the
// store.
func storedSize(tx *engine.Tx, id string, v []byte, owner string) int64 {
	return int64(len(id)+len(v)) + indexBytes(owner, id) + bodySize(tx, owner, id)
}

// storedSizeWhole is storedSize of a task kept whole, as stores before
// schema 5 keep them: its record v, its events in their own bucket.
func storedSizeWhole(tx *engine.Tx, id string, v []byte, r *tasks.Record) int64 {
	n := int64(len(id)+len(v)) + indexBytes(r.Owner, id)
	prefix := append([]byte(id), 0)
	c := tx.Bucket(bucketEventsV3).Cursor()
	for k, ev := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, ev = c.Next() {
		n += eventBytes(id, ev)
	}
	ib := tx.Bucket(bucketIdem)
	for _, m := range r.MessageIDs {
		k := idemKey(r.Owner, m)
		if iv := ib.Get(k); iv != nil {
			n += int64(len(k) + len(iv))
		}
	}
	return n
}

// rebuildUsage computes usage from the tasks, in the transaction that
// opens a store without it, and marks it kept.
func rebuildUsage(tx *engine.Tx) error {
	if err := tx.DeleteBucket(bucketUsage); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketUsage); err != nil {
		return err
	}
	err := tx.Bucket(bucketTasks).ForEach(func(k, v []byte) error {
		h, err := splitHead(v)
		if err != nil {
			return fmt.Errorf("task %s: %w", k, err)
		}
		return addUsage(tx, string(h.owner), storedSize(tx, string(k), v, string(h.owner)))
	})
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyUsage, usageVersion)
}

// Usage returns what owner keeps stored: its tasks, and their bytes as
// the quota counts them.
func (s *Store) Usage(ctx context.Context, owner string) (tasks.Usage, error) {
	if err := ctx.Err(); err != nil {
		return tasks.Usage{}, err
	}
	var u tasks.Usage
	err := s.view(func(tx *engine.Tx) error {
		u.Tasks = int64(countOf(tx.Bucket(bucketCounts).Get(lengthPrefixed(owner, ""))))
		u.Bytes = usageOf(tx, owner)
		return nil
	})
	return u, err
}

// The check of usage (see invariants in tool_check.go), for a store that keeps
// it:
//
//	usage  entry: key and value parse, and the value is not zero
//	       task:  each owner's entry is what its tasks take (storedSize),
//	              and an owner whose tasks take anything has one. Compared
//	              only when no other problem was found: a damaged record,
//	              event or key would be reported twice.

// usageCheck is what the usage check gathers.
type usageCheck struct {
	entries map[string]int64 // owner → its usage entry
	done    bool             // the totals were compared
}

func (c *checker) usage() *usageCheck {
	if c.usg == nil {
		c.usg = &usageCheck{entries: map[string]int64{}}
	}
	return c.usg
}

// usageBucket reports whether b is the bucket of this file.
func usageBucket(b []byte) bool { return bytes.Equal(b, bucketUsage) }

// usageKept reports whether the store keeps usage.
func usageKept(tx *engine.Tx) bool {
	m := tx.Bucket(bucketMeta)
	return m != nil && m.Get(keyUsage) != nil
}

func usageEntry(c *checker, k, v []byte) {
	owner, rest, ok := parseLengthPrefixed(k)
	if !ok || rest != "" {
		c.problem("usage", strconv.Quote(string(k)), "key does not parse")
		return
	}
	key := strconv.Quote(owner)
	switch {
	case len(v) != 8:
		c.problem("usage", key, "value does not parse")
	case binary.BigEndian.Uint64(v) == 0:
		c.problem("usage", key, "is zero (the entry should be gone)")
	case len(c.ids) == 0: // usageTask, which compares, will not run
		c.problem("usage", key, "is %d bytes, but the store holds no task", binary.BigEndian.Uint64(v))
	default:
		c.usage().entries[owner] = int64(binary.BigEndian.Uint64(v))
	}
}

// usageTask compares every owner's entry with its tasks, once: it runs
// after every other check.
func usageTask(c *checker, _ string, _ *taskInfo) {
	u := c.usage()
	if u.done {
		return
	}
	u.done = true
	if len(c.report.Problems) > 0 || c.report.Omitted > 0 {
		return
	}
	want := map[string]int64{}
	tb := c.tx.Bucket(bucketTasks)
	for _, id := range c.ids {
		t := c.tasks[id]
		if t.split {
			want[t.owner] += storedSize(wrap(c.tx), id, tb.Get([]byte(id)), t.owner)
		} else {
			want[t.owner] += storedSizeWhole(wrap(c.tx), id, tb.Get([]byte(id)), &tasks.Record{Owner: t.owner, MessageIDs: t.messageIDs})
		}
	}
	owners := make([]string, 0, len(want)+len(u.entries))
	for o := range want {
		owners = append(owners, o)
	}
	for o := range u.entries {
		if _, ok := want[o]; !ok {
			owners = append(owners, o)
		}
	}
	slices.Sort(owners)
	for _, o := range owners {
		got, ok := u.entries[o]
		switch {
		case !ok:
			c.problem("usage", strconv.Quote(o), "missing: the owner's tasks take %d bytes", want[o])
		case got != want[o]:
			c.problem("usage", strconv.Quote(o), "is %d bytes, but the owner's tasks take %d", got, want[o])
		}
	}
}
