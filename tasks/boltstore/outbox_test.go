package boltstore_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/push"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// mustClean fails the test unless the open store's indexes, the outbox's
// included, agree.
func mustClean(tb testing.TB, s *boltstore.Store) {
	tb.Helper()
	r, err := s.Check(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if !r.Clean() {
		tb.Fatalf("store check:\n%s", strings.Join(problems(r), "\n"))
	}
}

// TestDueReadsNoFurtherThanItsBatch: a poll reads no further than its
// batch: an entry past it that does not even decode is never seen.
func TestDueReadsNoFurtherThanItsBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s := MustOpen(t, path)
	const n = 12
	for i := range n {
		id := fmt.Sprintf("t%02d", i)
		storetest.WithHooks(t, s, id, 1)
		storetest.MustUpdate(t, s, "o", id, storetest.Flip(a2a.StateCompleted))
	}
	now := time.Now()
	all, err := s.Due(ctx, now, 1000)
	if err != nil || len(all) != n {
		t.Fatalf("Due = %d, %v; want %d", len(all), err, n)
	}
	// Damage the entry of the last delivery due.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.UpdateStore(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte("outbox")).Put(u64(all[n-1].ID), []byte("{x")) })
	s, err = boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Due(ctx, now, 10); err != nil || len(got) != 10 {
		t.Fatalf("a batch before the damaged entry: %d, %v", len(got), err)
	}
	want := fmt.Sprintf("decode delivery %d: invalid character 'x' looking for beginning of object key string", all[n-1].ID)
	if _, err := s.Due(ctx, now, 1000); err == nil || err.Error() != want {
		t.Fatalf("a batch reaching the damaged entry: %v, want %s", err, want)
	}
}

// TestDeadLetterHoldsNoSecret: what the dead bucket keeps of a delivery
// given up on is its URL, never its token, credentials or body.
func TestDeadLetterHoldsNoSecret(t *testing.T) {
	s := MustOpen(t, "")
	storetest.GiveUp(t, s, "t1")
	dead, err := s.DeadLetters(ctx, 0, 10)
	if err != nil || len(dead) != 1 {
		t.Fatalf("DeadLetters = %+v, %v", dead, err)
	}
	view(t, s, func(tx *bolt.Tx) {
		v := string(tx.Bucket([]byte("dead")).Get(u64(dead[0].ID)))
		for _, secret := range []string{"tok-secret", "cred-secret", `"kind"`} {
			if strings.Contains(v, secret) {
				t.Errorf("the dead letter holds %q: %s", secret, v)
			}
		}
		if !strings.Contains(v, "https://hooks.example/t1") {
			t.Errorf("the dead letter lacks its URL: %s", v)
		}
	})
	mustClean(t, s)
}

// TestUpdateKeepsAWebhookAddedMeanwhile: a transition racing a webhook
// change must not write back the record it read before the change. The
// UpdateFunc changes the webhooks itself, which only a store that runs fn
// outside its write (as this one does) allows; the suite races the two
// from goroutines.
func TestUpdateKeepsAWebhookAddedMeanwhile(t *testing.T) {
	s := MustOpen(t, "")
	if _, _, err := s.Create(ctx, key("o", "m", "m"), newRecord("t", "o", a2a.StateWorking, time.Now()), nil); err != nil {
		t.Fatal(err)
	}
	added := false
	_, _, _, err := s.Update(ctx, "o", "t", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		if !added {
			// The webhook lands between Update's read and its write.
			added = true
			if _, err := s.PushConfigs(ctx, "o", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) {
				return append(c, a2a.PushConfig{ID: "w", URL: "https://x/"}), nil
			}); err != nil {
				return nil, err
			}
		}
		r.Task.Status.State = a2a.StateCompleted
		return []tasks.Event{statusEvent(a2a.StateCompleted)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, "o", "t", tasks.Whole)
	if got.State() != a2a.StateCompleted || len(got.PushConfigs) != 1 {
		t.Fatalf("after the race: state %s, %d webhooks; want completed with the webhook", got.State(), len(got.PushConfigs))
	}
}

// oldDelivery is a delivery as schema 3 kept it: a copy of the task.
type oldDelivery struct {
	TaskID    string          `json:"taskId"`
	ConfigID  string          `json:"configId"`
	URL       string          `json:"url"`
	Token     string          `json:"token,omitempty"`
	Body      json.RawMessage `json:"body"`
	Attempts  int             `json:"attempts"`
	NextAt    time.Time       `json:"nextAt"`
	LastError string          `json:"lastError,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	DeadAt    time.Time       `json:"deadAt,omitzero"`
}

// TestOpenMigratesSchema3Outbox: a schema 3 store whose outbox holds
// three copies for one webhook, one for another, and one of a task
// retention deleted opens as schema 5 (4, then 5) with one delivery per webhook (the
// oldest, with its attempts), the outbox sequence kept, old dead letters
// readable, and a clean check.
func TestOpenMigratesSchema3Outbox(t *testing.T) {
	// A store of the whole-record layout (schemas 2 to 4), taken to 3.
	path := filepath.Join(t.TempDir(), "a2ad.db")
	last := newRecord("t1", "o", a2a.StateInputRequired, time.Now())
	for i := range 2 {
		last.PushConfigs = append(last.PushConfigs, a2a.PushConfig{ID: fmt.Sprintf("c%d", i), URL: fmt.Sprintf("https://x.example/t1/%d", i)})
	}
	writeSchema2(t, path, []*tasks.Record{last})
	if err := boltstore.MigrateTo(path, "3", -1); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	body := json.RawMessage(`{"kind":"task","id":"t1","history":["` + strings.Repeat("x", 4096) + `"]}`)
	old := []oldDelivery{
		{TaskID: "t1", ConfigID: "c0", URL: "https://x.example/t1/0", Token: "tok", Body: body, Attempts: 3, NextAt: at.Add(time.Minute), LastError: "HTTP 503", CreatedAt: at},
		{TaskID: "gone", ConfigID: "c0", URL: "https://x.example/gone", Body: body, NextAt: at, CreatedAt: at},
		{TaskID: "t1", ConfigID: "c0", URL: "https://x.example/t1/0", Body: body, NextAt: at.Add(time.Second), CreatedAt: at.Add(time.Second)},
		{TaskID: "t1", ConfigID: "c1", URL: "https://x.example/t1/1", Body: body, NextAt: at.Add(2 * time.Second), CreatedAt: at.Add(2 * time.Second)},
		{TaskID: "t1", ConfigID: "c0", URL: "https://x.example/t1/0", Body: body, NextAt: at.Add(3 * time.Second), CreatedAt: at.Add(3 * time.Second)},
	}
	testkit.UpdateStore(t, path, func(tx *bolt.Tx) error {
		for _, b := range []string{"pending", "due", "outbox"} {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
		}
		ob, err := tx.CreateBucket([]byte("outbox"))
		if err != nil {
			return err
		}
		for i, d := range old {
			v, _ := json.Marshal(d)
			if err := ob.Put(u64(uint64(10+i)), v); err != nil {
				return err
			}
		}
		if err := ob.SetSequence(20); err != nil {
			return err
		}
		dead := oldDelivery{TaskID: "t0", ConfigID: "c", URL: "https://x.example/dead", Token: "tok", Body: body, Attempts: 8, LastError: "HTTP 500", CreatedAt: at, DeadAt: at.Add(time.Hour)}
		v, _ := json.Marshal(dead)
		if err := tx.Bucket([]byte("dead")).Put(u64(3), v); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte("3"))
	})
	if r := mustCheck(t, path); !r.Clean() || r.Schema != "3" {
		t.Fatalf("the schema 3 file: schema %q, problems %q", r.Schema, problems(r))
	}

	s := MustOpen(t, path)
	_ = s.DB().View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("schema")); string(v) != "6" {
			t.Errorf("schema after open = %q, want \"6\"", v)
		}
		if seq := tx.Bucket([]byte("outbox")).Sequence(); seq != 20 {
			t.Errorf("outbox sequence after migration = %d, want 20", seq)
		}
		return nil
	})
	mustClean(t, s)
	due, err := s.Due(ctx, at.Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []push.Delivery{
		{ID: 13, TaskID: "t1", ConfigID: "c1", NextAt: at.Add(2 * time.Second)},
		{ID: 10, TaskID: "t1", ConfigID: "c0", Attempts: 3, NextAt: at.Add(time.Minute), LastError: "HTTP 503"},
	}
	if diff := cmp.Diff(want, due); diff != "" {
		t.Fatalf("deliveries after migration (-want +got):\n%s", diff)
	}
	d := due[1]
	if err := s.Request(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if d.Seq != last.Seq || d.URL != "https://x.example/t1/0" || d.Task == nil || d.Task.ID != "t1" {
		t.Fatalf("request after migration: seq %d (want %d), url %s, task %+v", d.Seq, last.Seq, d.URL, d.Task)
	}
	if err := s.Delivered(ctx, d.ID, d.Seq); err != nil {
		t.Fatal(err)
	}
	dead, err := s.DeadLetters(ctx, 0, 10)
	if err != nil || len(dead) != 1 || dead[0].ID != 3 || dead[0].URL != "https://x.example/dead" || dead[0].Attempts != 8 {
		t.Fatalf("old dead letters after migration: %+v, %v", dead, err)
	}
	// New deliveries take ids after the old ones.
	storetest.WithHooks(t, s, "t2", 1)
	storetest.MustUpdate(t, s, "o", "t2", storetest.Flip(a2a.StateCompleted))
	due, _ = s.Due(ctx, time.Now(), 10)
	if len(due) != 2 || due[1].TaskID != "t2" || due[1].ID != 21 {
		t.Fatalf("after migration, Due = %+v; want t2's delivery with id 21 last", due)
	}
	mustClean(t, s)
}

// BenchmarkOutboxDue measures one poll of the sender (a batch of 16 due
// deliveries) with a backlog of n deliveries: its cost must not grow
// with n.
func BenchmarkOutboxDue(b *testing.B) {
	for _, n := range []int{1_000, 50_000} {
		b.Run(fmt.Sprintf("backlog=%d", n), func(b *testing.B) {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "a2ad.db"), boltstore.Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const hooks = 10
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := w; i < n/hooks; i += 8 {
						rec := newRecord(fmt.Sprintf("t%06d", i), "o", a2a.StateCompleted, time.Now())
						for c := range hooks {
							rec.PushConfigs = append(rec.PushConfigs, a2a.PushConfig{ID: fmt.Sprint(c), URL: "https://x.example/"})
						}
						if _, _, err := s.Create(ctx, key("o", rec.Task.ID, rec.Task.ID), rec, []tasks.Event{statusEvent(a2a.StateCompleted)}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if got, _ := s.OutboxDepth(ctx); got != n {
				b.Fatalf("backlog %d, want %d", got, n)
			}
			now := time.Now()
			for b.Loop() {
				ds, err := s.Due(ctx, now, 16)
				if err != nil || len(ds) != 16 {
					b.Fatalf("Due = %d, %v", len(ds), err)
				}
			}
			var data int64
			_ = s.DB().View(func(tx *bolt.Tx) error { data = tx.Size(); return nil })
			b.ReportMetric(float64(data)/float64(n), "store-B/delivery")
		})
	}
}
