package boltstore_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// richRecords are n tasks of two owners with what a schema 3 record held
// inline: history, artifacts (one of several parts), an input, webhooks.
func richRecords(n int) []*tasks.Record {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var recs []*tasks.Record
	for i := range n {
		st := []a2a.TaskState{a2a.StateCompleted, a2a.StateWorking, a2a.StateInputRequired}[i%3]
		id := fmt.Sprintf("t%02d", i)
		r := newRecord(id, []string{"alice", "bob"}[i%2], st, base.Add(time.Duration(i)*time.Second))
		r.Task.Status.Timestamp = a2a.Timestamp(r.UpdatedAt)
		r.FunctionID = "demo::echo"
		r.Input = json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("p", i*10)))
		for j := range i % 4 {
			m := userMsg(fmt.Sprintf("%s-h%d", id, j), strings.Repeat("h", j*100))
			if j > 0 { // as a2ad stores them; the first as tests wrote some
				m.TaskID, m.ContextID = r.Task.ID, r.Task.ContextID
			}
			r.Task.History = append(r.Task.History, m)
		}
		for j := range i % 3 {
			a := a2a.Artifact{ArtifactID: fmt.Sprintf("%s-a%d", id, j), Name: "out"}
			for p := range j + 1 {
				a.Parts = append(a.Parts, a2a.TextPart(fmt.Sprintf("part %d", p)))
			}
			r.Task.Artifacts = append(r.Task.Artifacts, a)
		}
		if i%5 == 0 {
			r.PushConfigs = []a2a.PushConfig{{ID: "w", URL: "https://hooks.example/" + id}}
		}
		recs = append(recs, r)
	}
	return recs
}

// readBack reads every task of recs whole from s, fails tb unless each
// A2A task is as written, and returns what it read, in recs' order.
func readBack(tb testing.TB, s *boltstore.Store, recs []*tasks.Record) []*tasks.Record {
	tb.Helper()
	out := make([]*tasks.Record, len(recs))
	for i, want := range recs {
		got, err := s.Get(ctx, want.Owner, want.Task.ID, tasks.Whole)
		if err != nil {
			tb.Fatal(err)
		}
		if diff := cmp.Diff(withIDs(want.Task), got.Task); diff != "" {
			tb.Errorf("task %s (-want +got):\n%s", want.Task.ID, diff)
		}
		out[i] = got
	}
	return out
}

// withIDs is t as a store reads it: its messages without ids have its
// (tasks.Fill).
func withIDs(t a2a.Task) a2a.Task {
	t.History = slices.Clone(t.History)
	for i := range t.History {
		tasks.Fill(&t.History[i], t.ID, t.ContextID)
	}
	if m := t.Status.Message; m != nil {
		filled := *m
		tasks.Fill(&filled, t.ID, t.ContextID)
		t.Status.Message = &filled
	}
	return t
}

// TestOpenMigratesSchema4: a schema 4 store (here written as schema 2 and
// taken to 4 by those steps: the steps compose) opens as schema 6, and
// every task reads back as it was, its history, artifacts, input and
// message ids moved beside its head; the migrated store checks clean and
// works: idempotency keys hold, expiry deletes everything of a task.
func TestOpenMigratesSchema4(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	recs := richRecords(30)
	writeSchema2(t, path, recs)
	if err := boltstore.MigrateTo(path, "4", -1); err != nil {
		t.Fatal(err)
	}
	if r := mustCheck(t, path); r.Schema != "4" || !r.Clean() {
		t.Fatalf("schema 4 file: schema %q, problems %q", r.Schema, problems(r))
	}

	s := MustOpen(t, path)
	for i, got := range readBack(t, s, recs) {
		want := recs[i]
		if got.HistoryLen != len(want.Task.History) || got.Seq != want.Seq || got.FunctionID != want.FunctionID ||
			!cmp.Equal(got.PushConfigs, want.PushConfigs) {
			t.Errorf("task %s after migration: %+v", want.Task.ID, got)
		}
		whole, _, err := s.Inspector().Task(ctx, want.Task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if string(whole.Input) != string(want.Input) || !cmp.Equal(whole.MessageIDs, want.MessageIDs) {
			t.Errorf("task %s after migration: input %s, message ids %v; want %s, %v",
				want.Task.ID, whole.Input, whole.MessageIDs, want.Input, want.MessageIDs)
		}
	}
	if r := mustCheckOpen(t, s); !r.Clean() || r.Schema != "6" {
		t.Fatalf("migrated store: schema %q, problems %q", r.Schema, problems(r))
	}
	// A message id a migrated task holds still answers with that task
	// (writeSchema2 bound it with a zero hash).
	if got, created, err := s.Create(ctx, tasks.IdemKey{Owner: "bob", MessageID: "m-t01"}, newRecord("new", "bob", a2a.StateSubmitted, time.Now()), nil); err != nil || created || got.Task.ID != "t01" {
		t.Fatalf("idempotency after migration: %v, created %v", err, created)
	}
	// Expiry deletes the migrated tasks whole: body and keys included.
	if n, err := s.Expire(ctx, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), 100); err != nil || n != 10 {
		t.Fatalf("Expire = %d, %v; want the 10 completed tasks", n, err)
	}
	if got := bodyKeys(t, s, "t00"); len(got) != 0 {
		t.Errorf("expired t00 left body keys %v", got)
	}
	if r := mustCheckOpen(t, s); !r.Clean() {
		t.Fatalf("after expiry: problems %q", problems(r))
	}
}

// TestOpenResumesAnInterruptedMigration: a migration cut short (here after
// 7 of 25 tasks) leaves the file marked: an older a2ad refuses it (its
// schema says 4 already), store check says the migration did not finish,
// and the next Open converts the rest.
func TestOpenResumesAnInterruptedMigration(t *testing.T) {
	boltstore.SetMigrateBatch(t, 4) // batches of 4: the crash and the rest cross several
	path := filepath.Join(t.TempDir(), "a2ad.db")
	recs := richRecords(25)
	writeSchema2(t, path, recs)
	if err := boltstore.MigrateTo(path, "5", 7); err != nil {
		t.Fatal(err)
	}
	r := mustCheck(t, path)
	want := []string{`meta "migrating": the migration to schema "5" did not finish: open the store with a2ad to finish it`}
	if diff := cmp.Diff(want, problems(r)); diff != "" || r.Schema != "5" {
		t.Fatalf("half-migrated file: schema %q, problems (-want +got):\n%s", r.Schema, diff)
	}
	converted := 0
	testkit.UpdateStore(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("tasks")).ForEach(func(_, v []byte) error {
			if v[8] == 0x01 {
				converted++
			}
			return nil
		})
	})
	if converted != 7 {
		t.Fatalf("%d tasks converted before the crash, want 7", converted)
	}
	// The step to 5 writes record v1, as schema 5 did, which an a2ad of
	// schema 5 may resume: messages keep their ids.
	var withIDs, without int
	testkit.UpdateStore(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("body")).ForEach(func(_, v []byte) error {
			if bytes.HasPrefix(v, []byte(`{"kind":"message"`)) && bytes.Contains(v, []byte(`-h0"`)) {
				return nil // the messages written without ids
			}
			if bytes.HasPrefix(v, []byte(`{"kind":"message"`)) {
				if bytes.Contains(v, []byte(`"contextId":`)) && bytes.Contains(v, []byte(`"taskId":`)) {
					withIDs++
				} else {
					without++
				}
			}
			return nil
		})
	})
	if withIDs == 0 || without > 0 {
		t.Fatalf("the step to schema 5 wrote %d messages with their ids and %d without, want all with", withIDs, without)
	}

	s := MustOpen(t, path)
	readBack(t, s, recs)
	if r := mustCheckOpen(t, s); !r.Clean() || r.Schema != "6" {
		t.Fatalf("after the resumed migration: schema %q, problems %q", r.Schema, problems(r))
	}
}

// TestCheckKnowsTheOlderSchemas: stores of schema 2 (no listing index), 3
// (the old outbox) and 4 (records whole, events in their own bucket) check
// clean, as they are, before any a2ad migrates them.
func TestCheckKnowsTheOlderSchemas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	writeSchema2(t, path, richRecords(12))
	for _, version := range []string{"2", "3", "4"} {
		if version != "2" {
			if err := boltstore.MigrateTo(path, version, -1); err != nil {
				t.Fatal(err)
			}
		}
		if version == "3" {
			// A schema 3 delivery of a task retention deleted is fine.
			testkit.UpdateStore(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("outbox")).Put(u64(5), []byte(`{"taskId":"t-expired","body":{}}`))
			})
		}
		r := mustCheck(t, path)
		if r.Schema != version || r.Tasks != 12 || !r.Clean() {
			t.Errorf("schema %s file: schema %q, %d tasks, problems %q", version, r.Schema, r.Tasks, problems(r))
		}
	}
}

// writeSchema2 writes a store file as schema 2 left it: the buckets of
// that version, without the listing index.
func writeSchema2(tb testing.TB, path string, recs []*tasks.Record) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		bs := map[string]*bolt.Bucket{}
		for _, name := range []string{"tasks", "events", "active", "owners", "idem", "expiry", "meta", "outbox", "dead"} {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			bs[name] = b
		}
		for _, r := range recs {
			r.Seq = 1
			r.MessageIDs = []string{"m-" + r.Task.ID}
			j, err := oldRecordJSON(r)
			if err != nil {
				return err
			}
			if err := bs["tasks"].Put([]byte(r.Task.ID), append(binary.BigEndian.AppendUint64(nil, r.Seq), j...)); err != nil {
				return err
			}
			ev, _ := json.Marshal(tasks.Event{Seq: 1, Status: &r.Task.Status})
			if err := bs["events"].Put(binary.BigEndian.AppendUint64(append([]byte(r.Task.ID), 0), 1), ev); err != nil {
				return err
			}
			owner := append(binary.AppendUvarint(nil, uint64(len(r.Owner))), r.Owner...)
			if err := bs["owners"].Put(append(slices.Clone(owner), r.Task.ID...), nil); err != nil {
				return err
			}
			idem := append(append([]byte(r.Task.ID), 0), make([]byte, 32)...)
			if err := bs["idem"].Put(append(slices.Clone(owner), r.MessageIDs[0]...), idem); err != nil {
				return err
			}
			if r.State().Terminal() {
				err = bs["expiry"].Put(append(binary.BigEndian.AppendUint64(nil, uint64(r.UpdatedAt.UnixNano())), r.Task.ID...), nil)
			} else {
				err = bs["active"].Put([]byte(r.Task.ID), nil)
			}
			if err != nil {
				return err
			}
		}
		return bs["meta"].Put([]byte("schema"), []byte("2"))
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func TestOpenMigratesSchema2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var recs []*tasks.Record
	for i := range 30 {
		st := []a2a.TaskState{a2a.StateCompleted, a2a.StateWorking, a2a.StateInputRequired}[i%3]
		r := newRecord(fmt.Sprintf("t%02d", i), []string{"alice", "bob"}[i%2], st, base.Add(time.Duration(i)*time.Second))
		r.Task.Status.Timestamp = a2a.Timestamp(r.UpdatedAt)
		recs = append(recs, r)
	}
	writeSchema2(t, path, recs)

	s := MustOpen(t, path)
	checkListing(t, s.DB())
	if err := s.DB().View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("schema")); string(v) != "6" {
			t.Errorf("schema after open = %q, want \"6\"", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var wantAlice, wantBobDone []string
	for i := 29; i >= 0; i-- {
		if i%2 == 0 {
			wantAlice = append(wantAlice, fmt.Sprintf("t%02d", i))
		} else if i%3 == 0 {
			wantBobDone = append(wantBobDone, fmt.Sprintf("t%02d", i))
		}
	}
	if got := storetest.ListIDs(t, s, "alice", tasks.ListFilter{}, 4); !slices.Equal(got, wantAlice) {
		t.Errorf("alice after migration = %v\nwant %v", got, wantAlice)
	}
	if got := storetest.ListIDs(t, s, "bob", tasks.ListFilter{State: a2a.StateCompleted}, 2); !slices.Equal(got, wantBobDone) {
		t.Errorf("bob's completed after migration = %v\nwant %v", got, wantBobDone)
	}
	// The migrated store goes on as a schema 5 one.
	r := newRecord("t99", "alice", a2a.StateWorking, base.Add(time.Hour))
	create(t, s, r)
	if got := storetest.ListIDs(t, s, "alice", tasks.ListFilter{}, 100); len(got) != 16 || got[0] != "t99" {
		t.Errorf("alice after a create = %v", got)
	}
	if n, err := s.Expire(ctx, base.Add(time.Hour), 100); err != nil || n != 10 {
		t.Fatalf("Expire after migration = %d, %v; want 10", n, err)
	}
	checkListing(t, s.DB())
}

func TestOpenRejectsUnknownSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		return b.Put([]byte("schema"), []byte("9"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = boltstore.Open(path, boltstore.Options{})
	want := `open task store ` + path + `: store schema version "9" is not supported (want "6")`
	if err == nil || err.Error() != want {
		t.Fatalf("Open = %v, want %s", err, want)
	}
}

// oldRecordJSON is r as schemas 2 to 4 stored it: the record's fields,
// with the task in the 0.3 wire shape that those schemas wrote.
func oldRecordJSON(r *tasks.Record) ([]byte, error) {
	task, err := v03.AppendTask(nil, &r.Task)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		*tasks.Record
		Task json.RawMessage `json:"task"`
	}{r, task})
}
