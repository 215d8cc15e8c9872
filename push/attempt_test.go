package push_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/push"
)

// TestSenderOnAttempt tells OnAttempt of every attempt: two transient
// failures then a delivery on one webhook, a permanent failure (dead at
// once) on another, and a transient failure that is the last attempt
// (dead) on a third.
func TestSenderOnAttempt(t *testing.T) {
	flaky, _ := flakyReceiver(t, 2, http.StatusServiceUnavailable, "")
	gone := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
	down := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	var (
		mu  sync.Mutex
		got = map[string][]string{}
	)
	o := NewMemOutbox()
	cfg := testSenderConfig(o)
	cfg.MaxAttempts = 3
	cfg.OnAttempt = func(outcome string, dead bool, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d <= 0 || d > 5*time.Second {
			t.Errorf("attempt took %v", d)
		}
		got["all"] = append(got["all"], fmt.Sprintf("%s dead=%v", outcome, dead))
	}
	for i, srv := range []string{flaky.URL, gone.URL, down.URL} {
		o.Add(push.Delivery{TaskID: fmt.Sprint("t", i), ConfigID: "c", URL: srv, Task: &a2a.Task{ID: "t1"}})
	}
	MustStartSender(t, cfg)
	// OnAttempt follows the outbox's record of the outcome.
	waitFor(t, "seven attempts", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return o.Pending() == 0 && len(got["all"]) == 7
	})
	mu.Lock()
	defer mu.Unlock()
	counts := map[string]int{}
	for _, a := range got["all"] {
		counts[a]++
	}
	want := map[string]int{
		push.AttemptTransient + " dead=false": 4, // flaky twice, down twice
		push.AttemptDelivered + " dead=false": 1,
		push.AttemptPermanent + " dead=true":  1, // 410
		push.AttemptTransient + " dead=true":  1, // down's third attempt
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("attempts told (-want +got):\n%s", diff)
	}
}
