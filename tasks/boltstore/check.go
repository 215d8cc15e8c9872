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
)

// knownSchemas are the schema versions Check understands.
var knownSchemas = []string{"2", "3", "4", "5"}

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
	defer func() { recovered(recover(), path, &err) }()
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
	var r *Report
	err := s.view(func(tx *bolt.Tx) error {
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
	kept := usageKept(tx)
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
			var w recWhole
			if err = json.Unmarshal(v[8:], &w); err == nil {
				rec = w.record()
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
			ti.messageIDs = messageIDs(c.tx, id)
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
	var e recEvent
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
		var m recMessage
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
			a     recArtifact
			parts []recPart
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
			t.artBytes[i] += tasks.PartBytes(toParts(parts))
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
