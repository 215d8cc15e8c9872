package boltstore_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/storetest"
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
	view(tb, s, func(tx *bolt.Tx) {
		c := tx.Bucket([]byte("body")).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			out[k[len(prefix)]]++
		}
	})
	return out
}

// headSize is the size of task id's value in tasks.
func headSize(tb testing.TB, s *boltstore.Store, id string) int {
	tb.Helper()
	var n int
	view(tb, s, func(tx *bolt.Tx) { n = len(tx.Bucket([]byte("tasks")).Get([]byte(id))) })
	return n
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
		rec, _, _, err := s.Update(ctx, "o", "t1", &k, tasks.Head, storetest.AppendMessage(userMsg(fmt.Sprintf("m%d", i), big), a2a.StateInputRequired))
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
}

// TestArtifactChunksAreKeysOfTheirOwn: a chunk that appends is one key
// more, a replacement drops the chunks, a new id adds an artifact (the
// suite checks that reads assemble them as tasks.ApplyArtifact does).
func TestArtifactChunksAreKeysOfTheirOwn(t *testing.T) {
	s := MustOpen(t, "")
	r := newRecord("t1", "o", a2a.StateWorking, time.Now())
	r.Task.Artifacts = []a2a.Artifact{{ArtifactID: "a0", Parts: []a2a.Part{a2a.TextPart("created")}}}
	create(t, s, r)
	for i, st := range []struct {
		fn   tasks.UpdateFunc
		keys int // artifact keys after the step
	}{
		{storetest.ArtifactChunk("a1", false, "one"), 2},
		{storetest.ArtifactChunk("a1", true, "two", "three"), 3},
		{storetest.ArtifactChunk("a0", true, "more"), 4},
		{storetest.ArtifactChunk("a1", true, "four"), 5},
		{storetest.ArtifactChunk("a1", false, "replaced"), 3}, // a1's two chunks dropped
		{storetest.ArtifactChunk("a2", true, "new, though it says append"), 4},
		{storetest.ArtifactChunk("a1", true, "five"), 5},
	} {
		if _, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Head, st.fn); err != nil {
			t.Fatal(err)
		}
		if n := bodyKeys(t, s, "t1")['a']; n != st.keys {
			t.Errorf("step %d: %d artifact keys, want %d", i, n, st.keys)
		}
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
	for _, fn := range []tasks.UpdateFunc{storetest.ArtifactChunk("a1", false, "y"), storetest.ArtifactChunk("a1", true, "z")} {
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
			testkit.UpdateStore(t, path, tc.fn)
			if diff := cmp.Diff(tc.want, problems(mustCheck(t, path))); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
