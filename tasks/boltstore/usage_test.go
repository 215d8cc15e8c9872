package boltstore_test

import (
	"errors"
	"fmt"
	"os"
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

func usage(tb testing.TB, s *boltstore.Store, owner string) tasks.Usage {
	tb.Helper()
	u, err := s.Usage(ctx, owner)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// rebuilt copies s, drops the copy's totals (as a store written before
// they were kept) and opens it, which computes them again from what is
// stored; it returns the copy's usage of each owner.
func rebuilt(tb testing.TB, s *boltstore.Store, owners ...string) map[string]tasks.Usage {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "copy.db")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Backup(ctx, f, nil); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	forgetUsage(tb, path)
	c, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	out := map[string]tasks.Usage{}
	for _, o := range owners {
		out[o] = usage(tb, c, o)
	}
	return out
}

// forgetUsage makes the file at path a store written before the totals
// were kept: no usage bucket, no marker.
func forgetUsage(tb testing.TB, path string) {
	tb.Helper()
	testkit.UpdateStore(tb, path, func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("usage")); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Delete([]byte("usage"))
	})
}

// sameAsRebuilt fails unless the running totals of s are those a rebuild
// computes.
func sameAsRebuilt(tb testing.TB, s *boltstore.Store, owners ...string) {
	tb.Helper()
	got := map[string]tasks.Usage{}
	for _, o := range owners {
		got[o] = usage(tb, s, o)
	}
	if diff := cmp.Diff(rebuilt(tb, s, owners...), got); diff != "" {
		tb.Fatalf("running totals differ from a rebuild (-rebuilt +running):\n%s", diff)
	}
}

func withInput(r *tasks.Record, n int) *tasks.Record {
	r.Input = []byte(`"` + strings.Repeat("x", n) + `"`)
	return r
}

// TestUsageFollowsEveryWrite: creates, follow-ups, transitions, artifacts,
// webhooks and expiry keep each owner's totals what a rebuild from the
// stored data computes, and an owner whose tasks all expired stores
// nothing.
func TestUsageFollowsEveryWrite(t *testing.T) {
	s := MustOpen(t, "")
	old := time.Now().Add(-48 * time.Hour)
	if u := usage(t, s, "alice"); u != (tasks.Usage{}) {
		t.Fatalf("usage of a new store = %+v, want zero", u)
	}

	for i := range 3 {
		id := fmt.Sprintf("a-%d", i)
		if _, _, err := s.Create(ctx, key("alice", "m-"+id, id), withInput(newRecord(id, "alice", a2a.StateSubmitted, old), 1000),
			[]tasks.Event{statusEvent(a2a.StateSubmitted)}); err != nil {
			t.Fatal(err)
		}
	}
	create(t, s, newRecord("b-0", "bob", a2a.StateWorking, old))
	u := usage(t, s, "alice")
	if u.Tasks != 3 || u.Bytes < 3000 {
		t.Fatalf("alice after 3 creates of 1000-byte inputs = %+v, want 3 tasks and at least 3000 bytes", u)
	}
	sameAsRebuilt(t, s, "alice", "bob")

	// A follow-up message adds what it adds: the message (twice: in the
	// record and its event) and its key.
	before := usage(t, s, "alice").Bytes
	follow := key("alice", "m-a-0b", "more")
	big := strings.Repeat("y", 5000)
	if _, _, _, err := s.Update(ctx, "alice", "a-0", &follow, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.History = append(r.Task.History, a2a.Message{MessageID: "m-a-0b", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(big)}})
		r.Task.Status.State = a2a.StateWorking
		return []tasks.Event{statusEvent(a2a.StateWorking)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if grew := usage(t, s, "alice").Bytes - before; grew < 5000 || grew > 5500 {
		t.Fatalf("a 5000-byte message grew alice by %d bytes", grew)
	}

	// An artifact, a transition that shrinks the record, a webhook.
	if _, _, _, err := s.Update(ctx, "alice", "a-1", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		art := a2a.Artifact{ArtifactID: "x", Parts: []a2a.Part{a2a.TextPart(strings.Repeat("z", 3000))}}
		r.Task.Artifacts = append(r.Task.Artifacts, art)
		r.Input = nil
		r.Task.Status.State = a2a.StateCompleted
		r.UpdatedAt = old
		return []tasks.Event{{Artifact: &art}, statusEvent(a2a.StateCompleted)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PushConfigs(ctx, "alice", "a-2", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) {
		return append(c, a2a.PushConfig{ID: "w", URL: "https://example.com/hook"}), nil
	}); err != nil {
		t.Fatal(err)
	}
	sameAsRebuilt(t, s, "alice", "bob")

	// Expiry subtracts each task's size; the last one leaves nothing.
	for _, id := range []string{"a-0", "a-2"} {
		if _, _, _, err := s.Update(ctx, "alice", id, nil, tasks.Whole, setState(a2a.StateCompleted, old)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := s.Update(ctx, "bob", "b-0", nil, tasks.Whole, setState(a2a.StateCompleted, old)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Expire(ctx, old.Add(time.Second), 2); err != nil || n != 2 {
		t.Fatalf("Expire = %d, %v; want 2", n, err)
	}
	sameAsRebuilt(t, s, "alice", "bob")
	if n, err := s.Expire(ctx, old.Add(time.Second), 100); err != nil || n != 2 {
		t.Fatalf("Expire = %d, %v; want 2", n, err)
	}
	for _, o := range []string{"alice", "bob"} {
		if u := usage(t, s, o); u != (tasks.Usage{}) {
			t.Errorf("%s after every task expired = %+v, want zero", o, u)
		}
	}
	if err := s.DB().View(func(tx *bolt.Tx) error {
		if n := tx.Bucket([]byte("usage")).Stats().KeyN; n != 0 {
			t.Errorf("usage holds %d keys after every task expired", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// snapshot is every key and value of the store's buckets, and their
// sequences.
func snapshot(tb testing.TB, s *boltstore.Store) string {
	tb.Helper()
	dump, _ := testkit.DumpStore(tb, s.DB())
	return dump
}

// TestQuotaRefusalLeavesTheFileAsItWas: a refused create or message
// leaves the file byte for byte as it was, the numbers of the refusal are
// the owner's usage, and the totals stay those a rebuild computes (the
// suite checks the rest of the quota's contract).
func TestQuotaRefusalLeavesTheFileAsItWas(t *testing.T) {
	s := MustOpen(t, "")
	now := time.Now()
	two := tasks.Quota{Tasks: 2}
	withQuota := func(owner, msgID string, q tasks.Quota) tasks.IdemKey {
		k := key(owner, msgID, msgID)
		k.Quota = q
		return k
	}
	for _, id := range []string{"t-0", "t-1"} {
		if _, _, err := s.Create(ctx, withQuota("alice", "m-"+id, two), newRecord(id, "alice", a2a.StateInputRequired, now), nil); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, s)
	_, _, err := s.Create(ctx, withQuota("alice", "m-t-2", two), newRecord("t-2", "alice", a2a.StateSubmitted, now), []tasks.Event{statusEvent(a2a.StateSubmitted)})
	if !errors.Is(err, tasks.ErrQuotaExceeded) {
		t.Fatalf("third task of a 2-task quota = %v", err)
	}
	if diff := cmp.Diff(before, snapshot(t, s)); diff != "" {
		t.Fatalf("a refused create changed the store:\n%s", diff)
	}
	used := usage(t, s, "alice").Bytes
	big := withQuota("alice", "m-big", tasks.Quota{Bytes: used + 1000})
	_, _, _, err = s.Update(ctx, "alice", "t-0", &big, tasks.Whole, storetest.AppendMessage(userMsg("x", strings.Repeat("y", 2000)), a2a.StateWorking))
	var qe *tasks.QuotaError
	if !errors.As(err, &qe) || *qe != (tasks.QuotaError{Which: tasks.QuotaBytes, Used: used, Limit: used + 1000}) {
		t.Fatalf("a 2000-byte message with 1000 bytes left = %v, want %d bytes used", err, used)
	}
	if diff := cmp.Diff(before, snapshot(t, s)); diff != "" {
		t.Fatalf("a refused message changed the store:\n%s", diff)
	}
	sameAsRebuilt(t, s, "alice")
}

// TestOpenComputesUsageOfAnOldStore: a store written before the totals
// were kept (a schema 3 store without them, and a schema 2 store) gets
// them at open, equal to what the writes would have kept.
func TestOpenComputesUsageOfAnOldStore(t *testing.T) {
	path := seedStore(t)
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tasks.Usage{"alice": usage(t, s, "alice"), "bob": usage(t, s, "bob")}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if want["alice"].Tasks != 2 || want["alice"].Bytes == 0 || want["bob"].Tasks != 2 {
		t.Fatalf("seeded usage = %+v", want)
	}
	forgetUsage(t, path)
	if r := mustCheck(t, path); !r.Clean() {
		t.Fatalf("a store without totals is not clean:\n%s", strings.Join(problems(r), "\n"))
	}
	s = MustOpen(t, path)
	got := map[string]tasks.Usage{"alice": usage(t, s, "alice"), "bob": usage(t, s, "bob")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("usage computed at open (-kept +computed):\n%s", diff)
	}

	// Schema 2: migrated, then counted.
	path2 := filepath.Join(t.TempDir(), "a2ad.db")
	var recs []*tasks.Record
	for i := range 6 {
		recs = append(recs, newRecord(fmt.Sprintf("t%d", i), []string{"alice", "bob"}[i%2], a2a.StateWorking, seedTime))
	}
	writeSchema2(t, path2, recs)
	s2 := MustOpen(t, path2)
	for _, o := range []string{"alice", "bob"} {
		if u := usage(t, s2, o); u.Tasks != 3 || u.Bytes < 3*200 {
			t.Errorf("%s in a migrated schema 2 store = %+v, want 3 tasks and some bytes", o, u)
		}
	}
	sameAsRebuilt(t, s2, "alice", "bob")
}

// TestCheckUsage: Check reports totals that do not add up, once the rest
// of the store is sound.
func TestCheckUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(tx *bolt.Tx) error
		want []string // %d: alice's total, then bob's
	}{
		{
			name: "usage off",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("usage")).Put(ownerKeyOf("alice", ""), u64(5)) },
			want: []string{`usage "alice": is 5 bytes, but the owner's tasks take %[1]d`},
		},
		{
			name: "usage missing",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("usage")).Delete(ownerKeyOf("bob", "")) },
			want: []string{`usage "bob": missing: the owner's tasks take %[2]d bytes`},
		},
		{
			name: "usage of an owner without tasks",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("usage")).Put(ownerKeyOf("carol", ""), u64(9)) },
			want: []string{`usage "carol": is 9 bytes, but the owner's tasks take 0`},
		},
		{
			name: "usage of zero",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("usage")).Put(ownerKeyOf("carol", ""), u64(0)) },
			want: []string{`usage "carol": is zero (the entry should be gone)`},
		},
		{
			name: "usage that does not parse",
			fn:   func(tx *bolt.Tx) error { return tx.Bucket([]byte("usage")).Put(ownerKeyOf("alice", ""), []byte("x")) },
			want: []string{`usage "alice": value does not parse`}, // and not compared: another problem
		},
		{
			name: "an event changed behind the store's back: reported once, as an event",
			fn: func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("body")).Put(eventKeyOf("t-2", 1), []byte("{}"))
			},
			want: []string{`body "t-2" event 1: event holds sequence 0`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := seedStore(t)
			var alice, bob uint64
			testkit.UpdateStore(t, path, func(tx *bolt.Tx) error {
				alice = be(tx.Bucket([]byte("usage")).Get(ownerKeyOf("alice", "")))
				bob = be(tx.Bucket([]byte("usage")).Get(ownerKeyOf("bob", "")))
				return nil
			})
			if alice == 0 || bob == 0 {
				t.Fatalf("seeded usage: alice %d, bob %d", alice, bob)
			}
			testkit.UpdateStore(t, path, tc.fn)
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				if strings.Contains(w, "%") {
					w = fmt.Sprintf(w, alice, bob)
				}
				want[i] = w
			}
			if diff := cmp.Diff(want, problems(mustCheck(t, path))); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
	// A store without tasks and a stray total.
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	testkit.UpdateStore(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte("usage")).Put(ownerKeyOf("dave", ""), u64(3)) })
	if diff := cmp.Diff([]string{`usage "dave": is 3 bytes, but the store holds no task`}, problems(mustCheck(t, path))); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func be(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	var n uint64
	for _, b := range v {
		n = n<<8 | uint64(b)
	}
	return n
}
