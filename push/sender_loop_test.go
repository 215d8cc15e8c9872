package push_test

// The sender's loop: order under retries, concurrency, restarts, Close,
// wake-ups and polling.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/push"
)

func TestSenderKeepsOrderUnderRetries(t *testing.T) {
	var (
		mu    sync.Mutex
		seen  []int // every request's delivery number, in arrival order
		fails int
	)
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Metadata struct{ N int } }
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			t.Errorf("decode body: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, b.Metadata.N)
		if b.Metadata.N == 2 && fails < 2 {
			fails++
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	o := NewMemOutbox()
	var ids []uint64
	for n := 1; n <= 5; n++ {
		ids = append(ids, o.Add(push.Delivery{TaskID: "t1", ConfigID: "c1", URL: srv.URL, Task: &a2a.Task{ID: "t1", Metadata: map[string]any{"n": n}}}))
	}
	MustStartSender(t, testSenderConfig(o))
	waitFor(t, "5 deliveries", func() bool { return len(o.DeliveredIDs()) == 5 })

	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	if diff := cmp.Diff([]int{1, 2, 2, 2, 3, 4, 5}, got); diff != "" {
		t.Errorf("receiver saw (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ids, o.DeliveredIDs()); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

func TestSenderConcurrencyBound(t *testing.T) {
	const pairs, limit = 40, 4
	var active, peak, hits atomic.Int32
	release := make(chan struct{})
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		n := active.Add(1)
		defer active.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		hang(r, release)
	})
	o := NewMemOutbox()
	for i := range pairs {
		o.Add(push.Delivery{TaskID: fmt.Sprintf("t%d", i), ConfigID: "c1", URL: srv.URL, Task: &a2a.Task{ID: "t1"}})
	}
	cfg := testSenderConfig(o)
	cfg.Concurrency = limit
	MustStartSender(t, cfg)

	waitFor(t, "the receiver to block 4 requests", func() bool { return active.Load() == limit })
	time.Sleep(50 * time.Millisecond) // a fifth request would show now
	if got := hits.Load(); got != limit {
		t.Errorf("receiver saw %d requests while %d blocked, want %d", got, limit, limit)
	}
	close(release)
	waitFor(t, "40 deliveries", func() bool { return len(o.DeliveredIDs()) == pairs })
	if got := peak.Load(); got > limit {
		t.Errorf("peak concurrent requests = %d, want <= %d", got, limit)
	}
	if got := hits.Load(); got != pairs {
		t.Errorf("receiver saw %d requests, want %d", got, pairs)
	}
}

func TestSenderSlowPairDoesNotBlockOthers(t *testing.T) {
	var aHits, bHits atomic.Int32
	release := make(chan struct{})
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/b" {
			bHits.Add(1)
			return
		}
		aHits.Add(1)
		hang(r, release)
	})
	o := NewMemOutbox()
	a1 := o.Add(push.Delivery{TaskID: "ta", ConfigID: "c1", URL: srv.URL + "/a", Task: &a2a.Task{ID: "t1"}})
	a2 := o.Add(push.Delivery{TaskID: "ta", ConfigID: "c1", URL: srv.URL + "/a", Task: &a2a.Task{ID: "t1"}})
	cfg := testSenderConfig(o)
	cfg.PollInterval = 10 * time.Second // only attempts ending and Wake poll
	s := MustStartSender(t, cfg)
	waitFor(t, "pair A in flight", func() bool { return aHits.Load() == 1 })

	b1 := o.Add(push.Delivery{TaskID: "tb", ConfigID: "c1", URL: srv.URL + "/b", Task: &a2a.Task{ID: "t1"}})
	s.Wake()
	waitFor(t, "pair B delivered", func() bool { return slices.Contains(o.DeliveredIDs(), b1) })
	if got := aHits.Load(); got != 1 {
		t.Errorf("pair A saw %d requests while its first was in flight, want 1", got)
	}

	close(release)
	waitFor(t, "pair A delivered", func() bool { return len(o.DeliveredIDs()) == 3 })
	if diff := cmp.Diff([]uint64{b1, a1, a2}, o.DeliveredIDs()); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

func TestSenderRestartMidRetry(t *testing.T) {
	srv, hits := flakyReceiver(t, 2, http.StatusBadGateway, "")
	o := NewMemOutbox()
	id := addDelivery(o, srv.URL)

	// The first sender schedules its retry 5s ahead and is closed before
	// then.
	cfg1 := testSenderConfig(o)
	cfg1.BaseDelay, cfg1.MaxDelay = 10*time.Second, 10*time.Second
	cfg1.Rand = func() float64 { return 0.5 }
	cfg1.Now = func() time.Time { return time.Now().Add(-time.Hour) } // so the retry is due at once for the second
	s1 := push.NewSender(cfg1)
	s1.Start()
	waitFor(t, "first retry", func() bool { return len(o.Outcomes()) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := hits.Load(); got != 1 {
		t.Fatalf("receiver saw %d requests before the restart, want 1", got)
	}

	deliveredAfterRetries(t, o, id, 2, "HTTP 502")
	wantHits(t, hits, 3)
}

func TestSenderCloseCancelsInFlight(t *testing.T) {
	var hanging atomic.Bool
	hanging.Store(true)
	entered := make(chan struct{}, 1)
	canceled := make(chan struct{}, 1)
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if !hanging.Load() {
			return
		}
		entered <- struct{}{}
		if hang(r, nil) {
			canceled <- struct{}{}
		}
	})
	o := NewMemOutbox()
	id := addDelivery(o, srv.URL)
	s1 := push.NewSender(testSenderConfig(o))
	s1.Start()
	<-entered

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s1.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
	select {
	case <-canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the receiver's request was not canceled")
	}
	if got := o.Outcomes(); len(got) != 0 {
		t.Fatalf("a canceled attempt recorded %+v", got)
	}

	hanging.Store(false)
	MustStartSender(t, testSenderConfig(o))
	waitFor(t, "delivery", func() bool { return len(o.DeliveredIDs()) == 1 })
	if diff := cmp.Diff([]OutboxCall{{Method: "Delivered", ID: id}}, o.Outcomes()); diff != "" {
		t.Errorf("outbox calls (-want +got):\n%s", diff)
	}
}

func TestSenderCloseJoinsGoroutines(t *testing.T) {
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			hang(r, nil)
		}
	})
	tr := &http.Transport{}
	before := runtime.NumGoroutine()

	o := NewMemOutbox()
	for i := range 10 {
		o.Add(push.Delivery{TaskID: fmt.Sprintf("t%d", i), ConfigID: "c1", URL: srv.URL, Task: &a2a.Task{ID: "t1"}})
	}
	o.Add(push.Delivery{TaskID: "hang", ConfigID: "c1", URL: srv.URL + "/hang", Task: &a2a.Task{ID: "t1"}})
	cfg := testSenderConfig(o)
	cfg.Client = &http.Client{Transport: tr}
	cfg.PollInterval = 10 * time.Second
	s := push.NewSender(cfg)
	s.Start()
	waitFor(t, "10 deliveries", func() bool { return len(o.DeliveredIDs()) == 10 })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_ = s.Close(ctx) // DeadlineExceeded: the /hang attempt is cut short
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "push.(*Sender)") {
		t.Errorf("a sender goroutine outlived Close:\n%s", stacks)
	}

	tr.CloseIdleConnections()
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before+2 })
}

func TestSenderCloseIdle(t *testing.T) {
	o := NewMemOutbox()
	cfg := testSenderConfig(o)
	cfg.PollInterval = 10 * time.Second
	s := push.NewSender(cfg)
	s.Start()
	waitFor(t, "first poll", func() bool { return len(o.Calls()) > 0 })
	start := time.Now()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Close took %v", d)
	}
	if err := s.Close(context.Background()); err != nil { // a second Close is harmless
		t.Fatal(err)
	}

	unstarted := push.NewSender(cfg)
	if err := unstarted.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	unstarted.Start() // after Close: does nothing
	time.Sleep(10 * time.Millisecond)
	if got := len(o.Calls()); got != 1 {
		t.Errorf("outbox saw %d calls, want 1 (the first sender's first poll)", got)
	}
}

func TestSenderWake(t *testing.T) {
	var hits atomic.Int32
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	o := NewMemOutbox()
	cfg := testSenderConfig(o)
	cfg.PollInterval = 10 * time.Second
	s := MustStartSender(t, cfg)
	waitFor(t, "first poll", func() bool { return len(o.Calls()) > 0 })

	id := addDelivery(o, srv.URL)
	start := time.Now()
	s.Wake()
	s.Wake() // never blocks
	waitFor(t, "delivery", func() bool { return len(o.DeliveredIDs()) == 1 })
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("delivery took %v after Wake", d)
	}
	if diff := cmp.Diff([]uint64{id}, o.DeliveredIDs()); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

func TestSenderDueErrorKeepsPolling(t *testing.T) {
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {})
	var logs testkit.SyncBuffer
	var dueCalls atomic.Int32
	o := NewMemOutbox()
	o.DueErr = func(context.Context) error {
		if dueCalls.Add(1) <= 3 {
			return errors.New("store unavailable")
		}
		return nil
	}
	addDelivery(o, srv.URL)
	cfg := testSenderConfig(o)
	cfg.PollInterval = time.Millisecond
	cfg.Logger = zerolog.New(&logs)
	MustStartSender(t, cfg)
	waitFor(t, "delivery", func() bool { return len(o.DeliveredIDs()) == 1 })
	waitFor(t, "recovery log", func() bool { return strings.Contains(logs.String(), "recovered") })

	var failed, recovered int
	for _, l := range logLines(t, &logs) {
		switch l["message"] {
		case "push outbox poll failed":
			failed++
		case "push outbox poll recovered":
			recovered++
		}
	}
	if failed != 1 || recovered != 1 {
		t.Errorf("logged %d failures and %d recoveries, want 1 and 1 (rate-limited):\n%s", failed, recovered, logs.String())
	}
}

// TestSenderCloseDoesNotWaitForAPoll: Close ends a poll in progress (its
// context is the sender's) rather than wait for it.
func TestSenderCloseDoesNotWaitForAPoll(t *testing.T) {
	o := NewMemOutbox()
	polling := make(chan struct{}, 1)
	o.DueErr = func(ctx context.Context) error {
		select {
		case polling <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return nil
		}
	}
	s := push.NewSender(testSenderConfig(o))
	s.Start()
	<-polling
	start := time.Now()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("Close took %v while a poll was in progress", d)
	}
}

// TestSenderBuildsTheRequestWhenItSends: the request comes from the
// outbox at the attempt, and Delivered is told the sequence it reported;
// a delivery whose task is gone is dropped without a request or an
// outcome; one whose task cannot be read is retried, then dead-lettered.
func TestSenderBuildsTheRequestWhenItSends(t *testing.T) {
	var (
		mu   sync.Mutex
		got  []string
		hits atomic.Int32
	)
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.URL.Path+" "+string(b))
		mu.Unlock()
	})
	o := NewMemOutbox()
	sent := o.Add(push.Delivery{TaskID: "t1", ConfigID: "c1", URL: srv.URL + "/ok", Task: &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.StateCompleted}}, Seq: 7})
	gone := o.Add(push.Delivery{TaskID: "t2", ConfigID: "c1", URL: srv.URL + "/gone", Task: &a2a.Task{ID: "t1"}})
	o.Gone(gone)
	unread := o.Add(push.Delivery{TaskID: "t3", ConfigID: "c1", URL: srv.URL + "/unread", Task: &a2a.Task{ID: "t1"}})
	o.RequestErr = func(_ context.Context, id uint64) error {
		if id == unread {
			return errors.New("decode task t3: unexpected end of JSON input")
		}
		return nil
	}
	var attempts []string
	cfg := testSenderConfig(o)
	cfg.MaxAttempts = 2
	cfg.OnAttempt = func(outcome string, dead bool, _ time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, fmt.Sprintf("%s dead=%v", outcome, dead))
	}
	MustStartSender(t, cfg)
	waitFor(t, "the unreadable delivery dead-lettered", func() bool { return len(o.DeadLetters()) == 1 })
	waitFor(t, "the good delivery", func() bool { return len(o.DeliveredIDs()) == 1 })
	if o.Pending() != 0 {
		t.Errorf("%d deliveries pending, want none (the gone one dropped)", o.Pending())
	}
	want := []OutboxCall{
		{Method: "Delivered", ID: sent, Seq: 7},
		{Method: "Retry", ID: unread, Attempts: 1, LastErr: "task could not be read"},
		{Method: "Dead", ID: unread, Attempts: 2, LastErr: "task could not be read"},
	}
	outcomes := o.Outcomes()
	slices.SortStableFunc(outcomes, func(a, b OutboxCall) int { return int(a.ID) - int(b.ID) })
	if diff := cmp.Diff(want, outcomes, ignoreNext); diff != "" {
		t.Errorf("outbox calls (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{`/ok {"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"}}`}, got); diff != "" {
		t.Errorf("receiver saw (-want +got):\n%s", diff)
	}
	slices.Sort(attempts)
	if diff := cmp.Diff([]string{"delivered dead=false", "transient_error dead=false", "transient_error dead=true"}, attempts); diff != "" {
		t.Errorf("OnAttempt (-want +got):\n%s", diff)
	}
}
