package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The soak: one hostile caller (mallory) runs the attacks of issue 13
// items 1, 2 and 4 against the real binary (slow bodies throughout, the
// others each in a phase of their own, see below), while another caller
// (alice) sends echo calls. alice's calls must not be slowed down (judged
// by hers without the attack, see measureDegradation), every
// task she was answered for must be stored (read back after a SIGTERM and
// a restart), and the server must stop promptly.
//
// It runs only with A2AD_SOAK=1 (.ci/run sets it): it takes about a
// minute and thousands of file descriptors. A2AD_SOAK_DURATION changes how
// long the attacks last (default 40s). The gRPC attacks follow, in a
// phase of their own (soak_grpc_test.go).

const soakCatalog = `functions:
  - id: soak::echo
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    timeout: 5s
    retry_safe: true
    builtin: echo
  - id: soak::ask
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    timeout: 5s
    builtin: ask
  - id: soak::sleep
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    timeout: 60s
    retry_safe: true
    builtin: sleep
  - id: soak::wide
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    timeout: 20s
    exec:
      argv: [./wide.sh]
  - id: soak::big
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    timeout: 20s
    exec:
      argv: [./big.sh]
`

// big.sh prints one JSON object of about 15 MB, far past the output cap
// (1 MiB by default): a2ad reads up to the cap and fails the call, and
// 16 of these at once show what that costs.
const soakBigScript = `#!/bin/sh
printf '{"s":"'
head -c 15000000 /dev/zero | tr '\0' a
printf '"}'
`

type soakStats struct {
	mu    sync.Mutex
	codes map[string]int // outcome → count
}

func (s *soakStats) add(k string) {
	s.mu.Lock()
	s.codes[k]++
	s.mu.Unlock()
}

// refusedPause is how long mallory waits after a refusal. The attacks are
// those of the issue (a growing outbox, slow bodies, large inputs and
// outputs, held executor slots), not a flood of refused requests: on this
// 2-core machine such a flood is mostly the load generator's own CPU, and
// what the server spends on a refusal is bounded by the rate limits.
const refusedPause = 50 * time.Millisecond

// readerP99Floor is the p99 under which the reader phase is not judged
// a slowdown: below it, two cores shared with the attackers decide. It is
// under the 50 ms and more that unbounded reads gave.
const readerP99Floor = 30 * time.Millisecond

// note counts an answer and, when it is a refusal, pauses.
func (s *soakStats) note(kind, o string) {
	s.add(kind + ":" + o)
	if o != "ok" {
		time.Sleep(refusedPause)
	}
}

func (s *soakStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.codes))
	for k := range s.codes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, s.codes[k])
	}
	return b.String()
}

// soakClient posts JSON-RPC from a chosen loopback source address, so
// that mallory and alice are different client addresses.
type soakClient struct {
	http *http.Client
	base string
	key  string
}

func newSoakClient(base, key, source string, conns int) *soakClient {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 5 * time.Second}
	return &soakClient{
		http: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns},
		},
		base: base, key: key,
	}
}

// post sends body and returns the HTTP status and the decoded answer.
func (c *soakClient) post(ctx context.Context, body []byte) (int, map[string]any, error) {
	code, b, err := c.postRaw(ctx, body)
	if err != nil {
		return code, nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return code, nil, fmt.Errorf("HTTP %d: %s", code, truncate(b))
	}
	return code, out, nil
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// outcome names an answer for the stats: "ok", "code:-32052", "http:503", …
func outcome(status int, out map[string]any, err error) string {
	switch {
	case err != nil && status == 0:
		return "neterr"
	case err != nil:
		return "http:" + strconv.Itoa(status)
	case out["error"] != nil:
		code, _ := out["error"].(map[string]any)["code"].(float64)
		return "code:" + strconv.Itoa(int(code))
	default:
		return "ok"
	}
}

func soakMessage(msgID, taskID, skill string, input any) map[string]any {
	m := map[string]any{"kind": "message", "messageId": msgID, "role": "user",
		"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"skill": skill, "input": input}}}}
	if taskID != "" {
		m["taskId"] = taskID
	}
	return m
}

func raiseFileLimit(tb testing.TB, want uint64) {
	tb.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			tb.Fatal(err)
		}
	}
	if lim.Cur < want {
		tb.Fatalf("soak: needs %d file descriptors, the hard limit is %d", want, lim.Cur)
	}
}

func TestSoakHostileCaller(t *testing.T) {
	if os.Getenv("A2AD_SOAK") != "1" {
		t.Skip("soak: set A2AD_SOAK=1 to run it (.ci/run does)")
	}
	duration := 40 * time.Second
	if v := os.Getenv("A2AD_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		duration = d
	}
	attacks := "outbox,slow,input,output,calls,reads,grpc"
	if v := os.Getenv("A2AD_SOAK_ATTACKS"); v != "" {
		attacks = v // to see what each costs alone
	}
	on := func(name string) bool { return slices.Contains(strings.Split(attacks, ","), name) }
	const slowConns = 3000
	raiseFileLimit(t, 2*slowConns+1000)

	dir := t.TempDir()
	putFile(t, filepath.Join(dir, "catalog.yaml"), soakCatalog)
	putScript(t, filepath.Join(dir, "big.sh"), soakBigScript)
	putScript(t, filepath.Join(dir, "wide.sh"), soakWideScript)
	keys := filepath.Join(dir, "keys.yaml")
	alice := mustAppendKey(t, keys, "alice", "partner")
	mallory := mustAppendKey(t, keys, "mallory", "partner")
	store := filepath.Join(dir, "a2ad.db")
	args := []string{"--keys", keys, "--push-allow", "127.0.0.1/32", "--audit-log", filepath.Join(dir, "audit.log"), "--log-level", "info", "--grpc-listen", "127.0.0.1:0"}
	begun := time.Now()
	p := startBinary(t, filepath.Join(dir, "catalog.yaml"), store, args...)
	t.Logf("started in %v", time.Since(begun).Round(time.Millisecond))

	// Webhook receivers: half refuse connections, half accept and never
	// answer (each attempt then lasts --push-timeout).
	refusing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + refusing.Addr().String() + "/hook"
	refusing.Close()
	hanging, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hanging.Close()
	go func() {
		for {
			c, err := hanging.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	hangingURL := "http://" + hanging.Addr().String() + "/hook"

	// alice's echo calls without an attack, before it and after it: what
	// hers during the attack are judged by (see measureDegradation).
	ali := newSoakClient(p.base, alice, "127.0.0.1", 4)
	aliceAlone := func(when string) []time.Duration {
		var ls []time.Duration
		for n := range 200 {
			body := rpcBody("message/send", map[string]any{
				"message": soakMessage(fmt.Sprintf("alice-%s-%d", when, n), "", "soak::echo", map[string]any{"message": "hi"})})
			start := time.Now()
			st, out, err := ali.post(context.Background(), body)
			ls = append(ls, time.Since(start))
			if o := outcome(st, out, err); o != "ok" {
				t.Errorf("alice %s the attack: %s %v %v", when, o, err, out)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return ls
	}
	alone := aliceAlone("before")

	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	var wg sync.WaitGroup
	mal := newSoakClient(p.base, mallory, "127.0.0.2", 64)
	ms := &soakStats{codes: map[string]int{}}

	// The attacks share mallory's limits (request rate, byte rate, calls
	// in flight): run together, the first to spend them would keep the
	// others from running at all. So each has a phase of its own, while
	// the slow bodies (item 2) last the whole run:
	//   0-20%   item 1, the outbox loops;
	//   20-40%  item 4, maximal outputs;
	//   40-60%  item 4, large inputs;
	//   60-80%  calls that hold executor slots;
	//   80-100% issue 25 item 4, large reads (soak_reads_test.go).
	const phases = 5
	begin := time.Now()
	phase := func(from, to float64) (context.Context, context.CancelFunc) {
		select {
		case <-time.After(time.Until(begin.Add(time.Duration(from * float64(duration))))):
		case <-ctx.Done():
		}
		return context.WithDeadline(ctx, begin.Add(time.Duration(to*float64(duration))))
	}

	// Item 1: input-required loops with 10 webhooks each.
	for w := range 2 {
		if !on("outbox") {
			break
		}
		wg.Go(func() {
			ctx, cancel := phase(0, 0.2)
			defer cancel()
			var taskID string
			for n := 0; ctx.Err() == nil; n++ {
				if taskID == "" {
					st, out, err := mal.post(ctx, rpcBody("message/send", map[string]any{
						"message": soakMessage(fmt.Sprintf("ask-%d-%d", w, n), "", "soak::ask", map[string]any{"question": "again?"})}))
					ms.note("ask-new", outcome(st, out, err))
					if res, ok := out["result"].(map[string]any); ok {
						taskID, _ = res["id"].(string)
						for i := range 10 {
							url := refusedURL
							if i%2 == 1 {
								url = hangingURL
							}
							st, out, err := mal.post(ctx, rpcBody("tasks/pushNotificationConfig/set", map[string]any{
								"taskId": taskID, "pushNotificationConfig": map[string]any{"id": fmt.Sprintf("h%d", i), "url": url, "token": "t"}}))
							ms.note("push-set", outcome(st, out, err))
						}
					}
					continue
				}
				st, out, err := mal.post(ctx, rpcBody("message/send", map[string]any{
					"message": soakMessage(fmt.Sprintf("ask-%d-%d", w, n), taskID, "soak::ask", map[string]any{"question": strings.Repeat("q", 10000)})}))
				o := outcome(st, out, err)
				ms.note("ask-reply", o)
				if o != "ok" {
					// Refused (a cap, or the task ended): start a new loop.
					taskID = ""
				}
			}
		})
	}

	// Item 4: large inputs as fast as the rate limit allows, and 16
	// concurrent maximal outputs.
	big := strings.Repeat("x", 900<<10)
	for w := range 4 {
		if !on("input") {
			break
		}
		wg.Go(func() {
			ctx, cancel := phase(0.4, 0.6)
			defer cancel()
			for n := 0; ctx.Err() == nil; n++ {
				st, out, err := mal.post(ctx, rpcBody("message/send", map[string]any{
					"message": soakMessage(fmt.Sprintf("big-in-%d-%d", w, n), "", "soak::echo", map[string]any{"message": big})}))
				ms.note("big-input", outcome(st, out, err))
			}
		})
	}
	for w := range 16 {
		if !on("output") {
			break
		}
		wg.Go(func() {
			ctx, cancel := phase(0.2, 0.4)
			defer cancel()
			for n := 0; ctx.Err() == nil; n++ {
				st, out, err := mal.post(ctx, rpcBody("message/send", map[string]any{
					"message": soakMessage(fmt.Sprintf("big-out-%d-%d", w, n), "", "soak::big", map[string]any{})}))
				ms.note("big-output", outcome(st, out, err))
			}
		})
	}

	// Calls that hold executor slots: non-blocking sleeps, as many as
	// mallory may start, so that the shared queue would fill.
	for w := range 2 {
		if !on("calls") {
			break
		}
		wg.Go(func() {
			ctx, cancel := phase(0.6, 0.8)
			defer cancel()
			for n := 0; ctx.Err() == nil; n++ {
				st, out, err := mal.post(ctx, rpcBody("message/send", map[string]any{
					"message":       soakMessage(fmt.Sprintf("sleep-%d-%d", w, n), "", "soak::sleep", map[string]any{"seconds": 5}),
					"configuration": map[string]any{"blocking": false}}))
				ms.note("sleep", outcome(st, out, err))
			}
		})
	}

	var reads *soakReads
	if on("reads") {
		reads = soakReaders(ctx, &wg, p.base, mallory, p.cmd.Process.Pid, ms, phase)
	}

	// Item 2: thousands of connections that send a request's headers and
	// then one byte of body every 5 s.
	var slowOpen, slowCut atomic.Int64
	for i := range slowConns {
		if !on("slow") {
			break
		}
		wg.Go(func() {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
			// Spread the dials over the first seconds.
			select {
			case <-time.After(time.Duration(i) * time.Millisecond):
			case <-ctx.Done():
				return
			}
			c, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(p.base, "http://"))
			if err != nil {
				slowCut.Add(1)
				return
			}
			defer c.Close()
			slowOpen.Add(1)
			go func() { <-ctx.Done(); c.Close() }()
			_, err = fmt.Fprintf(c, "POST /a2a HTTP/1.1\r\nHost: a2ad\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", mallory)
			for err == nil && ctx.Err() == nil {
				select {
				case <-time.After(5 * time.Second):
					_, err = c.Write([]byte(" "))
				case <-ctx.Done():
				}
			}
			if ctx.Err() == nil {
				slowCut.Add(1)
			}
		})
	}

	// alice: echo calls, two at a time, through the whole attack.
	var (
		mu        sync.Mutex
		latencies []time.Duration
		byPhase   [phases][]time.Duration
		acked     []string
		failures  []string
	)
	// Let the attacks build up before measuring.
	time.Sleep(2 * time.Second)
	for w := range 2 {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				body := rpcBody("message/send", map[string]any{
					"message": soakMessage(fmt.Sprintf("alice-%d-%d", w, n), "", "soak::echo", map[string]any{"message": "hi"})})
				start := time.Now()
				st, out, err := ali.post(context.Background(), body)
				d := time.Since(start)
				mu.Lock()
				latencies = append(latencies, d)
				if i := int(phases * float64(start.Sub(begin)) / float64(duration)); i >= 0 && i < phases {
					byPhase[i] = append(byPhase[i], d)
				}
				res, _ := out["result"].(map[string]any)
				if o := outcome(st, out, err); o != "ok" || res["status"].(map[string]any)["state"] != "completed" {
					failures = append(failures, fmt.Sprintf("%s %v %v", o, err, out))
				} else {
					acked = append(acked, res["id"].(string))
				}
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	// /healthz on the admin listener answers throughout.
	var healthSlow atomic.Int64
	wg.Go(func() {
		hc := &http.Client{Timeout: 2 * time.Second}
		for ctx.Err() == nil {
			resp, err := hc.Get(p.admin + "/healthz")
			if err != nil || resp.StatusCode != http.StatusOK {
				healthSlow.Add(1)
			}
			if resp != nil {
				resp.Body.Close()
			}
			time.Sleep(500 * time.Millisecond)
		}
	})

	wg.Wait()
	t.Logf("attacks ended after %v", time.Since(begun).Round(time.Millisecond))
	alone = append(alone, aliceAlone("after")...)

	for i, ls := range byPhase {
		if len(ls) > 0 {
			slices.Sort(ls)
			t.Logf("alice in phase %d: %d calls, p50 %v, p99 %v", i+1, len(ls), ls[len(ls)/2], ls[len(ls)*99/100])
		}
	}
	if reads != nil {
		t.Logf("reads: %v", reads)
		// Judged against her p99 without the attack, or in the phase
		// before, whose background (the slow bodies, the sleeps still
		// running) the reader phase shares, whichever is higher.
		ref := p99(slices.Clone(alone))
		if ls := byPhase[phases-2]; len(ls) > 0 {
			ref = max(ref, p99(slices.Clone(ls)))
		}
		if ls := byPhase[phases-1]; len(ls) > 0 {
			t.Logf("alice's p99 in the reader phase %v, %.2f× her reference p99 %v", p99(slices.Clone(ls)), float64(p99(slices.Clone(ls)))/float64(ref), ref)
			// A p99 of a few hundred calls is their third-slowest: on two
			// cores shared with the attackers themselves it moves by 2×
			// from run to run at the millisecond scale (1.15×, 1.73×,
			// 2.19× for 3.9 ms to 8.5 ms in three CI runs; 18 ms at 2.35×
			// with a benchmark beside it), so the bound has a floor, as
			// measureDegradation's slow calls do. Unbounded reads made it
			// 13× (over 50 ms), which this fails.
			if got := p99(slices.Clone(ls)); got > 2*ref && got > readerP99Floor {
				t.Errorf("alice's p99 in the reader phase %v is over twice her reference p99 %v and over %v", got, ref, readerP99Floor)
			}
		}
	}
	slices.Sort(latencies)
	if len(latencies) == 0 {
		t.Fatal("alice made no call")
	}
	p50 := latencies[len(latencies)/2]
	p99 := latencies[len(latencies)*99/100]
	fi, _ := os.Stat(store)
	t.Logf("alice: %d calls, %d acknowledged, p50 %v, p99 %v, max %v", len(latencies), len(acked), p50, p99, latencies[len(latencies)-1])
	t.Logf("mallory: %s", ms)
	t.Logf("slow connections: %d opened, %d cut by the server; /healthz failures: %d; store file %d bytes", slowOpen.Load(), slowCut.Load(), healthSlow.Load(), fi.Size())
	if len(failures) > 0 {
		t.Errorf("alice: %d of %d calls failed, first: %s", len(failures), len(latencies), failures[0])
	}
	g := measureDegradation(alone, latencies)
	t.Logf("alice against her calls without the attack: %v", g)
	if g.degraded() {
		t.Errorf("mallory slowed alice down: %v", g)
	}
	if healthSlow.Load() > 0 {
		t.Errorf("/healthz failed %d times", healthSlow.Load())
	}
	if on("grpc") {
		soakGRPC(t, grpcListenOf(t, p), alice, mallory)
	}

	// SIGTERM ends the server promptly, and every task alice was
	// answered for is there after a restart.
	start := time.Now()
	_ = p.terminate(t, 30*time.Second)
	t.Logf("SIGTERM: exited after %v", time.Since(start).Round(time.Millisecond))
	restart := time.Now()
	p2 := startBinary(t, filepath.Join(dir, "catalog.yaml"), store, args...)
	t.Logf("restarted in %v", time.Since(restart).Round(time.Millisecond))
	check := newSoakClient(p2.base, alice, "127.0.0.1", 4)
	missing := 0
	for _, id := range acked {
		st, out, err := check.post(context.Background(), rpcBody("tasks/get", map[string]any{"id": id, "historyLength": 0}))
		for try := 0; st == http.StatusTooManyRequests && try < 50; try++ {
			time.Sleep(50 * time.Millisecond) // alice's own rate limit
			st, out, err = check.post(context.Background(), rpcBody("tasks/get", map[string]any{"id": id, "historyLength": 0}))
		}
		res, _ := out["result"].(map[string]any)
		if err != nil || st != http.StatusOK || res == nil || res["status"].(map[string]any)["state"] != "completed" {
			missing++
			if missing < 5 {
				t.Errorf("acknowledged task %s after the restart: HTTP %d %v %v", id, st, err, out)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged tasks missing after the restart", missing, len(acked))
	}
}
