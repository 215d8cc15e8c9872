package boltstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// seedTime is the creation time of the seeded tasks; they move a second
// per step.
var seedTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// seedStore writes four tasks through the store's own API and closes it:
//
//	t-1 alice  submitted, working, completed (3 events, m-1, in expiry)
//	t-2 alice  working (1 event, m-2, active)
//	t-3 bob    working (1 event, m-3, active)
//	t-4 bob    input-required, then a follow-up message m-4b: working (2 events)
func seedStore(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "a2ad.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	create := func(id, owner string, st a2a.TaskState) {
		tb.Helper()
		if _, _, err := s.Create(ctx, key(owner, "m-"+id[2:], id), newRecord(id, owner, st, seedTime), []tasks.Event{statusEvent(st)}); err != nil {
			tb.Fatal(err)
		}
	}
	update := func(owner, id string, k *tasks.IdemKey, fn tasks.UpdateFunc) {
		tb.Helper()
		if _, _, _, err := s.Update(ctx, owner, id, k, tasks.Whole, fn); err != nil {
			tb.Fatal(err)
		}
	}
	create("t-1", "alice", a2a.StateSubmitted)
	update("alice", "t-1", nil, setState(a2a.StateWorking, seedTime.Add(time.Second)))
	update("alice", "t-1", nil, setState(a2a.StateCompleted, seedTime.Add(2*time.Second)))
	create("t-2", "alice", a2a.StateWorking)
	create("t-3", "bob", a2a.StateWorking)
	create("t-4", "bob", a2a.StateInputRequired)
	follow := key("bob", "m-4b", "more")
	update("bob", "t-4", &follow, setState(a2a.StateWorking, seedTime.Add(time.Second)))
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// The store's key layouts, spelled out here so that the tests do not
// share the code they check.
func ownerKeyOf(owner, rest string) []byte {
	return append(append(binary.AppendUvarint(nil, uint64(len(owner))), owner...), rest...)
}

func eventKeyOf(id string, seq uint64) []byte {
	k := append(binary.AppendUvarint(nil, uint64(len(id))), id...)
	return binary.BigEndian.AppendUint64(append(k, 's'), seq)
}

func expiryKeyOf(at time.Time, id string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())), id...)
}

func idemValueOf(id, body string) []byte {
	h := sha256.Sum256([]byte(body))
	return append(append([]byte(id), 0), h[:]...)
}

func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func dueKeyOf(at time.Time, id uint64) []byte { return append(expiryKeyOf(at, ""), u64(id)...) }

// putDeliveryOf writes delivery id of webhook configID of task taskID, due
// at nextAt, with its pending entry and a due entry at dueAt.
func putDeliveryOf(tx *bolt.Tx, id uint64, taskID, configID string, nextAt, dueAt time.Time) error {
	v, _ := json.Marshal(map[string]any{"taskId": taskID, "configId": configID, "nextAt": nextAt})
	if err := tx.Bucket([]byte("outbox")).Put(u64(id), v); err != nil {
		return err
	}
	if err := tx.Bucket([]byte("pending")).Put(ownerKeyOf(taskID, configID), append(u64(id), u64(1)...)); err != nil {
		return err
	}
	return tx.Bucket([]byte("due")).Put(dueKeyOf(dueAt, id), nil)
}

// headValueOf is a value of the tasks bucket: seq, the layout byte, the
// owner, the history's length, an empty artifacts' index and the head's
// JSON.
func headValueOf(seq uint64, owner string, historyLen uint64, js string) []byte {
	v := append(u64(seq), 0x01)
	v = append(binary.AppendUvarint(v, uint64(len(owner))), owner...)
	v = append(binary.AppendUvarint(v, historyLen), 0)
	return append(v, js...)
}

func recentKeyOf(owner string, at time.Time, id string) []byte {
	return ownerKeyOf(owner, string(u64(uint64(at.UnixNano())))+id)
}

func problems(r *boltstore.Report) []string {
	out := []string{}
	for _, p := range r.Problems {
		out = append(out, p.String())
	}
	return out
}

func mustCheck(tb testing.TB, path string) *boltstore.Report {
	tb.Helper()
	r, err := boltstore.Check(path, 0)
	if err != nil {
		tb.Fatalf("Check(%s): %v", path, err)
	}
	return r
}

func TestCheckSeededStoreIsClean(t *testing.T) {
	path := seedStore(t)
	r := mustCheck(t, path)
	if !r.Clean() {
		t.Fatalf("problems in a store written by its own API:\n%s", strings.Join(problems(r), "\n"))
	}
	want := []boltstore.BucketKeys{
		{"active", 3}, {"body", 5 + 7}, {"counts", 2}, {"dead", 0}, {"due", 0}, {"expiry", 1}, {"idem", 5}, {"meta", 3}, // meta: schema, usage, the last log record (wal)

		{"outbox", 0}, {"owners", 4}, {"pending", 0}, {"recent", 4}, {"tasks", 4}, {"usage", 2},
	}
	if diff := cmp.Diff(want, r.Buckets); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
	if r.Schema != "6" || r.Tasks != 4 {
		t.Errorf("schema %q, %d tasks; want 5, 4", r.Schema, r.Tasks)
	}
}

// TestCheckFindsWhatTheIssueNames injects the three problems issue 9 names:
// an owners entry without a task, a task missing from active, a record
// that does not decode. Exactly those are reported.
func TestCheckFindsWhatTheIssueNames(t *testing.T) {
	path := seedStore(t)
	testkit.UpdateStore(t, path, func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("owners")).Put(ownerKeyOf("alice", "t-ghost"), nil); err != nil {
			return err
		}
		if err := tx.Bucket([]byte("active")).Delete([]byte("t-2")); err != nil {
			return err
		}
		return tx.Bucket([]byte("tasks")).Put([]byte("t-3"), headValueOf(1, "bob", 0, `{"task":`))
	})
	r := mustCheck(t, path)
	want := []string{
		`tasks "t-3": does not decode: unexpected end of JSON input (byte 8)`,
		`owners "alice" "t-ghost": no such task`,
		`active "t-2": missing: task is working`,
	}
	if diff := cmp.Diff(want, problems(r)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if r.Clean() || r.Tasks != 4 {
		t.Errorf("Clean() = %v, Tasks = %d; want false, 4", r.Clean(), r.Tasks)
	}
}

// TestCheckInvariants breaks each invariant of the table on its own and
// pins what Check says.
func TestCheckInvariants(t *testing.T) {
	completedAt := seedTime.Add(2 * time.Second) // t-1's last update
	for _, tc := range []struct {
		name string
		fn   func(tx *bolt.Tx) error
		want []string
	}{
		{
			name: "record under another id",
			fn: func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte("tasks"))
				return b.Put([]byte("t-9"), b.Get([]byte("t-1")))
			},
			want: []string{`tasks "t-9": holds task "t-1"`},
		},
		{
			name: "record shorter than its sequence",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("tasks")).Put([]byte("t-9"), []byte("abc")) },
			want: []string{`tasks "t-9": record of 3 bytes is shorter than its header`},
		},
		{
			name: "head that does not parse",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("tasks")).Put([]byte("t-9"), append(u64(0), 0x01, 3, 'b', 'o', 'b', 0, 9))
			},
			want: []string{`tasks "t-9": head does not parse`},
		},
		{
			name: "record in the whole layout of schemas 2 to 4",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("tasks")).Put([]byte("t-9"), append(u64(0), `{"task":{"id":"t-9"}}`...))
			},
			want: []string{`tasks "t-9": record is whole, in the layout before schema 5, not of schema 6`},
		},
		{
			name: "record with a field of the wrong type",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("tasks")).Put([]byte("t-9"), headValueOf(0, "bob", 0, `{"task":{"id":7}}`))
			},
			want: []string{`tasks "t-9": does not decode: field task.id: a JSON number where a string belongs`},
		},
		{
			name: "terminal task in active",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("active")).Put([]byte("t-1"), nil) },
			want: []string{`active "t-1": task is completed, which is terminal`},
		},
		{
			name: "owners entry under another owner",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("owners")).Put(ownerKeyOf("bob", "t-1"), nil) },
			want: []string{`owners "bob" "t-1": task belongs to "alice"`},
		},
		{
			name: "task missing from owners",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("owners")).Delete(ownerKeyOf("alice", "t-2")) },
			want: []string{`owners "alice" "t-2": missing`},
		},
		{
			name: "owners key that does not parse",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("owners")).Put([]byte{9, 'x'}, nil) },
			want: []string{`owners "\tx": key does not parse`},
		},
		{
			name: "idem entry of a task that does not exist",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("idem")).Put(ownerKeyOf("alice", "m-x"), idemValueOf("t-x", "x"))
			},
			want: []string{`idem "alice" "m-x": task "t-x" does not exist`},
		},
		{
			name: "idem entry of another owner's task",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("idem")).Put(ownerKeyOf("bob", "m-1"), idemValueOf("t-1", "x"))
			},
			want: []string{`idem "bob" "m-1": task "t-1" belongs to "alice"`},
		},
		{
			name: "idem value that does not parse",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("idem")).Put(ownerKeyOf("alice", "m-y"), []byte("t-1"))
			},
			want: []string{`idem "alice" "m-y": value does not parse`},
		},
		{
			name: "message id missing from idem",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("idem")).Delete(ownerKeyOf("bob", "m-4b")) },
			want: []string{`idem "bob" "m-4b": missing: task "t-4" holds this message id`},
		},
		{
			name: "idem entry pointing at another task",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("idem")).Put(ownerKeyOf("alice", "m-1"), idemValueOf("t-2", "x"))
			},
			want: []string{
				`idem "alice" "m-1": task "t-2" does not hold this message id`,
				`idem "alice" "m-1": points at task "t-2", but task "t-1" holds this message id`,
			},
		},
		{
			name: "stale expiry entry",
			fn: func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte("expiry"))
				if err := b.Delete(expiryKeyOf(completedAt, "t-1")); err != nil {
					return err
				}
				return b.Put(expiryKeyOf(seedTime, "t-1"), nil)
			},
			want: []string{
				`expiry 2025-01-02T03:04:05Z "t-1": task was last updated at 2025-01-02T03:04:07Z`,
				`expiry 2025-01-02T03:04:07Z "t-1": missing: task is completed`,
			},
		},
		{
			name: "expiry entry of a task still working",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("expiry")).Put(expiryKeyOf(seedTime, "t-2"), nil) },
			want: []string{`expiry 2025-01-02T03:04:05Z "t-2": task is working, which is not terminal`},
		},
		{
			name: "expiry entry without a task",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("expiry")).Put(expiryKeyOf(seedTime, "t-0"), nil) },
			want: []string{`expiry 2025-01-02T03:04:05Z "t-0": no such task`},
		},
		{
			name: "event missing",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("body")).Delete(eventKeyOf("t-1", 2)) },
			want: []string{`body "t-1": 1 of the task's 3 events missing`},
		},
		{
			name: "event past the task's last",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("body")).Put(eventKeyOf("t-2", 9), []byte(`{"seq":9}`))
			},
			want: []string{`body "t-2" event 9: outside the task's sequences 1..1`},
		},
		{
			name: "event of no task, holding another sequence",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("body")).Put(eventKeyOf("t-0", 1), []byte(`{"seq":2}`))
			},
			want: []string{`body "t-0" event 1: event holds sequence 2`, `body "t-0" event 1: no such task`},
		},
		{
			name: "event that does not decode",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("body")).Put(eventKeyOf("t-2", 1), []byte(`{"seq":`))
			},
			want: []string{`body "t-2" event 1: does not decode: unexpected end of JSON input (byte 7)`},
		},
		{
			name: "delivery that does not decode",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("outbox")).Put(u64(99), []byte("{x")) },
			want: []string{`outbox 99: does not decode: invalid character 'x' looking for beginning of object key string (byte 2)`},
		},
		{
			name: "dead letter naming no task",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("dead")).Put(u64(7), []byte(`{"url":"https://x.example"}`))
			},
			want: []string{`dead 7: names no task`},
		},
		{
			name: "a delivery with its index entries is fine",
			fn:   func(tx *bolt.Tx) error { return putDeliveryOf(tx, 5, "t-1", "c", seedTime, seedTime) },
			want: []string{},
		},
		{
			name: "delivery of a task that is gone",
			fn:   func(tx *bolt.Tx) error { return putDeliveryOf(tx, 5, "t-expired", "c", seedTime, seedTime) },
			want: []string{`outbox 5: no such task`},
		},
		{
			name: "delivery without its index entries",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("outbox")).Put(u64(5), []byte(`{"taskId":"t-1","configId":"c","nextAt":"2025-01-02T03:04:05Z"}`))
			},
			want: []string{
				`outbox 5: not the pending delivery of task "t-1" webhook "c"`,
				`outbox 5: missing from due at 2025-01-02T03:04:05Z`,
			},
		},
		{
			name: "delivery naming no webhook",
			fn:   func(tx *bolt.Tx) error { return putDeliveryOf(tx, 5, "t-1", "", seedTime, seedTime) },
			want: []string{`outbox 5: names no webhook`},
		},
		{
			name: "pending entry without its delivery",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("pending")).Put(ownerKeyOf("t-1", "c"), append(u64(5), u64(1)...))
			},
			want: []string{`pending "t-1" "c": delivery 5 does not exist`},
		},
		{
			name: "pending entry that does not parse",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("pending")).Put(ownerKeyOf("t-1", "c"), u64(5)) },
			want: []string{`pending "t-1" "c": value does not parse`},
		},
		{
			name: "due entry at another time than its delivery's",
			fn:   func(tx *bolt.Tx) error { return putDeliveryOf(tx, 5, "t-1", "c", seedTime, seedTime.Add(time.Second)) },
			want: []string{
				`outbox 5: missing from due at 2025-01-02T03:04:05Z`,
				`due 2025-01-02T03:04:06Z 5: delivery 5 is due at 2025-01-02T03:04:05Z`,
			},
		},
		{
			name: "due entry without its delivery",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("due")).Put(dueKeyOf(seedTime, 9), nil) },
			want: []string{`due 2025-01-02T03:04:05Z 9: delivery 9 does not exist`},
		},
		{
			name: "unknown schema",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte("7")) },
			want: []string{`meta "schema": version "7" is not known (want one of ["2" "3" "4" "5" "6"])`},
		},
		{
			name: "recent entry without a task",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("recent")).Put(recentKeyOf("alice", seedTime, "t-0"), nil)
			},
			want: []string{
				`recent "alice" 2025-01-02T03:04:05Z "t-0": no such task`,
				`counts "alice": is 2, but the owner has 3 entries in recent`,
			},
		},
		{
			name: "stale recent entry",
			fn: func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte("recent"))
				v := b.Get(recentKeyOf("alice", completedAt, "t-1"))
				if err := b.Delete(recentKeyOf("alice", completedAt, "t-1")); err != nil {
					return err
				}
				return b.Put(recentKeyOf("alice", seedTime, "t-1"), v)
			},
			want: []string{
				`recent "alice" 2025-01-02T03:04:05Z "t-1": task's list time is 2025-01-02T03:04:07Z`,
				`recent "alice" 2025-01-02T03:04:07Z "t-1": missing`,
			},
		},
		{
			name: "recent entry under another owner",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("recent")).Put(recentKeyOf("bob", completedAt, "t-1"), nil)
			},
			want: []string{
				`recent "bob" 2025-01-02T03:04:07Z "t-1": task belongs to "alice"`,
				`counts "bob": is 2, but the owner has 3 entries in recent`,
			},
		},
		{
			name: "recent value of another state",
			fn: func(tx *bolt.Tx) error {
				v := append(append(u64(0), byte(len("completed"))), "completedctx-t-2"...)
				return tx.Bucket([]byte("recent")).Put(recentKeyOf("alice", seedTime, "t-2"), v)
			},
			want: []string{`recent "alice" 2025-01-02T03:04:05Z "t-2": value does not match the task's status time, state and context`},
		},
		{
			name: "task missing from recent",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("recent")).Delete(recentKeyOf("bob", seedTime, "t-3"))
			},
			want: []string{
				`counts "bob": is 2, but the owner has 1 entry in recent`,
				`recent "bob" 2025-01-02T03:04:05Z "t-3": missing`,
			},
		},
		{
			name: "recent key that does not parse",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("recent")).Put([]byte{1, 'x', 0}, nil) },
			want: []string{`recent "\x01x\x00": key does not parse`},
		},
		{
			name: "count off",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("counts")).Put(ownerKeyOf("alice", ""), u64(5)) },
			want: []string{`counts "alice": is 5, but the owner has 2 entries in recent`},
		},
		{
			name: "count of zero",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("counts")).Put(ownerKeyOf("carol", ""), u64(0)) },
			want: []string{`counts "carol": is zero (the entry should be gone)`},
		},
		{
			name: "count missing",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("counts")).Delete(ownerKeyOf("bob", "")) },
			want: []string{`counts "bob": missing: the owner has 2 entries in recent`},
		},
		{
			name: "count that does not parse",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("counts")).Put(ownerKeyOf("alice", ""), []byte("x")) },
			want: []string{`counts "alice": value does not parse`},
		},
		{
			name: "counts key that does not parse",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("counts")).Put([]byte{5, 'a'}, u64(1)) },
			want: []string{`counts "\x05a": key does not parse`},
		},
		{
			name: "bucket missing",
			fn:   func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("expiry")) },
			want: []string{`expiry: bucket missing`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := seedStore(t)
			testkit.UpdateStore(t, path, tc.fn)
			if diff := cmp.Diff(tc.want, problems(mustCheck(t, path))); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckCleanAfterTheStoreAtWork runs the store through creates,
// follow-ups, transitions, push deliveries, dead letters, concurrent
// writers and expiry: the live check and the file check find nothing.
func TestCheckCleanAfterTheStoreAtWork(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			id, owner := fmt.Sprintf("t-%02d", i), fmt.Sprintf("o-%d", i%3)
			rec := newRecord(id, owner, a2a.StateSubmitted, old)
			if i%4 == 0 {
				rec.PushConfigs = []a2a.PushConfig{{ID: "c", URL: "https://x.example/" + id, Token: "tok"}}
			}
			if _, _, err := s.Create(ctx, key(owner, "m-"+id, id), rec, []tasks.Event{statusEvent(a2a.StateSubmitted)}); err != nil {
				t.Error(err)
				return
			}
			steps := []a2a.TaskState{a2a.StateWorking, a2a.StateInputRequired}
			switch i % 3 {
			case 0:
				steps = append(steps, a2a.StateCompleted)
			case 1:
				steps = append(steps, a2a.StateCanceled)
			}
			for j, st := range steps {
				var k *tasks.IdemKey
				if st == a2a.StateInputRequired {
					f := key(owner, fmt.Sprintf("m-%s-%d", id, j), "more")
					k = &f
				}
				at := old
				if i%2 == 0 {
					at = time.Now() // too young to expire
				}
				if _, _, _, err := s.Update(ctx, owner, id, k, tasks.Whole, setState(st, at)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	due, err := s.Due(ctx, time.Now(), 100)
	if err != nil || len(due) == 0 {
		t.Fatalf("Due = %d, %v; want deliveries", len(due), err)
	}
	if err := s.Delivered(ctx, due[0].ID, math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	if err := s.Dead(ctx, due[len(due)-1].ID, "https://x.example/", 8, "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Expire(ctx, time.Now().Add(-time.Hour), 1000); err != nil || n == 0 {
		t.Fatalf("Expire = %d, %v; want some deleted", n, err)
	}
	r, err := s.Check(ctx)
	if err != nil || !r.Clean() {
		t.Fatalf("live Check = %v:\n%s", err, strings.Join(problems(r), "\n"))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r := mustCheck(t, path); !r.Clean() {
		t.Fatalf("Check:\n%s", strings.Join(problems(r), "\n"))
	}
}

func TestCheckAndBackupFileRefuseAStoreInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	MustOpen(t, path)
	start := time.Now()
	_, err := boltstore.Check(path, 100*time.Millisecond)
	if !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("Check of a store in use: %v, want ErrLocked", err)
	}
	if _, err := boltstore.BackupFile(ctx, path, &bytes.Buffer{}, 100*time.Millisecond); !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("BackupFile of a store in use: %v, want ErrLocked", err)
	}
	if _, err := boltstore.Compact(path, "", 100*time.Millisecond); !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("Compact of a store in use: %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("three refusals took %s", d)
	}
	if _, err := os.Stat(path + ".bak"); !os.IsNotExist(err) {
		t.Fatalf("refused Compact left %s.bak: %v", path, err)
	}
}

func TestCheckRefusesWhatIsNoStore(t *testing.T) {
	dir := t.TempDir()
	empty, junk := filepath.Join(dir, "empty.db"), filepath.Join(dir, "junk.db")
	putBytes(t, empty, nil)
	putBytes(t, junk, bytes.Repeat([]byte("not a store "), 1000))
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "none.db"), "open task store: stat " + filepath.Join(dir, "none.db") + ": no such file or directory"},
		{empty, "open task store " + empty + ": the file is empty"},
		{junk, "the store file " + junk + " is damaged: it has no valid meta page (it is not a store file, or its first pages are damaged)"},
		{dir, "open task store " + dir + ": not a regular file"},
	} {
		if _, err := boltstore.Check(tc.path, 0); err == nil || err.Error() != tc.want {
			t.Errorf("Check(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("Check wrote to the empty file: %v", err)
	}
}

func putBytes(tb testing.TB, path string, b []byte) {
	tb.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// gate is a writer whose first Write waits until it is opened.
type gate struct {
	started chan struct{}
	open    chan struct{}
	once    sync.Once
	buf     bytes.Buffer
}

func (g *gate) Write(p []byte) (int, error) {
	g.once.Do(func() {
		close(g.started)
		<-g.open
	})
	return g.buf.Write(p)
}

// TestBackupIsASnapshotWhileWritesGoOn holds a backup in the middle of its
// copy and writes meanwhile: the write commits at once, and the copy is
// the store as it was when the backup began.
func TestBackupIsASnapshotWhileWritesGoOn(t *testing.T) {
	dir := t.TempDir()
	s := MustOpen(t, filepath.Join(dir, "a2ad.db"))
	for i := range 10 {
		id := fmt.Sprintf("t-%d", i)
		if _, _, err := s.Create(ctx, key("o", id, id), newRecord(id, "o", a2a.StateWorking, seedTime), []tasks.Event{statusEvent(a2a.StateWorking)}); err != nil {
			t.Fatal(err)
		}
	}
	g := &gate{started: make(chan struct{}), open: make(chan struct{})}
	var (
		size, n int64
		err     error
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		n, err = s.Backup(ctx, g, func(sz int64) { size = sz })
	}()
	<-g.started
	wrote := make(chan error, 1)
	go func() {
		_, _, err := s.Create(ctx, key("o", "late", "late"), newRecord("t-late", "o", a2a.StateWorking, seedTime), nil)
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write waited for the backup")
	}
	close(g.open)
	<-done
	if err != nil || n != size || int64(g.buf.Len()) != n || n == 0 {
		t.Fatalf("Backup = %d, %v; size %d, %d bytes written", n, err, size, g.buf.Len())
	}

	copyPath := filepath.Join(dir, "copy.db")
	putBytes(t, copyPath, g.buf.Bytes())
	r := mustCheck(t, copyPath)
	if !r.Clean() || r.Tasks != 10 {
		t.Fatalf("the copy: %d tasks, problems %q; want 10 and none", r.Tasks, problems(r))
	}
	c := MustOpen(t, copyPath)
	if _, err := c.Get(ctx, "o", "t-9", tasks.Whole); err != nil {
		t.Fatalf("a task from before the backup: %v", err)
	}
	if _, err := c.Get(ctx, "o", "t-late", tasks.Whole); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("the task written during the backup is in the copy: %v", err)
	}
}

func TestBackupStopsWhenTheContextEnds(t *testing.T) {
	s := MustOpen(t, "")
	cctx, cancel := context.WithCancel(ctx)
	w := writerFunc(func(p []byte) (int, error) {
		cancel()
		return len(p), nil
	})
	if _, err := s.Backup(cctx, w, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Backup after its context ended: %v, want context.Canceled", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestBackupFileCopiesAClosedStore(t *testing.T) {
	path := seedStore(t)
	var buf bytes.Buffer
	n, err := boltstore.BackupFile(ctx, path, &buf, 0)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("BackupFile = %d, %v; %d bytes written", n, err, buf.Len())
	}
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	putBytes(t, copyPath, buf.Bytes())
	if r := mustCheck(t, copyPath); !r.Clean() || r.Tasks != 4 {
		t.Fatalf("the copy: %d tasks, problems %q", r.Tasks, problems(r))
	}
}

// seedLarge writes n tasks with a 2 KiB input each, all completed: the
// even ones two days ago, the odd ones now. Every fourth has a webhook,
// so the outbox has a sequence to keep.
func seedLarge(tb testing.TB, path string, n int) {
	tb.Helper()
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	input, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", 2048)})
	old := time.Now().Add(-48 * time.Hour)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				id := fmt.Sprintf("t-%05d", i)
				at := time.Now()
				if i%2 == 0 {
					at = old
				}
				rec := newRecord(id, "o", a2a.StateCompleted, at)
				rec.Input = input
				if i%4 == 0 {
					rec.PushConfigs = []a2a.PushConfig{{ID: "c", URL: "https://x.example/"}}
				}
				if _, _, err := s.Create(ctx, key("o", id, id), rec, []tasks.Event{statusEvent(a2a.StateCompleted)}); err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n, err := s.Expire(ctx, time.Now().Add(-time.Hour), n); err != nil || n == 0 {
		tb.Fatalf("Expire = %d, %v", n, err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
}

// outboxSequence is the outbox bucket's sequence in the file at path.
func outboxSequence(tb testing.TB, path string) uint64 {
	tb.Helper()
	var seq uint64
	testkit.ViewStore(tb, path, func(tx *bolt.Tx) error {
		seq = tx.Bucket([]byte("outbox")).Sequence()
		return nil
	})
	return seq
}

func fileSize(tb testing.TB, path string) int64 { return testkit.Stat(tb, path).Size() }

// TestCompactInPlace compacts a store that retention has halved: the file
// shrinks, the original is kept as .bak, the store checks clean, and
// every remaining task reads back.
func TestCompactInPlace(t *testing.T) {
	const n = 2000
	path := filepath.Join(t.TempDir(), "a2ad.db")
	seedLarge(t, path, n)
	before := fileSize(t, path)
	seq := outboxSequence(t, path)

	res, err := boltstore.Compact(path, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	after := fileSize(t, path)
	if res.Before != before || res.After != after || res.Out != path || res.Original != path+".bak" {
		t.Fatalf("result %+v; want before %d, after %d", res, before, after)
	}
	// Half the tasks went: the file shrinks by at least a quarter, and
	// its pages in use do not grow. (Checkpoints write many changes in one
	// transaction, so the file frees few pages besides.)
	if res.BeforeData > before || after >= before*3/4 || after > res.BeforeData {
		t.Fatalf("compacted from %d bytes (%d of pages) to %d: want at least a quarter less", before, res.BeforeData, after)
	}
	if got := fileSize(t, path+".bak"); got != before {
		t.Fatalf("the original kept as .bak has %d bytes, want %d", got, before)
	}
	if got := outboxSequence(t, path); got != seq || seq == 0 {
		t.Fatalf("outbox sequence %d after compaction, want %d", got, seq)
	}
	r := mustCheck(t, path)
	if !r.Clean() || r.Tasks != n/2 {
		t.Fatalf("after compaction: %d tasks, problems %q; want %d, none", r.Tasks, problems(r), n/2)
	}
	if entries := storeFiles(t, filepath.Dir(path)); len(entries) != 2 {
		t.Fatalf("files left: %v; want the store and its .bak", entries)
	}

	s := MustOpen(t, path)
	for i := range n {
		id := fmt.Sprintf("t-%05d", i)
		rec, _, err := s.Inspector().Task(ctx, id)
		switch {
		case i%2 == 0 && !errors.Is(err, tasks.ErrNotFound):
			t.Fatalf("expired %s: %v, want ErrNotFound", id, err)
		case i%2 == 1 && (err != nil || len(rec.Input) < 2048):
			t.Fatalf("kept %s: %v", id, err)
		}
	}

	// A second compaction would overwrite the .bak: it is refused.
	_, err = boltstore.Compact(path, "", 0)
	want := "compact task store " + path + ": " + path + ".bak exists: move it away first (compact keeps the original there)"
	if err == nil || err.Error() != want {
		t.Fatalf("Compact with a .bak present = %v, want %q", err, want)
	}
}

func TestCompactToAnotherFile(t *testing.T) {
	dir := t.TempDir()
	path, out := filepath.Join(dir, "a2ad.db"), filepath.Join(dir, "small.db")
	seedLarge(t, path, 400)
	before := fileSize(t, path)
	orig, _ := os.ReadFile(path)
	res, err := boltstore.Compact(path, out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Out != out || res.Original != "" || res.Before != before || res.After != fileSize(t, out) || res.After >= before {
		t.Fatalf("result %+v, original %d bytes", res, before)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Fatal("Compact to another file changed the original")
	}
	if r := mustCheck(t, out); !r.Clean() || r.Tasks != 200 {
		t.Fatalf("the copy: %d tasks, problems %q", r.Tasks, problems(r))
	}
	_, err = boltstore.Compact(path, out, 0)
	if want := "compact task store " + path + ": " + out + " exists: give a new file"; err == nil || err.Error() != want {
		t.Fatalf("Compact onto an existing file = %v, want %q", err, want)
	}
	if entries := storeFiles(t, dir); len(entries) != 2 {
		t.Fatalf("files left: %v; want the store and the copy", entries)
	}
}

// TestCompactThroughASymlink replaces the file the link names: the link
// stays a link, and the original is kept beside the file.
func TestCompactThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "data", "a2ad.db"), filepath.Join(dir, "a2ad.db")
	if err := os.Mkdir(filepath.Dir(real), 0o700); err != nil {
		t.Fatal(err)
	}
	seedLarge(t, real, 200)
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	res, err := boltstore.Compact(link, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Out != real || res.Original != real+".bak" {
		t.Fatalf("result %+v; want the copy at %s, the original at %s.bak", res, real, real)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is no longer a link: %v", err)
	}
	if r := mustCheck(t, link); !r.Clean() || r.Tasks != 100 {
		t.Fatalf("through the link: %d tasks, problems %q", r.Tasks, problems(r))
	}
}

// storeFiles lists dir without the stores' write-ahead log directories
// (<store>.wal), which stay beside their stores.
func storeFiles(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), ".wal") {
			continue
		}
		names = append(names, e.Name())
	}
	return names
}
