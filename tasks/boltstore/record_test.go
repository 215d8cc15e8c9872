package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/golden"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/record"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenRecord is a task with something in every field the record keeps.
func goldenRecord() *tasks.Record {
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	ask := a2a.Message{
		MessageID: "m-ask", ContextID: "ctx", TaskID: "t1", Role: a2a.RoleAgent,
		Parts:            []a2a.Part{{Kind: a2a.PartText, Text: "which <one>?", Metadata: map[string]any{"k": 1.5}}},
		ReferenceTaskIDs: []string{"t0"}, Extensions: []string{"https://ext/x"}, Metadata: map[string]any{"m": "v"},
	}
	return &tasks.Record{
		Task: a2a.Task{
			ID: "t1", ContextID: "ctx",
			Status: a2a.TaskStatus{State: a2a.StateInputRequired, Message: &ask, Timestamp: "2026-11-22T10:00:00.123Z"},
			History: []a2a.Message{
				{MessageID: "m1", ContextID: "ctx", Role: a2a.RoleUser, Parts: []a2a.Part{
					a2a.DataPart(json.RawMessage(`{"skill":"demo::echo","input":{"a":"&"}}`)),
					{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "f.txt", MimeType: "text/plain", Bytes: "aGk="}},
					{Kind: a2a.PartFile, File: &a2a.FileContent{URI: "https://files/f"}, Metadata: map[string]any{"p": true}},
				}},
				ask,
			},
			Artifacts: []a2a.Artifact{
				{ArtifactID: "a1", Name: "out", Description: "the output", Parts: []a2a.Part{a2a.TextPart("x")},
					Extensions: []string{"e"}, Metadata: map[string]any{"n": 2.0}},
				{ArtifactID: "a\"2", Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"y":[1,2]}`))}},
			},
			Metadata: map[string]any{"task": "meta"},
		},
		Owner: "alice \"a\"", CallerTiers: []string{"partner", "in<ternal"}, CallerTier: "old", FunctionID: "demo::echo",
		Input: json.RawMessage(`{"a":[1,2]}`),
		PushConfigs: []a2a.PushConfig{
			{ID: "w1", URL: "https://hooks/x?a=1&b=2", Token: "tok", Authentication: &a2a.PushAuth{Schemes: []string{"Bearer"}, Credentials: "s"}},
			{URL: "http://127.0.0.1:9/h", Wire: a2a.V10, Authentication: &a2a.PushAuth{}},
		},
		Group:     &functions.ProcessGroup{ID: 4242, LeaderStart: 1234567, Session: 17, BootID: "e857-9018"},
		CreatedAt: at, UpdatedAt: at.Add(time.Second).In(time.FixedZone("x", 3600)),
	}
}

// goldenEvents are the first events of goldenRecord.
func goldenEvents() []tasks.Event {
	st := goldenRecord().Task.Status
	return []tasks.Event{
		{Status: &a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: "2026-11-22T10:00:00.000Z"}},
		{Artifact: &goldenRecord().Task.Artifacts[0], LastChunk: true},
		{Status: &st},
	}
}

// goldenChange is an update of goldenRecord: a message appended, a chunk
// appended to an artifact, another replaced, a new one, an input.
func goldenChange(r *tasks.Record) ([]tasks.Event, error) {
	r.Task.History = append(r.Task.History, a2a.Message{MessageID: "m2", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("this")}})
	r.Task.Status = a2a.TaskStatus{State: a2a.StateWorking}
	r.Input = json.RawMessage(`{"b":true}`)
	r.Group = nil
	return []tasks.Event{
		{Status: &r.Task.Status},
		{Artifact: &a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{a2a.TextPart("y"), {Kind: a2a.PartFile, File: &a2a.FileContent{URI: "u"}}}}, Append: true},
		{Artifact: &a2a.Artifact{ArtifactID: "a\"2", Name: "replaced", Parts: []a2a.Part{a2a.TextPart("z")}}},
		{Artifact: &a2a.Artifact{ArtifactID: "a3", Parts: []a2a.Part{a2a.TextPart("new")}}, LastChunk: true},
	}, nil
}

// goldenRead is what a store holding goldenRecord reads, created
// (changed false, with goldenEvents) or after goldenChange: the record
// and its events. Its messages have the task's ids, those without read
// with them.
func goldenRead(changed bool) (*tasks.Record, []tasks.Event) {
	want := goldenRecord()
	want.Task.History[0].TaskID = "t1" // the one message without it
	evs := goldenEvents()
	want.Seq, want.HistoryLen, want.Input, want.MessageIDs = 3, 2, nil, nil
	if changed {
		want.Task.History = nil
		more, _ := goldenChange(want)
		want.Task.History[0].ContextID, want.Task.History[0].TaskID = "ctx", "t1"
		want.Task.History = append(goldenRecord().Task.History, want.Task.History...)
		want.Task.History[0].TaskID = "t1"
		for _, e := range more[1:] {
			want.Task.Artifacts = tasks.ApplyArtifact(want.Task.Artifacts, e.Artifact, e.Append)
		}
		want.Seq, want.HistoryLen, want.Input, want.MessageIDs = 7, 3, nil, nil
		evs = append(evs, more...)
	}
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	return want, evs
}

// checkGoldenRead fails t unless s reads goldenRead(changed).
func checkGoldenRead(t *testing.T, s *Store, changed bool) {
	t.Helper()
	ctx := context.Background()
	want, wantEvs := goldenRead(changed)
	got, err := s.Get(ctx, want.Owner, "t1", tasks.Whole)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(tasks.Record{})); diff != "" {
		t.Errorf("task read back, changed %v (-want +got):\n%s", changed, diff)
	}
	evs, err := s.Events(ctx, "t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantEvs, evs, cmp.AllowUnexported(tasks.Event{})); diff != "" {
		t.Errorf("events read back, changed %v (-want +got):\n%s", changed, diff)
	}
}

// TestRecordGolden: what the store writes for a task, and for a change
// of it, is pinned in testdata/record-v2.golden (record v2, the layout of
// schema 6: messages without their task's ids), and reads back as it was
// written. A failure means stores written before the change would be read
// by other rules than they were written with: fix the change, or write a
// new record version with a migration; do not -update.
func TestRecordGolden(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "a2ad.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var dump bytes.Buffer
	owner := goldenRecord().Owner
	_, created, err := s.Create(ctx, tasks.IdemKey{Owner: owner, MessageID: "m1"}, goldenRecord(), goldenEvents())
	if err != nil || !created {
		t.Fatalf("create: %v, %v", created, err)
	}
	dump.WriteString("## created\n")
	dumpRecord(t, s.DB(), &dump)
	checkGoldenRead(t, s, false)

	k := tasks.IdemKey{Owner: owner, MessageID: "m2"}
	if _, _, _, err := s.Update(ctx, owner, "t1", &k, tasks.Head, goldenChange); err != nil {
		t.Fatal(err)
	}
	dump.WriteString("## changed\n")
	dumpRecord(t, s.DB(), &dump)
	checkGoldenRead(t, s, true)

	golden.Check(t, filepath.Join("testdata", "record-v2.golden"), dump.Bytes(), *update, "record bytes changed")
	if bytes.Count(dump.Bytes(), []byte(`"contextId":"ctx"`)) != 2 {
		t.Errorf("record v2 holds the context id other than once in each head:\n%s", dump.Bytes())
	}
}

// TestRecordV1StillReads: the keys and values of record v1, as schema 5
// wrote them (testdata/record-v1.golden, the created task, then it
// changed), put in a store of schema 6, read as they did: every message
// with its ids.
func TestRecordV1StillReads(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "record-v1.golden"))
	if err != nil {
		t.Fatal(err)
	}
	created, changed, ok := strings.Cut(strings.TrimPrefix(string(b), "## created\n"), "## changed\n")
	if !ok {
		t.Fatal("record-v1.golden has no changed section")
	}
	for i, section := range []string{created, changed} {
		path := filepath.Join(t.TempDir(), "a2ad.db")
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		testkit.UpdateStore(t, path, func(tx *bolt.Tx) error { return putDump(tx, section) })
		if s, err = Open(path, Options{}); err != nil {
			t.Fatal(err)
		}
		checkGoldenRead(t, s, i == 1)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// putDump puts the keys and values dumpRecord wrote in dump.
func putDump(tx *bolt.Tx, dump string) error {
	lines := strings.Split(strings.TrimSuffix(dump, "\n"), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		bucket, key, _ := strings.Cut(lines[i], " ")
		header, json, _ := strings.Cut(strings.TrimPrefix(lines[i+1], "  "), " ")
		k, err := hex.DecodeString(key)
		if err != nil {
			return err
		}
		v, err := hex.DecodeString(header)
		if err != nil {
			return err
		}
		if err := tx.Bucket([]byte(bucket)).Put(k, append(v, json...)); err != nil {
			return err
		}
	}
	return nil
}

// dumpRecord writes every key and value of the tasks and body buckets:
// keys in hex, values as the hex of their binary header then their JSON.
func dumpRecord(t *testing.T, db *bolt.DB, w *bytes.Buffer) {
	t.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		for _, name := range []string{"tasks", "body"} {
			if err := tx.Bucket([]byte(name)).ForEach(func(k, v []byte) error {
				json := bytes.IndexAny(v, "{[")
				if name == "tasks" {
					h, err := splitHead(v)
					if err != nil {
						return err
					}
					json = len(v) - len(h.json)
				}
				if json < 0 {
					json = len(v)
				}
				fmt.Fprintf(w, "%s %s\n  %s %s\n", name, hex.EncodeToString(k), hex.EncodeToString(v[:json]), v[json:])
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWholeRecordDecodes: a whole record of schemas 2 to 4, as those
// wrote it, decodes (for the migrations and Check), a message without
// ids with its task's.
func TestWholeRecordDecodes(t *testing.T) {
	v := binary.BigEndian.AppendUint64(nil, 9)
	v = append(v, `{"task":{"kind":"task","id":"t1","contextId":"c","status":{"state":"completed","timestamp":"2026-01-02T03:04:05.000Z"},`+
		`"history":[{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"},{"kind":"file","file":{"uri":"u"}}]}],`+
		`"artifacts":[{"artifactId":"a","parts":[{"kind":"data","data":{"x":1}}],"metadata":{"k":"v"}}],"metadata":{"t":1}},`+
		`"owner":"alice","callerTier":"partner","functionId":"demo::echo","input":{"x":1},"messageIds":["m1"],`+
		`"pushConfigs":[{"id":"w","url":"https://h","token":"t","authentication":{"schemes":["Bearer"]}}],`+
		`"seq":9,"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:06.5Z"}`...)
	got, err := decodeWhole("t1", v)
	if err != nil {
		t.Fatal(err)
	}
	want := &tasks.Record{
		Task: a2a.Task{
			ID: "t1", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted, Timestamp: "2026-01-02T03:04:05.000Z"},
			History: []a2a.Message{{MessageID: "m1", ContextID: "c", TaskID: "t1", Role: a2a.RoleUser, Parts: []a2a.Part{
				a2a.TextPart("hi"), {Kind: a2a.PartFile, File: &a2a.FileContent{URI: "u"}}}}},
			Artifacts: []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"x":1}`))}, Metadata: map[string]any{"k": "v"}}},
			Metadata:  map[string]any{"t": 1.0},
		},
		Owner: "alice", CallerTier: "partner", FunctionID: "demo::echo", Input: json.RawMessage(`{"x":1}`), MessageIDs: []string{"m1"},
		PushConfigs: []a2a.PushConfig{{ID: "w", URL: "https://h", Token: "t", Authentication: &a2a.PushAuth{Schemes: []string{"Bearer"}}}},
		Seq:         9, HistoryLen: 1,
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), UpdatedAt: time.Date(2026, 1, 2, 3, 4, 6, 5e8, time.UTC),
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(tasks.Record{})); diff != "" {
		t.Errorf("whole record (-want +got):\n%s", diff)
	}
}

// TestHeadValueRoundTrip: a head value's header (owner, history length,
// the artifacts' index) and JSON read back as written.
func TestHeadValueRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	recs := []struct {
		rec  tasks.Record
		arts []artRef
	}{
		{rec: tasks.Record{Task: a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking}}, CreatedAt: now, UpdatedAt: now}},
		{rec: *goldenRecord(), arts: []artRef{{ID: "a", Chunks: 3, Bytes: 7}, {ID: "é\"", Chunks: 1}}},
	}
	for _, c := range recs {
		c.rec.Seq = 42
		v, err := appendHeadValue(nil, &c.rec, 7, c.arts, record.IDsOf(&c.rec.Task))
		if err != nil {
			t.Fatal(err)
		}
		back, arts, err := decodeHead("t", v)
		if err != nil {
			t.Fatal(err)
		}
		want := c.rec
		want.Task.History, want.Task.Artifacts, want.Input, want.MessageIDs = nil, nil, nil, nil
		want.HistoryLen, want.ArtifactSizes = 7, artifactSizes(c.arts)
		if diff := cmp.Diff(&want, back); diff != "" || !slices.Equal(arts, c.arts) {
			t.Errorf("decoded head (-want +got):\n%s\nindex %v, want %v", diff, arts, c.arts)
		}
	}
	var ops bodyOps
	if err := ops.putInput("t", json.RawMessage(`{`)); err == nil {
		t.Error("invalid input encoded without error")
	}
}

// FuzzMessageRoundTrip: a message the store writes reads back as it was
// (its data compacted), in record v1 and v2 (its ids left out when they
// are its task's, and filled in again).
func FuzzMessageRoundTrip(f *testing.F) {
	f.Add("m", "c", "user", "text", "héllo <&>", `{"a": [1, 2.5, "x"]}`, "f.txt", "https://u", `{"k":{"n":null}}`)
	f.Fuzz(func(t *testing.T, id, ctx, role, kind, text, data, name, uri, meta string) {
		for _, s := range []string{id, ctx, role, kind, text, name, uri} {
			if !utf8.ValidString(s) {
				return // JSON strings hold no invalid UTF-8: it is written as U+FFFD
			}
		}
		var md map[string]any
		if json.Unmarshal([]byte(meta), &md) != nil || len(md) == 0 {
			md = nil // an empty map is written as none
		}
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(data)) != nil {
			compact.Reset()
		}
		msg := a2a.Message{
			MessageID: id, ContextID: ctx, TaskID: "t", Role: a2a.Role(role), Metadata: md, ReferenceTaskIDs: []string{name}, Extensions: []string{uri},
			Parts: []a2a.Part{
				{Kind: a2a.PartKind(kind), Text: text, Metadata: md},
				{Kind: a2a.PartFile, File: &a2a.FileContent{Name: name, URI: uri}},
				a2a.DataPart(compact.Bytes()),
			},
		}
		if len(compact.Bytes()) == 0 {
			msg.Parts = msg.Parts[:2]
		}
		st := a2a.TaskStatus{State: a2a.StateWorking, Message: &msg}
		in := record.IDs{Task: "t", Context: ctx}
		v1, err := record.AppendEvent(nil, &tasks.Event{Seq: 3, Status: &st}, record.IDs{})
		if err != nil {
			return // a part of no kind the record knows
		}
		v2, err := record.AppendEvent(nil, &tasks.Event{Seq: 3, Status: &st}, in)
		if err != nil {
			t.Fatalf("v1 encodes, v2 does not: %v", err)
		}
		if ctx != "" && bytes.Contains(v2, []byte(`"contextId"`)) || bytes.Contains(v2, []byte(`"taskId"`)) {
			t.Errorf("v2 %s keeps the task's ids", v2)
		}
		if kind != string(a2a.PartText) {
			msg.Parts[0].Text = "" // other kinds do not keep it
		}
		if msg.Parts[0].Kind == a2a.PartFile || msg.Parts[0].Kind == a2a.PartData {
			return // a file or data part with the text's fields: not one the store is given
		}
		for _, v := range [][]byte{v1, v2} {
			e, err := record.DecodeEvent(v, in)
			if err != nil {
				t.Fatalf("%s does not decode: %v", v, err)
			}
			if diff := cmp.Diff(&msg, e.Status.Message); diff != "" {
				t.Errorf("%s read back (-want +got):\n%s", v, diff)
			}
		}
	})
}
