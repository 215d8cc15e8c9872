package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// balancer is a small round-robin load balancer as operators run them:
// it polls each backend's /readyz every interval, sends to those whose
// last poll was 200, and never retries a request (a refused POST is the
// client's failure).
type balancer struct {
	mu       sync.Mutex
	backends []string // base URLs, by slot
	healthy  []bool
	next     int
	srv      *httptest.Server
}

func newBalancer(t *testing.T, interval time.Duration, bases ...string) *balancer {
	b := &balancer{backends: bases, healthy: make([]bool, len(bases))}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			u, _ := url.Parse(b.pick())
			r.SetURL(u)
		},
		FlushInterval: -1, // event streams pass as they come
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "balancer: "+err.Error(), http.StatusBadGateway)
		},
	}
	b.srv = httptest.NewServer(proxy)
	t.Cleanup(b.srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			b.poll()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return b
}

// pick is the next healthy backend, round robin ("" if none is).
func (b *balancer) pick() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for range b.backends {
		i := b.next % len(b.backends)
		b.next++
		if b.healthy[i] {
			return b.backends[i]
		}
	}
	return "http://127.0.0.1:1" // none healthy: the request fails
}

// poll reads each backend's /readyz.
func (b *balancer) poll() {
	b.mu.Lock()
	bases := append([]string(nil), b.backends...)
	b.mu.Unlock()
	client := &http.Client{Timeout: 150 * time.Millisecond}
	for i, base := range bases {
		ok := false
		if resp, err := client.Get(base + "/readyz"); err == nil {
			ok = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
		b.mu.Lock()
		if b.backends[i] == base {
			b.healthy[i] = ok
		}
		b.mu.Unlock()
	}
}

// replace puts base in slot i, unhealthy until its first good poll.
func (b *balancer) replace(i int, base string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends[i], b.healthy[i] = base, false
}

// upgradeLoad is what the clients of a rolling upgrade saw.
type upgradeLoad struct {
	sends, sendFailures      atomic.Int64
	streams, streamsUnended  atomic.Int64
	resumes, requestFailures atomic.Int64
	firstFailure             atomic.Value // string
}

func (l *upgradeLoad) fail(what string) {
	l.firstFailure.CompareAndSwap(nil, what)
}

// TestRollingUpgrade is issue 26 item 4: three replicas on one
// PostgreSQL behind a round-robin balancer that polls /readyz every
// 200 ms and does not retry a refused POST, under load from clients that
// send blocking calls and streams (resuming a stream cut by a drain
// through the balancer, as a client does); each replica is upgraded in
// turn by the README's procedure (SIGTERM, wait for the exit, start the
// new binary, wait for its /readyz) with --shutdown-delay 1s. No request
// fails, and every stream gets its final event.
func TestRollingUpgrade(t *testing.T) {
	dsn := pgtest.Schema(t)
	// The load comes from one address, as one anonymous caller: measure
	// the upgrade, not the per-caller limits.
	flags := []string{"--shutdown-delay", "1s", "--shutdown-grace", "10s",
		"--rate", "0", "--max-inflight-per-caller", "0", "--max-calls-per-caller", "0", "--rate-bytes", "0", "--quota-tasks", "0"}
	rs := startReplicas(t, exampleCatalog, dsn, 3, flags...)
	lb := newBalancer(t, 200*time.Millisecond, rs[0].base, rs[1].base, rs[2].base)
	eventually(t, 5*time.Second, "the balancer to see every replica ready", func() bool {
		lb.mu.Lock()
		defer lb.mu.Unlock()
		return lb.healthy[0] && lb.healthy[1] && lb.healthy[2]
	})

	var load upgradeLoad
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() { upgradeSender(ctx, lb.srv.URL, c, &load) })
	}
	for c := range 2 {
		wg.Go(func() { upgradeStreamer(ctx, lb.srv.URL, c, &load) })
	}
	time.Sleep(time.Second)
	for i := range rs {
		began := time.Now()
		if err := rs[i].terminate(t, 30*time.Second); err != nil {
			t.Fatalf("replica %d's exit after SIGTERM: %v", i, err)
		}
		rs[i] = startBinary(t, exampleCatalog, dsn, flags...)
		lb.replace(i, rs[i].base)
		eventually(t, 5*time.Second, "the balancer to take the new replica", func() bool {
			lb.mu.Lock()
			defer lb.mu.Unlock()
			return lb.healthy[i]
		})
		t.Logf("replica %d upgraded in %v", i, time.Since(began).Round(time.Millisecond))
	}
	time.Sleep(time.Second)
	stop()
	wg.Wait()

	t.Logf("%d blocking sends, %d failed; %d streams, %d resumed, %d without their final event; %d other requests failed",
		load.sends.Load(), load.sendFailures.Load(), load.streams.Load(), load.resumes.Load(), load.streamsUnended.Load(), load.requestFailures.Load())
	if load.sends.Load() < 50 || load.streams.Load() < 5 {
		t.Fatalf("too little load to show anything: %d sends, %d streams", load.sends.Load(), load.streams.Load())
	}
	if f := load.sendFailures.Load() + load.streamsUnended.Load() + load.requestFailures.Load(); f != 0 {
		t.Fatalf("%d failures during the upgrade; the first: %v", f, load.firstFailure.Load())
	}
}

// upgradeSender sends blocking calls of demo::echo through the balancer
// until ctx ends.
func upgradeSender(ctx context.Context, lb string, c int, load *upgradeLoad) {
	client := &http.Client{Timeout: 20 * time.Second}
	for n := 0; ctx.Err() == nil; n++ {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send",
			"params": sendParams(fmt.Sprintf("up-%d-%d", c, n), "demo::echo", map[string]any{"message": "hi"}, true)})
		load.sends.Add(1)
		resp, err := client.Post(lb+"/a2a", "application/json", bytes.NewReader(body))
		if err != nil {
			load.sendFailures.Add(1)
			load.fail("send: " + err.Error())
			continue
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte(`"state":"completed"`)) {
			load.sendFailures.Add(1)
			load.fail(fmt.Sprintf("send: HTTP %d %s", resp.StatusCode, raw))
		}
	}
}

// upgradeStreamer streams calls of demo::sleep (2 s, so that drains cut some) through
// the balancer until ctx ends, resuming a stream cut before its final
// event with tasks/resubscribe and Last-Event-ID, as a client does.
func upgradeStreamer(ctx context.Context, lb string, c int, load *upgradeLoad) {
	for n := 0; ctx.Err() == nil; n++ {
		load.streams.Add(1)
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/stream",
			"params": sendParams(fmt.Sprintf("st-%d-%d", c, n), "demo::sleep", map[string]any{"seconds": 2}, false)})
		task, last, final, ok := upgradeStream(lb, body, "", load)
		for tries := 0; ok && !final && tries < 10; tries++ {
			load.resumes.Add(1)
			body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/resubscribe", "params": map[string]any{"id": task}})
			_, last, final, ok = upgradeStream(lb, body, last, load)
		}
		if !final {
			load.streamsUnended.Add(1)
			load.fail(fmt.Sprintf("stream of task %s ended without its final event (last event %s)", task, last))
		}
	}
}

// upgradeStream posts body for an event stream through the balancer,
// after the event id last ("" for none), and reads it: the task's id, the
// last event id, whether the final event came, and whether the request
// was answered with a stream at all.
func upgradeStream(lb string, body []byte, last string, load *upgradeLoad) (task, lastID string, final, ok bool) {
	req, _ := http.NewRequest(http.MethodPost, lb+"/a2a", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		load.requestFailures.Add(1)
		load.fail("stream: " + err.Error())
		return "", last, false, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		load.requestFailures.Add(1)
		load.fail(fmt.Sprintf("stream: HTTP %d %s", resp.StatusCode, raw))
		return "", last, false, false
	}
	lastID = last
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			lastID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			var ev struct {
				Result struct {
					ID, TaskID string
					Final      bool
					Status     struct{ State string }
				}
				Error any
			}
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev) != nil || ev.Error != nil {
				load.requestFailures.Add(1)
				load.fail("stream event: " + line)
				return task, lastID, false, false
			}
			if ev.Result.TaskID != "" {
				task = ev.Result.TaskID
			} else if ev.Result.ID != "" {
				task = ev.Result.ID
			}
			switch ev.Result.Status.State {
			case "completed", "failed", "canceled", "rejected":
				final = true
			}
			final = final || ev.Result.Final
		}
	}
	return task, lastID, final, true
}
