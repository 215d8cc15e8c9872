package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
	"github.com/a2ad/a2ad/tasks/record"
)

// knownSchemas are the schema versions Check understands.
var knownSchemas = []string{"2", "3", "4", "5", "6"}

// MaxProblems caps the problems a Report lists; the rest are counted.
const MaxProblems = 1000

// Report is what Check found.
type Report struct {
	// Schema is the file's schema version ("" when it has none).
	Schema string
	// Buckets are the file's top-level buckets, by name, with their keys.
	Buckets []BucketKeys
	// Tasks counts the task records, those that do not decode included.
	Tasks int
	// Problems are at most MaxProblems problems, in the order found;
	// Omitted counts those left out.
	Problems []Problem
	Omitted  int
}

// BucketKeys is a bucket and the number of its keys.
type BucketKeys struct {
	Name string
	Keys int
}

// Clean reports whether Check found no problem.
func (r *Report) Clean() bool { return len(r.Problems) == 0 && r.Omitted == 0 }

// Problem is one inconsistency: where, and what. Keys show task ids,
// owners, message ids, times and sequence numbers, never values.
type Problem struct {
	Bucket string // "file" for bbolt's own page checks
	Key    string // strings quoted, numbers and times bare; "" for the bucket itself
	What   string
}

func (p Problem) String() string {
	if p.Key == "" {
		return p.Bucket + ": " + p.What
	}
	return p.Bucket + " " + p.Key + ": " + p.What
}

// Check opens the store file at path read-only and checks it in one read
// transaction: bbolt's own page structure, the schema version, that every
// task record decodes, and the invariants of every index (see
// invariants). A file a server holds is ErrLocked. The error is for a file
// that cannot be checked at all; what is wrong inside is in the Report.
// A file cut short, or with pages bbolt cannot read through (it panics or
// faults on them), is a *DamagedError. lockTimeout <= 0 means
// DefaultToolLockTimeout.
func Check(path string, lockTimeout time.Duration) (_ *Report, err error) {
	db, err := openReadOnly(path, lockTimeout)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	// bbolt's page checks run on a goroutine of bbolt's that turns panics
	// into problems but cannot survive a fault: scanPages checks first
	// what they read without checking.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { engine.Recovered(recover(), path, &err) }()
	var r *Report
	err = db.View(func(tx *bolt.Tx) error {
		if err := scanPages(tx, path); err != nil {
			return err
		}
		r = check(tx, true)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Check checks the open store's indexes in one read transaction, as the
// package function Check does, but without bbolt's page checks (which are
// not safe beside concurrent writes in a read transaction).
func (s *Store) Check(ctx context.Context) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The file holds every change once flushed; later ones are checked
	// by the next call.
	if err := s.Flush(); err != nil {
		return nil, err
	}
	var r *Report
	err := engine.ViewGuarded(s.db.Bolt(), func(tx *bolt.Tx) error {
		r = check(tx, false)
		return nil
	})
	return r, err
}

// invariant is what one bucket promises about the tasks. entry checks one
// entry of the bucket: that it parses and points at a task that should
// have it (c.lookup finds the task). task checks that one decoded task has
// the entries it should in the bucket; it runs after every entry of every
// bucket was seen, so entry may count what task compares. Either may be
// nil; a row without a bucket has a task check only. Checking a new index
// is one more row.
type invariant struct {
	bucket []byte
	entry  func(c *checker, k, v []byte)
	task   func(c *checker, id string, t *taskInfo)
	since  string // the schema version that brought the bucket; "" for all
	until  string // the schema version that took it away; "" for none
}

// applies reports whether the row applies to a file of schema: one whose
// migration has not finished (migrating) has the buckets of both.
func (inv invariant) applies(schema string, migrating bool) bool {
	return inv.since <= schema && (inv.until == "" || schema < inv.until || migrating)
}

// invariants, in the order they are checked and reported.
//
//	active  entry: the task exists and is not terminal
//	        task:  a non-terminal task has its entry
//	owners  entry: the key parses; the task exists and has that owner
//	        task:  every task has its entry
//	idem    entry: key and value parse; the task exists, has the key's
//	               owner and holds the message id
//	        task:  every message id a task holds has its entry, pointing
//	               at the task
//	expiry  entry: the key parses; the task exists, is terminal, and the
//	               key's time is its last update
//	        task:  a terminal task has its entry
//	events  (schemas 2 to 4) entry: the key parses, the event decodes
//	               and holds the key's sequence; the task exists and the
//	               sequence is not past its last
//	outbox  entry: the key is 8 bytes and the delivery decodes and names a
//	               task; from schema 4, also a webhook, the task exists,
//	               and the delivery has its entries in pending and due.
//	               (Until schema 4 a delivery could outlive its task.)
//	dead    entry: the key is 8 bytes and the dead letter decodes and
//	               names a task, which may be gone.
//	recent  (schema 3) entry: the key parses; the task exists and the key
//	               and value are the task's (listKey, listValue: owner,
//	               list time, id; status time, state, context)
//	        task:  every task has its entry
//	counts  (schema 3) entry: key and value parse; the count is that of
//	               the owner's entries in recent, and not zero
//	        task:  an owner with entries in recent has its count
//	pending (schema 4) entry: key and value parse; the delivery exists and
//	               is of that task and webhook
//	due     (schema 4) entry: the key parses; the delivery exists and is
//	               due at the key's time
//	body    (schema 5) entry: the key parses; the task exists; an event
//	               is as in events; a history message is within the
//	               task's history and decodes; an artifact key is in the
//	               task's artifact index, and decodes (an artifact with
//	               the index's id, or parts); an input is JSON
//	        task:  a task has every message of its history, every key its
//	               artifact index counts, and artifacts of the sizes the
//	               index says
//	(events of either bucket) task: a task has exactly its sequences
//	               1..last
//	usage   (once meta "usage" is set) see usage.go; last, as it compares
//	               only when nothing else was found
var invariants = []invariant{
	{bucketActive, activeEntry, activeTask, "", ""},
	{bucketOwners, ownersEntry, ownersTask, "", ""},
	{bucketIdem, idemEntry, idemTask, "", ""},
	{bucketExpiry, expiryEntry, expiryTask, "", ""},
	{bucketEventsV3, eventsEntry, nil, "", "5"},
	{bucketOutbox, deliveryEntry, nil, "", ""},
	{bucketDead, deadEntry, nil, "", ""},
	{bucketRecent, recentEntry, recentTask, "3", ""},
	{bucketCounts, countsEntry, countsTask, "3", ""},
	{bucketPending, pendingEntry, nil, "4", ""},
	{bucketDue, dueEntry, nil, "4", ""},
	{bucketBody, bodyEntry, bodyTask, "5", ""},
	{nil, nil, eventsTask, "", ""},
	{bucketUsage, usageEntry, usageTask, "", ""},
}

// taskInfo is what the checks need of a task; the records themselves are
// not kept.
type taskInfo struct {
	bad        bool // the record does not decode: entries may point at it, nothing is compared
	owner      string
	contextID  string
	state      a2a.TaskState
	createdAt  time.Time
	updatedAt  time.Time
	seq        uint64
	messageIDs []string
	events     uint64 // counted by eventsEntry
	listKey    []byte // its recent entry
	listValue  []byte
	listed     bool // recentEntry found its entry
	// split: the record is a head, with its events, history, artifacts,
	// input and message ids in body (schema 5)
	split      bool
	historyLen uint64
	arts       []artRef
	messages   uint64  // history messages found in body
	chunks     uint64  // artifact keys found in body
	artBytes   []int64 // what each artifact's keys hold (tasks.PartBytes)
	artBad     bool    // an artifact key does not decode (reported)
}

type checker struct {
	tx        *bolt.Tx
	migrating bool     // a migration has not finished: the file has both layouts
	bucket    string   // the bucket whose entries are being checked
	ids       []string // in key order
	tasks     map[string]*taskInfo
	report    *Report
	// recent entries and counts by owner, for the counts checks
	recentOwners map[string]uint64
	countsSeen   map[string]bool
	usg          *usageCheck // usage.go
}

func (c *checker) problem(bucket, key, format string, args ...any) {
	if len(c.report.Problems) >= MaxProblems {
		c.report.Omitted++
		return
	}
	c.report.Problems = append(c.report.Problems, Problem{Bucket: bucket, Key: key, What: fmt.Sprintf(format, args...)})
}

// lookup returns the task id an entry points at; when there is none it
// reports "no such task", and for a record that does not decode (reported
// once, with the record) it returns nil silently.
func (c *checker) lookup(bucket, key, id string) *taskInfo {
	t, ok := c.tasks[id]
	if !ok {
		c.problem(bucket, key, "no such task")
		return nil
	}
	if t.bad {
		return nil
	}
	return t
}

// has reports whether b holds k (Get cannot tell an empty value from none).
func has(b *bolt.Bucket, k []byte) bool {
	if b == nil {
		return false
	}
	got, _ := b.Cursor().Seek(k)
	return got != nil && bytes.Equal(got, k)
}

func check(tx *bolt.Tx, pages bool) *Report {
	r := &Report{}
	c := &checker{tx: tx, tasks: map[string]*taskInfo{}, report: r, recentOwners: map[string]uint64{}, countsSeen: map[string]bool{}}
	_ = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		r.Buckets = append(r.Buckets, BucketKeys{Name: string(name), Keys: b.Stats().KeyN})
		return nil
	})
	if pages {
		for err := range tx.Check(bolt.WithKVStringer(quoteKeys{})) {
			c.problem("file", "", "%v", err)
		}
	}
	c.schema()
	c.records()
	kept := usageKept(wrap(tx))
	for _, inv := range invariants {
		if inv.bucket == nil || !inv.applies(r.Schema, c.migrating) || (!kept && usageBucket(inv.bucket)) {
			continue // an older file: Open builds the bucket; a newer one dropped it
		}
		b := tx.Bucket(inv.bucket)
		if b == nil {
			if !c.migrating {
				c.problem(string(inv.bucket), "", "bucket missing")
			}
			continue
		}
		if inv.entry != nil {
			c.bucket = string(inv.bucket)
			_ = b.ForEach(func(k, v []byte) error {
				inv.entry(c, k, v)
				return nil
			})
		}
	}
	for _, inv := range invariants {
		if inv.task == nil || !inv.applies(r.Schema, c.migrating) || (!kept && usageBucket(inv.bucket)) || (inv.bucket != nil && tx.Bucket(inv.bucket) == nil) {
			continue
		}
		for _, id := range c.ids {
			if t := c.tasks[id]; !t.bad {
				inv.task(c, id, t)
			}
		}
	}
	r.Tasks = len(c.ids)
	return r
}

// quoteKeys shows keys in bbolt's page problems quoted, and never values.
type quoteKeys struct{}

func (quoteKeys) KeyToString(k []byte) string   { return strconv.Quote(string(k)) }
func (quoteKeys) ValueToString(v []byte) string { return fmt.Sprintf("(%d bytes)", len(v)) }

func (c *checker) schema() {
	meta := c.tx.Bucket(bucketMeta)
	if meta == nil {
		c.problem("meta", "", "bucket missing")
		return
	}
	v := meta.Get(keySchema)
	c.report.Schema = string(v)
	switch {
	case v == nil:
		c.problem("meta", strconv.Quote(string(keySchema)), "missing")
	case !slices.Contains(knownSchemas, string(v)):
		c.problem("meta", strconv.Quote(string(keySchema)), "version %q is not known (want one of %q)", v, knownSchemas)
	}
}

// records decodes every task record into c.tasks: heads (schema 5), and
// whole records in the layout of schemas 2 to 4, which a schema 5 file
// holds only while a migration has not finished.
func (c *checker) records() {
	b := c.tx.Bucket(bucketTasks)
	if b == nil {
		c.problem("tasks", "", "bucket missing")
		return
	}
	split := c.report.Schema >= "5"
	if meta := c.tx.Bucket(bucketMeta); meta != nil {
		if to := meta.Get(keyMigrating); to != nil {
			c.migrating = true
			c.problem("meta", strconv.Quote(string(keyMigrating)), "the migration to schema %q did not finish: open the store with a2ad to finish it", to)
			split = false // both layouts are expected
		}
	}
	_ = b.ForEach(func(k, v []byte) error {
		id := string(k)
		c.ids = append(c.ids, id)
		key := strconv.Quote(id)
		t := &taskInfo{bad: true}
		c.tasks[id] = t
		var (
			rec *tasks.Record
			err error
		)
		switch {
		case len(v) < 9:
			c.problem("tasks", key, "record of %d bytes is shorter than its header", len(v))
			return nil
		case v[8] == headFormat:
			h, herr := splitHead(v)
			if herr != nil {
				c.problem("tasks", key, "head does not parse")
				return nil
			}
			rec, t.arts, err = h.decode(id)
			t.split, t.historyLen = true, h.historyLen
		default:
			if split {
				c.problem("tasks", key, "record is whole, in the layout before schema 5, not of schema %s", c.report.Schema)
				return nil
			}
			var w record.Whole
			if err = json.Unmarshal(v[8:], &w); err == nil {
				rec = w.Record()
			}
		}
		if err != nil {
			c.problem("tasks", key, "does not decode: %s", jsonProblem(err))
			return nil
		}
		if rec.Task.ID != id {
			c.problem("tasks", key, "holds task %q", rec.Task.ID)
			return nil
		}
		ti := taskInfo{
			owner: rec.Owner, contextID: rec.Task.ContextID, state: rec.State(),
			createdAt: rec.CreatedAt, updatedAt: rec.UpdatedAt,
			seq: binary.BigEndian.Uint64(v), messageIDs: rec.MessageIDs,
			listKey: listKey(rec), listValue: listValue(rec),
			split: t.split, historyLen: t.historyLen, arts: t.arts,
		}
		if ti.split && c.tx.Bucket(bucketBody) != nil {
			ti.messageIDs = messageIDs(wrap(c.tx), id)
		}
		*t = ti
		return nil
	})
}

// jsonProblem says what is wrong with JSON without quoting it: a syntax
// error shows one character at most, a type error the field and the JSON
// that belongs there (not the Go type the store decodes it into).
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%v (byte %d)", syn, syn.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return fmt.Sprintf("a JSON %s where %s belongs", typ.Value, jsonKind(typ.Type))
	case errors.As(err, &typ):
		return fmt.Sprintf("field %s: a JSON %s where %s belongs", typ.Field, typ.Value, jsonKind(typ.Type))
	}
	return err.Error() // a time that does not parse
}

// jsonKind names the JSON value that decodes into t.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "a number"
}

// parseLengthPrefixed splits an owners or idem key into the owner and the
// rest.
func parseLengthPrefixed(k []byte) (owner, rest string, ok bool) {
	n, w := binary.Uvarint(k)
	if w <= 0 || uint64(len(k)-w) < n {
		return "", "", false
	}
	return string(k[w : w+int(n)]), string(k[w+int(n):]), true
}
