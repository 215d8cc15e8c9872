package boltstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/push"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// flip moves a task to st.
func flip(st a2a.TaskState) tasks.UpdateFunc {
	return func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = st
		return []tasks.Event{statusEvent(st)}, nil
	}
}

func mustUpdate(tb testing.TB, s *boltstore.Store, owner, id string, fn tasks.UpdateFunc) *tasks.Record {
	tb.Helper()
	r, _, _, err := s.Update(ctx, owner, id, nil, tasks.Whole, fn)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

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

// withHooks creates task id of owner "o", working, with n webhooks c0..cn-1.
func withHooks(tb testing.TB, s *boltstore.Store, id string, n int) {
	tb.Helper()
	rec := newRecord(id, "o", a2a.StateWorking, time.Now())
	for i := range n {
		rec.PushConfigs = append(rec.PushConfigs, a2a.PushConfig{ID: fmt.Sprintf("c%d", i), URL: fmt.Sprintf("https://x.example/%s/%d", id, i)})
	}
	create(tb, s, rec)
}

func TestTransitionsQueueDeliveriesInTheSameCommit(t *testing.T) {
	s := MustOpen(t, "")
	var woken atomic.Int64
	s.SetOutboxHook(func() { woken.Add(1) })
	now := time.Now()
	rec := newRecord("t1", "o", a2a.StateWorking, now)
	rec.PushConfigs = []a2a.PushConfig{
		{ID: "a", URL: "https://a.example/hook", Token: "tok"},
		{ID: "b", URL: "https://b.example/hook", Authentication: &a2a.PushAuth{Schemes: []string{"Bearer"}, Credentials: "secret"}, Wire: a2a.V10},
	}
	if _, _, err := s.Create(ctx, key("o", "m1", "x"), rec, []tasks.Event{statusEvent(a2a.StateWorking)}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 0 || woken.Load() != 0 {
		t.Fatalf("a working task queued %d deliveries", n)
	}
	done := mustUpdate(t, s, "o", "t1", flip(a2a.StateCompleted))
	if n, _ := s.OutboxDepth(ctx); n != 2 || woken.Load() != 1 {
		t.Fatalf("completion queued %d deliveries, woke %d times; want 2, 1", n, woken.Load())
	}
	due, err := s.Due(ctx, time.Now(), 10)
	if err != nil || len(due) != 2 {
		t.Fatalf("Due = %d, %v", len(due), err)
	}
	// Due names the task and webhook only; Request builds the rest.
	if d := due[0]; d.TaskID != "t1" || d.ConfigID != "a" || d.URL != "" || d.Body != nil || d.Attempts != 0 {
		t.Fatalf("Due gave %+v", d)
	}
	a, b := due[0], due[1]
	if err := s.Request(ctx, &a); err != nil {
		t.Fatal(err)
	}
	if err := s.Request(ctx, &b); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Kind   string         `json:"kind"`
		ID     string         `json:"id"`
		Status a2a.TaskStatus `json:"status"`
	}
	if err := json.Unmarshal(a.Body, &body); err != nil || body.Kind != "task" || body.ID != "t1" || body.Status.State != a2a.StateCompleted {
		t.Fatalf("0.3 delivery body %s", a.Body)
	}
	if a.URL != "https://a.example/hook" || a.Token != "tok" || a.Auth != nil || a.ContentType != "" || a.Seq != done.Seq {
		t.Fatalf("0.3 delivery %+v; want seq %d", a, done.Seq)
	}
	var v1 struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if err := json.Unmarshal(b.Body, &v1); err != nil || v1.Task.ID != "t1" || b.ContentType != "application/a2a+json" {
		t.Fatalf("1.0 delivery body %s (%s)", b.Body, b.ContentType)
	}
	if b.Auth == nil || b.Auth.Credentials != "secret" || b.Auth.Schemes[0] != "Bearer" {
		t.Fatalf("1.0 delivery auth %+v", b.Auth)
	}
	mustClean(t, s)
}

// TestOutboxCoalescesPerWebhook is the bound issue 13 asks for: a task
// looping through input-required with 10 webhooks that never answer
// keeps at most one delivery per webhook, and that delivery reports the
// latest state.
func TestOutboxCoalescesPerWebhook(t *testing.T) {
	s := MustOpen(t, "")
	withHooks(t, s, "loop", 10)
	withHooks(t, s, "other", 1)
	var last *tasks.Record
	for range 100 {
		mustUpdate(t, s, "o", "loop", flip(a2a.StateInputRequired))
		last = mustUpdate(t, s, "o", "loop", flip(a2a.StateWorking))
	}
	last = mustUpdate(t, s, "o", "loop", flip(a2a.StateCompleted))
	mustUpdate(t, s, "o", "other", flip(a2a.StateFailed))
	if n, err := s.OutboxDepth(ctx); err != nil || n != 11 {
		t.Fatalf("OutboxDepth = %d, %v; want 11 (one per webhook)", n, err)
	}
	due, err := s.Due(ctx, time.Now(), 100)
	if err != nil || len(due) != 11 {
		t.Fatalf("Due = %d, %v; want 11", len(due), err)
	}
	seen := map[string]bool{}
	for _, d := range due {
		pair := d.TaskID + "/" + d.ConfigID
		if seen[pair] {
			t.Fatalf("two deliveries for %s", pair)
		}
		seen[pair] = true
		if err := s.Request(ctx, &d); err != nil {
			t.Fatal(err)
		}
		if d.TaskID == "loop" && (d.Seq != last.Seq || !strings.Contains(string(d.Body), `"state":"completed"`)) {
			t.Fatalf("delivery of %s reports seq %d (%s), want the latest, %d, completed", pair, d.Seq, d.Body[:min(80, len(d.Body))], last.Seq)
		}
		if err := s.Delivered(ctx, d.ID, d.Seq); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s.OutboxDepth(ctx); n != 0 {
		t.Fatalf("OutboxDepth after delivering all = %d", n)
	}
	mustClean(t, s)
}

// TestDeliveredKeepsALaterTransition: a transition that lands while a
// delivery is in flight (after its body was read) is sent after it, so
// the webhook ends with the latest state.
func TestDeliveredKeepsALaterTransition(t *testing.T) {
	s := MustOpen(t, "")
	withHooks(t, s, "t1", 1)
	mustUpdate(t, s, "o", "t1", flip(a2a.StateInputRequired))
	due, _ := s.Due(ctx, time.Now(), 10)
	if len(due) != 1 {
		t.Fatalf("Due = %+v", due)
	}
	d := due[0]
	if err := s.Request(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if err := s.Retry(ctx, d.ID, 1, time.Now().Add(-time.Second), "HTTP 503"); err != nil {
		t.Fatal(err)
	}
	// In flight again, the task moves on.
	mustUpdate(t, s, "o", "t1", flip(a2a.StateCompleted))
	if err := s.Delivered(ctx, d.ID, d.Seq); err != nil {
		t.Fatal(err)
	}
	due, _ = s.Due(ctx, time.Now(), 10)
	if len(due) != 1 || due[0].ID != d.ID || due[0].Attempts != 0 || due[0].LastError != "" {
		t.Fatalf("after delivering an older state: Due = %+v; want the same delivery, attempts reset", due)
	}
	again := due[0]
	if err := s.Request(ctx, &again); err != nil {
		t.Fatal(err)
	}
	if again.Seq <= d.Seq || !strings.Contains(string(again.Body), `"state":"completed"`) {
		t.Fatalf("second request: seq %d (first %d), body %s", again.Seq, d.Seq, again.Body)
	}
	mustClean(t, s)
	if err := s.Delivered(ctx, again.ID, again.Seq); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 0 {
		t.Fatalf("OutboxDepth = %d after the latest state was delivered", n)
	}
	// Operations on a finished delivery are no-ops.
	for _, err := range []error{
		s.Delivered(ctx, d.ID, d.Seq),
		s.Retry(ctx, d.ID, 9, time.Now(), "x"),
		s.Dead(ctx, d.ID, "", 9, "x"),
	} {
		if err != nil {
			t.Fatalf("on a finished delivery: %v", err)
		}
	}
	if n, _ := s.DeadLetterCount(ctx); n != 0 {
		t.Fatalf("Dead of a finished delivery wrote %d dead letters", n)
	}
	mustClean(t, s)
}

// TestDueReadsABoundedBatchByDueTime: deliveries come oldest due time
// first, those not yet due are left, and a poll reads no further than
// its batch: an entry past it that does not even decode is never seen.
func TestDueReadsABoundedBatchByDueTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	const n = 40
	for i := range n {
		id := fmt.Sprintf("t%02d", i)
		withHooks(t, s, id, 1)
		mustUpdate(t, s, "o", id, flip(a2a.StateCompleted))
	}
	all, err := s.Due(ctx, time.Now(), 1000)
	if err != nil || len(all) != n {
		t.Fatalf("Due = %d, %v; want %d", len(all), err, n)
	}
	// Push the first ten an hour ahead, in reverse: they go to the back,
	// latest last.
	now := time.Now()
	for i := range 10 {
		if err := s.Retry(ctx, all[i].ID, 1, now.Add(time.Hour+time.Duration(10-i)*time.Second), "HTTP 503"); err != nil {
			t.Fatal(err)
		}
	}
	mustClean(t, s)
	batch, err := s.Due(ctx, now, 5)
	if err != nil || len(batch) != 5 {
		t.Fatalf("Due(limit 5) = %d, %v", len(batch), err)
	}
	for i, d := range batch {
		if d.ID != all[10+i].ID {
			t.Fatalf("batch[%d] = delivery %d of %s, want %d", i, d.ID, d.TaskID, all[10+i].ID)
		}
	}
	if got, _ := s.Due(ctx, now, 1000); len(got) != n-10 {
		t.Fatalf("due now: %d, want %d", len(got), n-10)
	}
	later, _ := s.Due(ctx, now.Add(2*time.Hour), 1000)
	if len(later) != n || later[n-1].ID != all[0].ID || later[n-10].ID != all[9].ID || later[n-1].Attempts != 1 {
		t.Fatalf("due in two hours: %d, ending with %+v", len(later), later[len(later)-1])
	}

	// Damage the entry of the last delivery due now.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mutate(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte("outbox")).Put(u64(all[n-1].ID), []byte("{x")) })
	s, err = boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Due(ctx, now, 10); err != nil || len(got) != 10 {
		t.Fatalf("a batch before the damaged entry: %d, %v", len(got), err)
	}
	want := fmt.Sprintf("decode delivery %d: invalid character 'x' looking for beginning of object key string", all[n-1].ID)
	if _, err := s.Due(ctx, now, 1000); err == nil || err.Error() != want {
		t.Fatalf("a batch reaching the damaged entry: %v, want %s", err, want)
	}
}

// TestRequestDropsWhatIsGone: a delivery whose webhook was deleted is
// dropped when it comes to be sent; a task that expires takes its
// deliveries with it.
func TestRequestDropsWhatIsGone(t *testing.T) {
	s := MustOpen(t, "")
	withHooks(t, s, "t1", 2)
	mustUpdate(t, s, "o", "t1", flip(a2a.StateCompleted))
	due, _ := s.Due(ctx, time.Now(), 10)
	if len(due) != 2 {
		t.Fatalf("Due = %+v", due)
	}
	if _, err := s.PushConfigs(ctx, "o", "t1", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) { return c[1:], nil }); err != nil {
		t.Fatal(err)
	}
	d := due[0] // c0, deleted
	if err := s.Request(ctx, &d); !errors.Is(err, push.ErrGone) {
		t.Fatalf("Request of a deleted webhook's delivery = %v, want ErrGone", err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 1 {
		t.Fatalf("OutboxDepth = %d after the drop, want 1", n)
	}
	mustClean(t, s)

	if n, err := s.Expire(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("Expire = %d, %v", n, err)
	}
	if n, _ := s.OutboxDepth(ctx); n != 0 {
		t.Fatalf("OutboxDepth = %d after the task expired, want 0", n)
	}
	if got, _ := s.Due(ctx, time.Now().Add(time.Hour), 10); len(got) != 0 {
		t.Fatalf("Due after expiry: %+v", got)
	}
	d = due[1]
	if err := s.Request(ctx, &d); !errors.Is(err, push.ErrGone) {
		t.Fatalf("Request of an expired task's delivery = %v, want ErrGone", err)
	}
	mustClean(t, s)
}

func TestDeadLettersKeepTheURLAndNoSecret(t *testing.T) {
	s := MustOpen(t, "")
	rec := newRecord("t1", "o", a2a.StateWorking, time.Now())
	rec.PushConfigs = []a2a.PushConfig{{ID: "c", URL: "https://x.example/hook", Token: "tok-secret",
		Authentication: &a2a.PushAuth{Schemes: []string{"Bearer"}, Credentials: "cred-secret"}}}
	create(t, s, rec)
	mustUpdate(t, s, "o", "t1", flip(a2a.StateInputRequired))
	due, _ := s.Due(ctx, time.Now(), 10)
	d := due[0]
	if err := s.Request(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if err := s.Dead(ctx, d.ID, d.URL, 8, "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	dead, err := s.DeadLetters(ctx, 0, 10)
	if err != nil || len(dead) != 1 {
		t.Fatalf("DeadLetters = %+v, %v", dead, err)
	}
	if got := dead[0]; got.ID != d.ID || got.TaskID != "t1" || got.ConfigID != "c" || got.URL != "https://x.example/hook" ||
		got.Attempts != 8 || got.LastError != "HTTP 500" || got.DeadAt.IsZero() || got.CreatedAt.IsZero() {
		t.Fatalf("dead letter %+v", got)
	}
	if tail, _ := s.DeadLetters(ctx, math.MaxUint64, 10); len(tail) != 0 {
		t.Fatalf("dead letters after the last possible id: %+v", tail)
	}
	if n, err := s.DeadLetterCount(ctx); err != nil || n != 1 {
		t.Fatalf("DeadLetterCount = %d, %v; want 1", n, err)
	}
	_ = s.DB().View(func(tx *bolt.Tx) error {
		v := string(tx.Bucket([]byte("dead")).Get(u64(d.ID)))
		for _, secret := range []string{"tok-secret", "cred-secret", `"kind"`} {
			if strings.Contains(v, secret) {
				t.Errorf("the dead letter holds %q: %s", secret, v)
			}
		}
		return nil
	})
	// The next transition queues a new delivery.
	mustUpdate(t, s, "o", "t1", flip(a2a.StateCompleted))
	if due, _ := s.Due(ctx, time.Now(), 10); len(due) != 1 || due[0].ID <= d.ID {
		t.Fatalf("after a dead letter, Due = %+v", due)
	}
	mustClean(t, s)
}

func TestPushConfigsNeverLoseAConcurrentChange(t *testing.T) {
	s := MustOpen(t, "")
	if _, _, err := s.Create(ctx, key("o", "m", "m"), newRecord("t", "o", a2a.StateWorking, time.Now()), nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.PushConfigs(ctx, "o", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) {
				return append(c, a2a.PushConfig{ID: fmt.Sprint(i), URL: "https://x/"}), nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, _ := s.PushConfigs(ctx, "o", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) { return c, nil })
	if len(got) != 20 {
		t.Fatalf("%d configs after 20 concurrent adds", len(got))
	}
	if _, err := s.PushConfigs(ctx, "mallory", "t", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) { return c, nil }); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("foreign task: %v", err)
	}
}

// TestUpdateKeepsAWebhookAddedMeanwhile: a transition racing a webhook
// change must not write back the record it read before the change.
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
	mutate(t, path, func(tx *bolt.Tx) error {
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
		if v := tx.Bucket([]byte("meta")).Get([]byte("schema")); string(v) != "5" {
			t.Errorf("schema after open = %q, want \"5\"", v)
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
	if d.Seq != last.Seq || d.URL != "https://x.example/t1/0" || strings.Contains(string(d.Body), "xxxx") {
		t.Fatalf("request after migration: seq %d (want %d), url %s, body %d bytes", d.Seq, last.Seq, d.URL, len(d.Body))
	}
	if err := s.Delivered(ctx, d.ID, d.Seq); err != nil {
		t.Fatal(err)
	}
	dead, err := s.DeadLetters(ctx, 0, 10)
	if err != nil || len(dead) != 1 || dead[0].ID != 3 || dead[0].URL != "https://x.example/dead" || dead[0].Attempts != 8 {
		t.Fatalf("old dead letters after migration: %+v, %v", dead, err)
	}
	// New deliveries take ids after the old ones.
	withHooks(t, s, "t2", 1)
	mustUpdate(t, s, "o", "t2", flip(a2a.StateCompleted))
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
