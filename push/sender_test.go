package push_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/push"
)

// testSenderConfig is a fast configuration for tests.
func testSenderConfig(o *MemOutbox) push.SenderConfig {
	return push.SenderConfig{
		Outbox:       o,
		Timeout:      5 * time.Second,
		MaxAttempts:  8,
		BaseDelay:    10 * time.Millisecond,
		MaxDelay:     50 * time.Millisecond,
		Concurrency:  4,
		PollInterval: 5 * time.Millisecond,
		Logger:       zerolog.Nop(),
	}
}

// MustStartSender starts a sender for cfg and closes it when the test
// ends.
func MustStartSender(tb testing.TB, cfg push.SenderConfig) *push.Sender {
	tb.Helper()
	s := push.NewSender(cfg)
	s.Start()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// MustReceiver starts a loopback webhook receiver.
func MustReceiver(tb testing.TB, h http.HandlerFunc) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

// hang blocks a receiver's handler until release is closed or the
// client goes away (it reports which), or 10 seconds pass. It reads the
// body first: the server notices a closed connection only after that.
func hang(r *http.Request, release <-chan struct{}) (canceled bool) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-release:
		return false
	case <-r.Context().Done():
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// flakyReceiver answers the first n requests with status (and the
// Retry-After header retryAfter, if not ""), the rest with 200; hits
// counts the requests.
func flakyReceiver(tb testing.TB, n int32, status int, retryAfter string) (srv *httptest.Server, hits *atomic.Int32) {
	tb.Helper()
	hits = new(atomic.Int32)
	srv = MustReceiver(tb, func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= n {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(status)
		}
	})
	return srv, hits
}

// addDelivery queues a delivery of task t1 to its webhook c1 at url.
func addDelivery(o *MemOutbox, url string) uint64 {
	return o.Add(push.Delivery{TaskID: "t1", ConfigID: "c1", URL: url, Task: &a2a.Task{ID: "t1"}})
}

// deliveredAfterRetries starts a sender on o and checks that it
// delivers id after retries failed attempts, each failing with lastErr.
func deliveredAfterRetries(tb testing.TB, o *MemOutbox, id uint64, retries int, lastErr string) {
	tb.Helper()
	MustStartSender(tb, testSenderConfig(o))
	waitFor(tb, "delivery", func() bool { return len(o.DeliveredIDs()) == 1 })
	var want []OutboxCall
	for n := 1; n <= retries; n++ {
		want = append(want, OutboxCall{Method: "Retry", ID: id, Attempts: n, LastErr: lastErr})
	}
	wantOutcomes(tb, o, append(want, OutboxCall{Method: "Delivered", ID: id})...)
}

// waitFor fails the test if cond is not true within 5 seconds.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// logLines decodes the JSON log lines written to b.
func logLines(tb testing.TB, b *testkit.SyncBuffer) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			tb.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// ignoreNext drops the retry time, which follows the real clock.
var ignoreNext = cmpopts.IgnoreFields(OutboxCall{}, "Next")

// wantOutcomes checks the calls the sender made on the outbox o, their
// retry times aside.
func wantOutcomes(tb testing.TB, o *MemOutbox, want ...OutboxCall) {
	tb.Helper()
	if diff := cmp.Diff(want, o.Outcomes(), ignoreNext); diff != "" {
		tb.Errorf("outbox calls (-want +got):\n%s", diff)
	}
}

// wantHits checks how many requests the receiver saw.
func wantHits(tb testing.TB, hits *atomic.Int32, want int32) {
	tb.Helper()
	if got := hits.Load(); got != want {
		tb.Errorf("receiver saw %d requests, want %d", got, want)
	}
}

// A 1.0 webhook gets a StreamResponse as application/a2a+json, a 0.3 one
// the Task as application/json: the sender encodes what Request read.
func TestSenderHeaders(t *testing.T) {
	type request struct {
		Method, Path, ContentType, UserAgent, Token, Authorization, DeliveryID string
		HasToken, HasAuthorization                                             bool
		Body                                                                   string
	}
	var (
		mu   sync.Mutex
		reqs []request
	)
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, hasToken := r.Header["X-A2a-Notification-Token"]
		_, hasAuth := r.Header["Authorization"]
		mu.Lock()
		reqs = append(reqs, request{
			Method: r.Method, Path: r.URL.RequestURI(), ContentType: r.Header.Get("Content-Type"),
			UserAgent: r.Header.Get("User-Agent"), Token: r.Header.Get("X-A2A-Notification-Token"),
			Authorization: r.Header.Get("Authorization"), HasToken: hasToken, HasAuthorization: hasAuth,
			DeliveryID: r.Header.Get("A2AD-Delivery-Id"), Body: string(body),
		})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})

	o := NewMemOutbox()
	id1 := o.Add(push.Delivery{
		TaskID: "t1", ConfigID: "c1", URL: srv.URL + "/hook?x=1", Token: "tok-123",
		Auth: &push.Auth{Schemes: []string{"Bearer", "Basic"}, Credentials: "s3cr3t"},
		Task: &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.StateCompleted}}, Wire: a2a.V10, Seq: 7,
	})
	id2 := o.Add(push.Delivery{
		TaskID: "t2", ConfigID: "c1", URL: srv.URL + "/plain",
		Auth: &push.Auth{Schemes: []string{"Bearer"}}, // no credentials: no header
		Task: &a2a.Task{ID: "t2", ContextID: "c2", Status: a2a.TaskStatus{State: a2a.StateCompleted}}, Seq: 3,
	})
	MustStartSender(t, testSenderConfig(o))
	waitFor(t, "2 deliveries", func() bool { return len(o.DeliveredIDs()) == 2 })

	mu.Lock()
	got := slices.Clone(reqs)
	mu.Unlock()
	slices.SortFunc(got, func(a, b request) int { return strings.Compare(a.Path, b.Path) })
	want := []request{
		{Method: "POST", Path: "/hook?x=1", ContentType: "application/a2a+json", UserAgent: "a2ad",
			Token: "tok-123", HasToken: true, Authorization: "Bearer s3cr3t", HasAuthorization: true, DeliveryID: "t1:c1:7",
			Body: `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`},
		{Method: "POST", Path: "/plain", ContentType: "application/json", UserAgent: "a2ad", DeliveryID: "t2:c1:3", Body: `{"kind":"task","id":"t2","contextId":"c2","status":{"state":"completed"}}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if got, want := o.Pending(), 0; got != want {
		t.Errorf("Pending() = %d, want %d", got, want)
	}
	ids := o.DeliveredIDs()
	slices.Sort(ids)
	if diff := cmp.Diff([]uint64{id1, id2}, ids); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

// Every attempt of one delivery carries the same A2AD-Delivery-Id, so a
// receiver can drop a copy; another notification carries another.
func TestSenderDeliveryIDStableAcrossAttempts(t *testing.T) {
	var (
		mu  sync.Mutex
		ids []string
	)
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, r.Header.Get("A2AD-Delivery-Id"))
		if len(ids) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	o := NewMemOutbox()
	o.Add(push.Delivery{TaskID: "t1", ConfigID: "c1", URL: srv.URL, Task: &a2a.Task{ID: "t1"}, Seq: 5})
	MustStartSender(t, testSenderConfig(o))
	waitFor(t, "first delivery", func() bool { return len(o.DeliveredIDs()) == 1 })
	o.Add(push.Delivery{TaskID: "t1", ConfigID: "c1", URL: srv.URL, Task: &a2a.Task{ID: "t1"}, Seq: 9})
	waitFor(t, "second delivery", func() bool { return len(o.DeliveredIDs()) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"t1:c1:5", "t1:c1:5", "t1:c1:5", "t1:c1:9"}, ids); diff != "" {
		t.Errorf("A2AD-Delivery-Id per attempt (-want +got):\n%s", diff)
	}
}

func TestSenderRetriesUntilDelivered(t *testing.T) {
	srv, hits := flakyReceiver(t, 3, http.StatusServiceUnavailable, "")
	o := NewMemOutbox()
	id := addDelivery(o, srv.URL)
	deliveredAfterRetries(t, o, id, 3, "HTTP 503")
	wantHits(t, hits, 4)
}

func TestSenderDeadLetterAfterMaxAttempts(t *testing.T) {
	var hits atomic.Int32
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("internal details"))
	})
	var logs testkit.SyncBuffer
	o := NewMemOutbox()
	id := o.Add(push.Delivery{
		TaskID: "t1", ConfigID: "c1", URL: srv.URL + "/hook/path-secret?q=query-secret", Token: "token-secret",
		Auth: &push.Auth{Schemes: []string{"Bearer"}, Credentials: "cred-secret"},
		Task: &a2a.Task{ID: "t1", Metadata: map[string]any{"x": "body-secret"}},
	})
	cfg := testSenderConfig(o)
	cfg.MaxAttempts = 4
	cfg.Logger = zerolog.New(&logs).Level(zerolog.DebugLevel)
	s := MustStartSender(t, cfg)
	waitFor(t, "dead letter", func() bool { return len(o.DeadLetters()) == 1 })
	time.Sleep(30 * time.Millisecond) // a wrong extra attempt would show now
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	wantOutcomes(t, o,
		OutboxCall{Method: "Retry", ID: id, Attempts: 1, LastErr: "HTTP 500"},
		OutboxCall{Method: "Retry", ID: id, Attempts: 2, LastErr: "HTTP 500"},
		OutboxCall{Method: "Retry", ID: id, Attempts: 3, LastErr: "HTTP 500"},
		OutboxCall{Method: "Dead", ID: id, URL: srv.URL + "/hook/path-secret?q=query-secret", Attempts: 4, LastErr: "HTTP 500"},
	)
	wantHits(t, &hits, 4)

	if strings.Contains(logs.String(), "secret") {
		t.Errorf("logs hold a secret, a path or a query:\n%s", logs.String())
	}
	var warns, debugs []map[string]any
	for _, l := range logLines(t, &logs) {
		switch l["level"] {
		case "warn":
			warns = append(warns, l)
		case "debug":
			debugs = append(debugs, l)
		}
	}
	if len(debugs) != 3 {
		t.Errorf("got %d debug (retry) lines, want 3:\n%s", len(debugs), logs.String())
	}
	if len(warns) != 1 {
		t.Fatalf("got %d warn lines, want 1:\n%s", len(warns), logs.String())
	}
	w := warns[0]
	for k, v := range map[string]any{
		"task_id": "t1", "config_id": "c1", "attempts": float64(4), "last_error": "HTTP 500", "webhook": srv.URL,
	} {
		if w[k] != v {
			t.Errorf("warn line %s = %v, want %v", k, w[k], v)
		}
	}
}

func TestSenderPermanentFailure(t *testing.T) {
	for _, tc := range []struct {
		status  int
		lastErr string
	}{
		{http.StatusNotFound, "HTTP 404 (not retried)"},
		{http.StatusBadRequest, "HTTP 400 (not retried)"},
		{http.StatusUnauthorized, "HTTP 401 (not retried)"},
		{http.StatusGone, "HTTP 410 (not retried)"},
		{http.StatusFound, "HTTP 302 (not retried)"}, // redirects are not followed
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			var hits, redirected atomic.Int32
			srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/elsewhere" {
					redirected.Add(1)
					return
				}
				hits.Add(1)
				if tc.status == http.StatusFound {
					http.Redirect(w, r, "/elsewhere", tc.status)
					return
				}
				w.WriteHeader(tc.status)
			})
			o := NewMemOutbox()
			id := o.Add(push.Delivery{TaskID: "t1", ConfigID: "c1", URL: srv.URL + "/hook", Task: &a2a.Task{ID: "t1"}})
			cfg := testSenderConfig(o)
			cfg.Client = &http.Client{} // follows redirects by default; the sender must not
			s := MustStartSender(t, cfg)
			waitFor(t, "dead letter", func() bool { return len(o.DeadLetters()) == 1 })
			time.Sleep(30 * time.Millisecond) // a wrong retry would show now
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}

			want := []OutboxCall{{Method: "Dead", ID: id, URL: srv.URL + "/hook", Attempts: 1, LastErr: tc.lastErr}}
			if diff := cmp.Diff(want, o.Outcomes()); diff != "" {
				t.Errorf("outbox calls (-want +got):\n%s", diff)
			}
			wantHits(t, &hits, 1)
			if got := redirected.Load(); got != 0 {
				t.Errorf("redirect followed %d times", got)
			}
		})
	}
}

func TestSenderNetworkErrors(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		var hits atomic.Int32
		srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			if hits.Add(1) == 1 {
				hang(r, nil) // never answers the first attempt
				return
			}
		})
		o := NewMemOutbox()
		id := addDelivery(o, srv.URL)
		cfg := testSenderConfig(o)
		cfg.Timeout = 50 * time.Millisecond
		MustStartSender(t, cfg)
		waitFor(t, "delivery", func() bool { return len(o.DeliveredIDs()) == 1 })
		wantOutcomes(t, o,
			OutboxCall{Method: "Retry", ID: id, Attempts: 1, LastErr: "timed out"},
			OutboxCall{Method: "Delivered", ID: id},
		)
	})
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close() // nothing listens there now
		o := NewMemOutbox()
		id := addDelivery(o, url)
		cfg := testSenderConfig(o)
		cfg.MaxAttempts = 2
		MustStartSender(t, cfg)
		waitFor(t, "dead letter", func() bool { return len(o.DeadLetters()) == 1 })
		wantOutcomes(t, o,
			OutboxCall{Method: "Retry", ID: id, Attempts: 1, LastErr: "connection failed"},
			OutboxCall{Method: "Dead", ID: id, URL: url, Attempts: 2, LastErr: "connection failed"},
		)
	})
}

func TestSenderRetryAfterZero(t *testing.T) {
	srv, _ := flakyReceiver(t, 1, http.StatusTooManyRequests, "0")
	o := NewMemOutbox()
	id := addDelivery(o, srv.URL)
	deliveredAfterRetries(t, o, id, 1, "HTTP 429")
}

// TestSenderRetryDelay checks the next attempt's time with a fixed clock
// and a fixed jitter of 0.5: backoff = 0.5 * min(10s, 100ms * 2^(n-1)).
func TestSenderRetryDelay(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		prior      int // attempts made before this one
		want       time.Duration
	}{
		{"first failure", 503, "", 0, 50 * time.Millisecond},
		{"fourth failure", 500, "", 3, 400 * time.Millisecond},
		{"backoff capped", 502, "", 9, 5 * time.Second},
		{"429 Retry-After seconds", 429, "3", 0, 3 * time.Second},
		{"503 Retry-After seconds", 503, "3", 0, 3 * time.Second},
		{"500 ignores Retry-After", 500, "3", 0, 50 * time.Millisecond},
		{"Retry-After 0 keeps backoff", 429, "0", 0, 50 * time.Millisecond},
		{"Retry-After shorter than backoff", 503, "1", 6, 3200 * time.Millisecond},
		{"Retry-After capped at MaxDelay", 429, "120", 0, 10 * time.Second},
		{"Retry-After date", 429, now.Add(4 * time.Second).Format(http.TimeFormat), 0, 4 * time.Second},
		{"Retry-After date passed", 503, now.Add(-time.Hour).Format(http.TimeFormat), 0, 50 * time.Millisecond},
		{"Retry-After garbage", 429, "soon", 0, 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
			})
			o := NewMemOutbox()
			id := o.Add(push.Delivery{TaskID: "t1", ConfigID: "c1", URL: srv.URL, Task: &a2a.Task{ID: "t1"}, Attempts: tc.prior, NextAt: now})
			cfg := testSenderConfig(o)
			cfg.MaxAttempts = 20
			cfg.BaseDelay, cfg.MaxDelay = 100*time.Millisecond, 10*time.Second
			cfg.Now = func() time.Time { return now } // the retry is never due: one attempt only
			cfg.Rand = func() float64 { return 0.5 }
			MustStartSender(t, cfg)
			waitFor(t, "retry", func() bool { return len(o.Outcomes()) == 1 })

			want := []OutboxCall{{Method: "Retry", ID: id, Attempts: tc.prior + 1, Next: now.Add(tc.want), LastErr: fmt.Sprintf("HTTP %d", tc.status)}}
			if diff := cmp.Diff(want, o.Outcomes()); diff != "" {
				t.Errorf("outbox calls (-want +got):\n%s", diff)
			}
		})
	}
}
