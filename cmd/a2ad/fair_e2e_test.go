package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// partnerCatalog offers partners echo, ask, and a sleep without
// max_concurrency: only the server's caps and the caller's bound its
// calls.
const partnerCatalog = `functions:
  - id: demo::echo
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    retry_safe: true
    builtin: echo
  - id: demo::ask
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    builtin: ask
  - id: demo::nap
    metadata: {"a2a.expose": true, "a2a.tier": partner}
    timeout: 60s
    builtin: sleep
`

// startPartners runs the real server on partnerCatalog with more
// partners than startKeyed's, whose secrets it returns; keyLines adds
// lines to an entry ("acme": "max_calls: 3").
func startPartners(t *testing.T, mod func(*Config), keyLines map[string]string, more ...string) (*keyed, []string) {
	t.Helper()
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, partnerCatalog)
	var secrets []string
	k := startKeyed(t, func(c *Config) {
		c.Catalog = catalog
		for _, id := range more {
			secrets = append(secrets, mustAppendKey(t, c.Keys, id, "partner"))
		}
		b, err := os.ReadFile(c.Keys)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for id, lines := range keyLines {
			s = strings.Replace(s, "id: "+id+"\n", "id: "+id+"\n    "+lines+"\n", 1)
		}
		if err := os.WriteFile(c.Keys, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if mod != nil {
			mod(c)
		}
	})
	return k, secrets
}

// nap is a non-blocking call of demo::nap.
func nap(id string) map[string]any {
	return sendParams(id, "demo::nap", map[string]any{"seconds": 30}, false)
}

// callerBusy is the answer to a call past the caller's cap (id 1, as
// keyed.call sends it).
const callerBusy = `{"jsonrpc":"2.0","id":1,"error":{"code":-32050,"message":"Too many calls of this caller are running or waiting; retry later","data":{"scope":"caller"}}}`

// cancelAll cancels the tasks of key, so that the server stops at once.
func cancelAll(t *testing.T, k *keyed, key string, ids []string) {
	t.Helper()
	for _, id := range ids {
		k.ok(t, key, "tasks/cancel", map[string]any{"id": id})
	}
}

// TestCallsPerCallerOverHTTP reproduces the attack of issue 13 on the
// shared executor, scaled down from 1,100 calls to 48 (the cap is what
// matters, not the flood's size): at the defaults (64 running, 1,024
// waiting, 32 per caller) one key sends 48 non-blocking calls of a slow
// function at once. 32 are taken, 16 refused with -32050 scope "caller"
// and nothing stored for them; another key's echo completes at once, and
// it may fill its own 32; once the first key's calls end it calls again.
func TestCallsPerCallerOverHTTP(t *testing.T) {
	k, _ := startPartners(t, nil, nil)

	var (
		mu       sync.Mutex
		taken    []string
		refused  []string // messageIds
		unwanted []string
		wg       sync.WaitGroup
	)
	for i := range 48 {
		wg.Go(func() {
			id := fmt.Sprintf("flood-%d", i)
			status, _, body := k.call(t, k.acme, "message/send", nap(id))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case status == http.StatusOK && string(body) == callerBusy:
				refused = append(refused, id)
			case status == http.StatusOK && bytes.Contains(body, []byte(`"result"`)):
				var r map[string]any
				_ = json.Unmarshal(body, &r)
				taken = append(taken, r["result"].(map[string]any)["id"].(string))
			default:
				unwanted = append(unwanted, fmt.Sprintf("HTTP %d %.200s", status, body))
			}
		})
	}
	wg.Wait()
	if len(unwanted) > 0 || len(taken) != 32 || len(refused) != 16 {
		t.Fatalf("48 calls: %d taken, %d refused (want 32, 16); other answers: %v", len(taken), len(refused), unwanted)
	}
	t.Cleanup(func() { cancelAll(t, k, k.acme, taken) })
	// Nothing of a refused call is stored: acme has its 32 tasks, and a
	// retry of a refused message is refused again, not answered.
	list := k.ok(t, k.acme, "tasks/list", map[string]any{"page_size": 1})
	if total := list["result"].(map[string]any)["total_size"]; total != float64(32) {
		t.Fatalf("acme has %v tasks stored, want 32", total)
	}
	if status, _, body := k.call(t, k.acme, "message/send", nap(refused[0])); status != http.StatusOK || string(body) != callerBusy {
		t.Fatalf("retry of a refused call: HTTP %d %s", status, body)
	}

	// bob is not held up: his echo runs at once.
	start := time.Now()
	task := resultTask(t, k.ok(t, k.bob, "message/send", sendParams("bob-echo", "demo::echo", map[string]any{"hi": 1}, true)))
	if state(task) != "completed" {
		t.Fatalf("bob's echo beside acme's flood: %s", state(task))
	}
	t.Logf("bob's echo beside 32 of acme's calls: %v", time.Since(start))
	// bob has a cap of his own: his 32 take the other slots.
	var bobs []string
	for i := range 32 {
		bobs = append(bobs, resultTask(t, k.ok(t, k.bob, "message/send", nap(fmt.Sprintf("bob-%d", i))))["id"].(string))
	}
	t.Cleanup(func() { cancelAll(t, k, k.bob, bobs) })
	if status, _, body := k.call(t, k.bob, "message/send", nap("bob-32")); status != http.StatusOK || string(body) != callerBusy {
		t.Fatalf("bob's 33rd call: HTTP %d %s", status, body)
	}

	// Once acme's calls end (here: canceled), acme calls again.
	cancelAll(t, k, k.acme, taken)
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, _, body := k.call(t, k.acme, "message/send", sendParams("after", "demo::echo", map[string]any{"n": 1}, true))
		if status == http.StatusOK && !bytes.Contains(body, []byte(`"error"`)) {
			break
		}
		if string(body) != callerBusy || time.Now().After(deadline) {
			t.Fatalf("acme after its calls ended: HTTP %d %s", status, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCallCapsByKeyAndServer: a key's own max_calls wins over
// --max-calls-per-caller (0: no cap of its own), and a caller under its
// cap still meets the server's queue, refused with -32050 scope
// "server"; 1.0 carries the scope in the error's metadata; the audit
// trail says over_capacity, in summary; keys list shows max_calls.
func TestCallCapsByKeyAndServer(t *testing.T) {
	k, more := startPartners(t, func(c *Config) {
		c.MaxConcurrent, c.MaxQueue, c.MaxCallsPerCaller = 4, 4, 2
	}, map[string]string{"acme": "max_calls: 3", "carol": "max_calls: 0"}, "carol")
	carol := more[0]
	ids := map[string][]string{} // key → its tasks
	take := func(key, msgID string) {
		t.Helper()
		ids[key] = append(ids[key], resultTask(t, k.ok(t, key, "message/send", nap(msgID)))["id"].(string))
	}
	t.Cleanup(func() {
		for key, list := range ids {
			cancelAll(t, k, key, list)
		}
	})
	refusedWith := func(key, msgID, want string) {
		t.Helper()
		if status, _, body := k.call(t, key, "message/send", nap(msgID)); status != http.StatusOK || string(body) != want {
			t.Fatalf("%s: HTTP %d %s\nwant %s", msgID, status, body, want)
		}
	}
	for i := range 3 {
		take(k.acme, fmt.Sprint("acme-", i)) // its own cap: 3
	}
	refusedWith(k.acme, "acme-3", callerBusy)
	for i := range 2 {
		take(k.bob, fmt.Sprint("bob-", i)) // the flag's: 2
	}
	refusedWith(k.bob, "bob-2", callerBusy)
	// 5 of the server's 8 places are taken; carol has no cap of her own.
	for i := range 3 {
		take(carol, fmt.Sprint("carol-", i))
	}
	refusedWith(carol, "carol-3",
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32050,"message":"Server busy: too many calls are waiting; retry later","data":{"scope":"server"}}}`)
	// A caller at its cap hears of its own cap, full server or not.
	refusedWith(k.acme, "acme-4", callerBusy)

	v1body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": v1Send("acme-v1", "demo::nap", map[string]any{"seconds": 30}, true)})
	_, v1out := postRaw(t, k.base, v1body, http.Header{"A2A-Version": {"1.0"}, "Authorization": {"Bearer " + k.acme}})
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32050,"message":"Too many calls of this caller are running or waiting; retry later","data":[` +
		`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"SERVER_BUSY","domain":"github.com/a2ad/a2ad","metadata":{"scope":"caller"}}]}}`
	if string(v1out) != want {
		t.Errorf("1.0 SendMessage past the cap:\n%s\nwant\n%s", v1out, want)
	}

	// The five refusals are audited in summary, a record per caller and
	// window standing for its refusals since the last (issue 25 item 3):
	// acme's first of three, bob's and carol's, each "refused" 1; acme's
	// other two wait for the next window.
	busy := map[string]float64{}
	for _, r := range k.auditRecords(t) {
		if r["code"] == float64(-32050) {
			busy[r["caller"].(string)] += r["refused"].(float64)
			if r["reason"] != "over_capacity" || r["outcome"] != "transport_denied" {
				t.Errorf("audit of a -32050: %v", r)
			}
		}
	}
	if want := map[string]float64{"acme": 1, "bob": 1, "carol": 1}; !maps.Equal(busy, want) {
		t.Errorf("audit records of -32050 by caller, refusals they stand for: %v, want %v", busy, want)
	}

	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"keys", "list", "--keys", k.keys}, nil, &out, &errOut, func(string) (string, bool) { return "", false }); code != 0 {
		t.Fatalf("keys list: %d %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "\nacme                     enabled  default              default    default        default  3         default     partner\n") ||
		!strings.Contains(out.String(), "\ncarol                    enabled  default              default    default        default  unlimited default     partner\n") {
		t.Errorf("keys list:\n%s", out.String())
	}
}

// bigSend is a message/send body of exactly n bytes: a non-blocking echo
// of a padded input.
func bigSend(tb testing.TB, msgID string, n int) []byte {
	tb.Helper()
	body := func(pad int) []byte {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send",
			"params": sendParams(msgID, "demo::echo", map[string]any{"s": strings.Repeat("x", pad)}, false)})
		return b
	}
	b := body(0)
	b = body(n - len(b))
	if len(b) != n {
		tb.Fatalf("body of %d bytes, want %d", len(b), n)
	}
	return b
}

// bytesLimited is the answer to a request from a caller whose budget of
// request bytes is in debt.
func bytesLimited(ms int64) string {
	return `{"jsonrpc":"2.0","id":null,"error":{"code":-32052,"message":"Request bytes rate exceeded; retry after data.retryAfterMs milliseconds","data":{"retryAfterMs":` +
		strconv.FormatInt(ms, 10) + `,"scope":"bytes"}}}`
}

// TestRequestBytesRateOverHTTP reproduces the attack of issue 13 on
// request bytes, scaled down: a key whose own rate_bytes is 100,000
// bytes a second sends 200,000-byte bodies. Its budget (--rate-bytes-burst,
// 512 KiB) takes three, the third into debt; the fourth is refused
// before its body is read with HTTP 429, Retry-After and -32052 scope
// "bytes", until the debt is paid. Another key, at --rate-bytes, is not
// affected; anonymous callers have a budget per address, in the bounded
// set of --rate-buckets. The clock is frozen: nothing refills unless the
// test says so.
func TestRequestBytesRateOverHTTP(t *testing.T) {
	const (
		size  = 200_000
		burst = 512 << 10
		rate  = 100_000
	)
	k, _ := startPartners(t, func(c *Config) {
		c.MaxBodyBytes = 256 << 10
		c.RateBytesBurst = burst
		anonymousPartners(c)
		c.TrustedProxies = "127.0.0.1/32"
		c.RateBuckets = 2
	}, map[string]string{"acme": "rate_bytes: " + strconv.Itoa(rate)})
	send := func(key, msgID string, h http.Header) (*http.Response, []byte) {
		t.Helper()
		if h == nil {
			h = http.Header{}
		}
		if key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
		return postRaw(t, k.base, bigSend(t, msgID, size), h)
	}
	for i := range 3 {
		if resp, body := send(k.acme, fmt.Sprint("acme-", i), nil); resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"error"`)) {
			t.Fatalf("acme's body %d within its budget: HTTP %d %.200s", i, resp.StatusCode, body)
		}
	}
	debt := int64(3*size - burst)
	ms := (debt*1000 + rate - 1) / rate // 880 ms
	for i := range 2 {
		resp, body := send(k.acme, "acme-3", nil)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || string(body) != bytesLimited(ms) {
			t.Fatalf("acme in debt (%d): HTTP %d Retry-After %q %s\nwant 429 1 %s", i, resp.StatusCode, resp.Header.Get("Retry-After"), body, bytesLimited(ms))
		}
	}
	// bob, at --rate-bytes (1 MiB/s), has a budget of his own.
	for i := range 2 {
		if resp, body := send(k.bob, fmt.Sprint("bob-", i), nil); resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"error"`)) {
			t.Errorf("bob beside acme's debt: HTTP %d %.200s", resp.StatusCode, body)
		}
	}
	// Once the debt is paid, acme sends again (into debt again).
	k.clock.Advance(time.Duration(ms-1) * time.Millisecond)
	if resp, _ := send(k.acme, "acme-3", nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("acme 1 ms before its debt is paid: HTTP %d", resp.StatusCode)
	}
	k.clock.Advance(time.Millisecond)
	if resp, body := send(k.acme, "acme-3", nil); resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"error"`)) {
		t.Fatalf("acme once its debt is paid: HTTP %d %.200s", resp.StatusCode, body)
	}
	// Refused bodies were never stored: acme has its 4 tasks (asked once
	// its new debt of 200,000 bytes is paid, 2 s on).
	k.clock.Advance(2 * time.Second)
	list := k.ok(t, k.acme, "tasks/list", map[string]any{"page_size": 1})
	if total := list["result"].(map[string]any)["total_size"]; total != float64(4) {
		t.Errorf("acme has %v tasks, want 4", total)
	}

	// Anonymous callers: one budget per client address (behind the
	// trusted proxy, from X-Forwarded-For), at --rate-bytes.
	xff := func(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }
	for i := range 3 {
		send("", fmt.Sprint("anon1-", i), xff("198.51.100.1"))
	}
	if resp, _ := send("", "anon1-3", xff("198.51.100.1")); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("an anonymous client past its budget: HTTP %d", resp.StatusCode)
	}
	if resp, body := send("", "anon2-0", xff("198.51.100.2")); resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"error"`)) {
		t.Errorf("another anonymous client: HTTP %d %.200s", resp.StatusCode, body)
	}
	for i := range 5 {
		send("", "anon-more", xff(fmt.Sprintf("198.51.100.%d", 10+i)))
	}
	if n := k.m.gate.ByteAddresses(); n > 2 {
		t.Errorf("%d address budgets held, over --rate-buckets 2", n)
	}

	// The audit trail and the metrics name the refusals.
	// In summary: one record per caller (or address) per window, its
	// "refused" the refusals it stands for; the metric counts each one.
	limited, records := 0, 0
	for _, r := range k.auditRecords(t) {
		if r["reason"] == "bytes_rate_limited" {
			n, _ := r["refused"].(float64)
			limited += int(n)
			records++
			if r["code"] != float64(-32052) || r["outcome"] != "transport_denied" {
				t.Errorf("audit of a bytes refusal: %v", r)
			}
		}
	}
	resp, err := http.Get("http://" + k.m.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var metrics bytes.Buffer
	_, _ = metrics.ReadFrom(resp.Body)
	var counted int
	if m := regexp.MustCompile(`a2ad_rate_limit_rejections_total\{limit="bytes"\} (\d+)\n`).FindStringSubmatch(metrics.String()); m != nil {
		counted, _ = strconv.Atoi(m[1])
	}
	if records < 2 || limited < records || counted < 4 || limited > counted {
		t.Errorf("%d audit records stand for %d bytes_rate_limited refusals; the metric counts %d (want at least 4, and no fewer than the records)", records, limited, counted)
	}
}
