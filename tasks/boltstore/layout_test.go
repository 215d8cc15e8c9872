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
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// The body layout written out again here (see layout.go): a task's keys
// start with its id, length-prefixed, and a kind.
func bodyKeyOf(id string, kind byte, rest ...byte) []byte {
	k := binary.AppendUvarint(nil, uint64(len(id)))
	k = append(append(k, id...), kind)
	return append(k, rest...)
}

func historyKeyOf(id string, n uint64) []byte { return bodyKeyOf(id, 'h', u64(n)...) }

func artifactKeyOf(id string, i, j uint32) []byte {
	return bodyKeyOf(id, 'a', binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, i), j)...)
}

// bodyKeys counts task id's body keys by kind.
func bodyKeys(tb testing.TB, s *boltstore.Store, id string) map[byte]int {
	tb.Helper()
	out := map[byte]int{}
	prefix := bodyKeyOf(id, 0)
	prefix = prefix[:len(prefix)-1]
	err := s.DB().View(func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte("body")).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			out[k[len(prefix)]]++
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// headSize is the size of task id's value in tasks.
func headSize(tb testing.TB, s *boltstore.Store, id string) int {
	tb.Helper()
	var n int
	if err := s.DB().View(func(tx *bolt.Tx) error {
		n = len(tx.Bucket([]byte("tasks")).Get([]byte(id)))
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return n
}

func userMsg(id, text string) a2a.Message {
	return a2a.Message{MessageID: id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}
}

// appendMessage is an UpdateFunc that appends msg and moves the task to st.
func appendMessage(msg a2a.Message, st a2a.TaskState) tasks.UpdateFunc {
	return func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.History = append(r.Task.History, msg)
		r.Task.Status = a2a.TaskStatus{State: st}
		return []tasks.Event{statusEvent(st)}, nil
	}
}

// TestAppendsWriteWhatTheyAdd: a message appended to a task is one new
// key, and the head, rewritten with every change, stays the same size
// however long the history grows (issue 13 item 4).
func TestAppendsWriteWhatTheyAdd(t *testing.T) {
	s := MustOpen(t, "")
	at := time.Now()
	r := newRecord("t1", "o", a2a.StateInputRequired, at)
	r.Task.History = []a2a.Message{userMsg("m0", "first")}
	r.Input = json.RawMessage(`{"pad":"` + strings.Repeat("x", 10_000) + `"}`)
	if _, _, err := s.Create(ctx, key("o", "m0", "first"), r, []tasks.Event{statusEvent(a2a.StateInputRequired)}); err != nil {
		t.Fatal(err)
	}
	first := headSize(t, s, "t1")
	if first > 400 {
		t.Errorf("head of a task with a 10 KB input: %d bytes, want the input kept beside it", first)
	}
	big := strings.Repeat("y", 4096)
	for i := 1; i <= 300; i++ {
		k := key("o", fmt.Sprintf("m%d", i), "answer")
		rec, _, _, err := s.Update(ctx, "o", "t1", &k, tasks.Head, appendMessage(userMsg(fmt.Sprintf("m%d", i), big), a2a.StateInputRequired))
		if err != nil {
			t.Fatal(err)
		}
		if rec.HistoryLen != i+1 || len(rec.Task.History) != 0 {
			t.Fatalf("after append %d: HistoryLen %d, %d messages returned with the head scope", i, rec.HistoryLen, len(rec.Task.History))
		}
	}
	// The head grew by the digits of its counters, not by the 1.2 MB of
	// history and 300 message ids.
	if last := headSize(t, s, "t1"); last > first+8 {
		t.Errorf("head grew from %d to %d bytes over 300 appends", first, last)
	}
	if got, want := bodyKeys(t, s, "t1"), map[byte]int{'h': 301, 'i': 1, 'm': 301, 's': 301}; !cmp.Equal(got, want) {
		t.Errorf("body keys by kind = %v, want %v", got, want)
	}
	// The last message is its own key, with its own bytes.
	err := s.DB().View(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte("body")).Get(historyKeyOf("t1", 300))
		var m a2a.Message
		if err := json.Unmarshal(v, &m); err != nil || m.MessageID != "m300" || len(v) > len(big)+200 {
			t.Errorf("message 300: %d bytes, %q, %v", len(v), m.MessageID, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A read returns the last messages it asks for, in order.
	got, err := s.Get(ctx, "o", "t1", tasks.Scope{History: 3})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range got.Task.History {
		ids = append(ids, m.MessageID)
	}
	if want := []string{"m298", "m299", "m300"}; !slices.Equal(ids, want) || got.HistoryLen != 301 {
		t.Errorf("last 3 messages = %v (of %d), want %v (of 301)", ids, got.HistoryLen, want)
	}
	whole, err := s.Get(ctx, "o", "t1", tasks.Whole)
	if err != nil || len(whole.Task.History) != 301 || whole.Task.History[0].MessageID != "m0" {
		t.Fatalf("whole history: %d messages, %v", len(whole.Task.History), err)
	}
	if head, _ := s.Get(ctx, "o", "t1", tasks.Head); len(head.Task.History) != 0 || head.Input != nil {
		t.Errorf("a head read returned %d messages and %d bytes of input", len(head.Task.History), len(head.Input))
	}
	// The input is kept, and read where it is needed: recovery and the
	// operator's view.
	active, err := s.Active(ctx)
	if err != nil || len(active) != 1 || !bytes.Equal(active[0].Input, r.Input) {
		t.Fatalf("Active = %d tasks, %v; want t1 with its input", len(active), err)
	}
}

// artifactEvent is an UpdateFunc that reports one artifact chunk.
func artifactEvent(id string, appendParts bool, parts ...string) tasks.UpdateFunc {
	return func(r *tasks.Record) ([]tasks.Event, error) {
		a := &a2a.Artifact{ArtifactID: id, Name: "n-" + id}
		for _, p := range parts {
			a.Parts = append(a.Parts, a2a.TextPart(p))
		}
		return []tasks.Event{{Artifact: a, Append: appendParts}}, nil
	}
}

// TestArtifactEventsAreAppliedAsClientsDo: the store applies an update's
// artifact events to the stored artifacts as tasks.ApplyArtifact does: a
// chunk that appends is one key more, a replacement drops the chunks, a
// new id adds an artifact. Every read, after a reopen too, assembles what
// the events add up to.
func TestArtifactEventsAreAppliedAsClientsDo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := newRecord("t1", "o", a2a.StateWorking, time.Now())
	r.Task.Artifacts = []a2a.Artifact{{ArtifactID: "a0", Parts: []a2a.Part{a2a.TextPart("created")}}}
	create(t, s, r)
	want := slices.Clone(r.Task.Artifacts)
	var got *tasks.Record
	steps := []struct {
		fn   tasks.UpdateFunc
		keys int // artifact keys after the step
	}{
		{artifactEvent("a1", false, "one"), 2},
		{artifactEvent("a1", true, "two", "three"), 3},
		{artifactEvent("a0", true, "more"), 4},
		{artifactEvent("a1", true, "four"), 5},
		{artifactEvent("a1", false, "replaced"), 3}, // a1's two chunks dropped
		{artifactEvent("a2", true, "new, though it says append"), 4},
		{artifactEvent("a1", true, "five"), 5},
	}
	for i, st := range steps {
		evs, err := st.fn(nil)
		if err != nil {
			t.Fatal(err)
		}
		want = tasks.ApplyArtifact(want, evs[0].Artifact, evs[0].Append)
		rec, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Whole, st.fn)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, rec.Task.Artifacts); diff != "" {
			t.Fatalf("step %d: Update's artifacts (-want +got):\n%s", i, diff)
		}
		got, err = s.Get(ctx, "o", "t1", tasks.Whole)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got.Task.Artifacts); diff != "" {
			t.Fatalf("step %d: Get's artifacts (-want +got):\n%s", i, diff)
		}
		if n := bodyKeys(t, s, "t1")['a']; n != st.keys {
			t.Errorf("step %d: %d artifact keys, want %d", i, n, st.keys)
		}
	}
	// A new input replaces the old (the store's count of bytes follows:
	// the check below compares it with what the task takes).
	for _, in := range []string{`{"n":1}`, `{"n":"` + strings.Repeat("x", 500) + `"}`} {
		if _, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Head, func(r *tasks.Record) ([]tasks.Event, error) {
			r.Input = json.RawMessage(in)
			return []tasks.Event{}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if r := mustCheckOpen(t, s); !r.Clean() {
		t.Errorf("check: %q", problems(r))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = MustOpen(t, path)
	got, err = s.Get(ctx, "o", "t1", tasks.Whole)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Task.Artifacts); diff != "" {
		t.Fatalf("after a reopen (-want +got):\n%s", diff)
	}
	if head, _ := s.Get(ctx, "o", "t1", tasks.Scope{History: -1}); head.Task.Artifacts != nil {
		t.Errorf("a read without artifacts returned %d", len(head.Task.Artifacts))
	}
	if r := mustCheckOpen(t, s); !r.Clean() {
		t.Errorf("check: %q", problems(r))
	}
}

func mustCheckOpen(tb testing.TB, s *boltstore.Store) *boltstore.Report {
	tb.Helper()
	r, err := s.Check(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// TestApplyArtifactLeavesItsInputAlone: the fold returns a new slice and
// never writes through the one it was given, which readers may share.
func TestApplyArtifactLeavesItsInputAlone(t *testing.T) {
	arts := []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("1")}}}
	before := slices.Clone(arts)
	out := tasks.ApplyArtifact(arts, &a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("2")}}, true)
	if diff := cmp.Diff(before, arts); diff != "" {
		t.Errorf("append changed its input (-before +after):\n%s", diff)
	}
	if len(out) != 1 || len(out[0].Parts) != 2 {
		t.Errorf("append = %+v", out)
	}
	out = tasks.ApplyArtifact(arts, &a2a.Artifact{ArtifactID: "a", Name: "x"}, false)
	if diff := cmp.Diff(before, arts); diff != "" || out[0].Name != "x" {
		t.Errorf("replace changed its input, or did not replace: %+v", out)
	}
}

// TestForeignTaskIsNotReadAtAll: a read, an update or a change of
// webhooks of another owner's task fails before anything of the task is
// read, with ErrNotOwner (an ErrNotFound); fn is never called.
func TestForeignTaskIsNotReadAtAll(t *testing.T) {
	s := MustOpen(t, "")
	r := newRecord("t1", "alice", a2a.StateWorking, time.Now())
	r.Task.History = []a2a.Message{userMsg("m", strings.Repeat("x", 100_000))}
	create(t, s, r)
	called := false
	_, _, _, err := s.Update(ctx, "bob", "t1", nil, tasks.Whole, func(*tasks.Record) ([]tasks.Event, error) {
		called = true
		return nil, nil
	})
	if err != tasks.ErrNotOwner || called { //nolint:errorlint // the very error
		t.Errorf("Update of a foreign task = %v (fn called: %v), want ErrNotOwner", err, called)
	}
	if _, err := s.PushConfigs(ctx, "bob", "t1", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) {
		called = true
		return c, nil
	}); err != tasks.ErrNotOwner || called { //nolint:errorlint // the very error
		t.Errorf("PushConfigs of a foreign task = %v (fn called: %v), want ErrNotOwner", err, called)
	}
	for _, c := range []struct {
		owner, id string
		want      error
	}{
		{"bob", "t1", tasks.ErrNotOwner}, {"alice", "t0", tasks.ErrNotFound}, {"alice", "t2", tasks.ErrNotFound},
		{"alic", "t1", tasks.ErrNotOwner}, {"alicee", "t1", tasks.ErrNotOwner}, {"", "t1", tasks.ErrNotOwner},
	} {
		if _, err := s.Get(ctx, c.owner, c.id, tasks.Whole); err != c.want { //nolint:errorlint // the very error
			t.Errorf("Get(%q, %q) = %v, want %v", c.owner, c.id, err, c.want)
		}
	}
}

// seedBody writes one task through the store's API with a body of every
// kind, and closes the store:
//
//	t-1 owner o: 3 history messages, artifacts a0 (1 key) and a1 (2 keys:
//	    the artifact, one appended chunk), an input, message id m-1
func seedBody(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "a2ad.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	r := newRecord("t-1", "o", a2a.StateWorking, seedTime)
	r.Task.History = []a2a.Message{userMsg("h0", "zero"), userMsg("h1", "one"), userMsg("h2", "two")}
	r.Task.Artifacts = []a2a.Artifact{{ArtifactID: "a0", Parts: []a2a.Part{a2a.TextPart("x")}}}
	r.Input = json.RawMessage(`{"in":1}`)
	if _, _, err := s.Create(ctx, key("o", "m-1", "1"), r, []tasks.Event{statusEvent(a2a.StateWorking)}); err != nil {
		tb.Fatal(err)
	}
	for _, fn := range []tasks.UpdateFunc{artifactEvent("a1", false, "y"), artifactEvent("a1", true, "z")} {
		if _, _, _, err := s.Update(ctx, "o", "t-1", nil, tasks.Head, fn); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestCheckBodyInvariants breaks each promise of the body bucket and pins
// what Check says.
func TestCheckBodyInvariants(t *testing.T) {
	if r := mustCheck(t, seedBody(t)); !r.Clean() {
		t.Fatalf("seeded store: %q", problems(r))
	}
	body := func(tx *bolt.Tx) *bolt.Bucket { return tx.Bucket([]byte("body")) }
	for _, tc := range []struct {
		name string
		fn   func(tx *bolt.Tx) error
		want []string
	}{
		{
			name: "history message missing",
			fn:   func(tx *bolt.Tx) error { return body(tx).Delete(historyKeyOf("t-1", 1)) },
			want: []string{`body "t-1": 1 of the task's 3 history messages missing`},
		},
		{
			name: "history message past the history",
			fn:   func(tx *bolt.Tx) error { return body(tx).Put(historyKeyOf("t-1", 5), []byte(`{"messageId":"x"}`)) },
			want: []string{`body "t-1" message 5: past the task's history of 3 messages`},
		},
		{
			name: "history message that does not decode",
			fn:   func(tx *bolt.Tx) error { return body(tx).Put(historyKeyOf("t-1", 0), []byte(`{"messageId":7}`)) },
			want: []string{`body "t-1" message 0: does not decode: field messageId: a JSON number where a string belongs`},
		},
		{
			name: "artifact key past the artifact's chunks",
			fn:   func(tx *bolt.Tx) error { return body(tx).Put(artifactKeyOf("t-1", 1, 2), []byte(`[]`)) },
			want: []string{`body "t-1" artifact 1 chunk 2: past the artifact's 2 keys`},
		},
		{
			name: "artifact past the index",
			fn: func(tx *bolt.Tx) error {
				return body(tx).Put(artifactKeyOf("t-1", 2, 0), []byte(`{"artifactId":"a2","parts":[]}`))
			},
			want: []string{`body "t-1" artifact 2 chunk 0: past the task's 2 artifacts`},
		},
		{
			name: "artifact under another id than the index's",
			fn: func(tx *bolt.Tx) error {
				return body(tx).Put(artifactKeyOf("t-1", 0, 0), []byte(`{"artifactId":"zz","parts":[{"kind":"text","text":"x"}]}`))
			},
			want: []string{`body "t-1" artifact 0 chunk 0: holds artifact "zz", but the task's index names "a0"`},
		},
		{
			name: "artifact chunk missing",
			fn:   func(tx *bolt.Tx) error { return body(tx).Delete(artifactKeyOf("t-1", 1, 1)) },
			want: []string{`body "t-1": 1 of the task's 3 artifact keys missing`},
		},
		{
			name: "chunk that does not decode",
			fn:   func(tx *bolt.Tx) error { return body(tx).Put(artifactKeyOf("t-1", 1, 1), []byte(`{}`)) },
			want: []string{`body "t-1" artifact 1 chunk 1: does not decode: a JSON object where an array belongs`},
		},
		{
			name: "artifact of another size than the index's",
			fn: func(tx *bolt.Tx) error {
				return body(tx).Put(artifactKeyOf("t-1", 1, 1), []byte(`[{"kind":"text","text":"zzz"}]`))
			},
			want: []string{`body "t-1" artifact 1: holds 4 bytes, but the task's index says 2`},
		},
		{
			name: "input that is not JSON",
			fn:   func(tx *bolt.Tx) error { return body(tx).Put(bodyKeyOf("t-1", 'i'), []byte(`{`)) },
			want: []string{`body "t-1" input: is not JSON`},
		},
		{
			name: "body of no task",
			fn:   func(tx *bolt.Tx) error { return body(tx).Put(historyKeyOf("t-ghost", 0), []byte(`{"messageId":"g"}`)) },
			want: []string{`body "t-ghost" message 0: no such task`},
		},
		{
			name: "body key that does not parse",
			fn:   func(tx *bolt.Tx) error { return body(tx).Put(bodyKeyOf("t-1", 'h', 1, 2), nil) },
			want: []string{`body "\x03t-1h\x01\x02": key does not parse`},
		},
		{
			name: "message id without its idempotency key",
			fn:   func(tx *bolt.Tx) error { return body(tx).Put(bodyKeyOf("t-1", 'm', []byte("m-9")...), nil) },
			want: []string{`idem "o" "m-9": missing: task "t-1" holds this message id`},
		},
		{
			name: "idempotency key the task does not hold",
			fn:   func(tx *bolt.Tx) error { return body(tx).Delete(bodyKeyOf("t-1", 'm', []byte("m-1")...)) },
			want: []string{`idem "o" "m-1": task "t-1" does not hold this message id`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := seedBody(t)
			mutate(t, path, tc.fn)
			if diff := cmp.Diff(tc.want, problems(mustCheck(t, path))); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
