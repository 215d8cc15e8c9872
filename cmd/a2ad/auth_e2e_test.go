package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/tasks"
)

// Tests of issue 13 items 6 and 9 against the real server: client
// addresses behind a proxy, the bounded bucket map, conflicting
// credentials, revoked keys' streams, the throttle of failed
// authentications and the caps on push configs and file bytes.

// recordsWhere returns the audit records whose key holds value.
func recordsWhere(recs []map[string]any, key string, value any) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r[key] == value {
			out = append(out, r)
		}
	}
	return out
}

// TestTrustedProxies is the attack of item 6: behind a reverse proxy
// every anonymous client shared one bucket, so one client made another get
// 429. Now a trusted proxy's X-Forwarded-For (or Forwarded) names the
// client, and a peer that is not trusted cannot pick its bucket by sending
// the header.
func TestTrustedProxies(t *testing.T) {
	k := startKeyed(t, func(c *Config) {
		anonymousPartners(c)
		c.RatePerSecond = 1
		c.RateBurst = 2
		c.TrustedProxies = "127.0.0.2/32"
	})
	proxy, stranger := fromAddr("127.0.0.2"), fromAddr("127.0.0.3")
	get := rpcBody("tasks/get", map[string]any{"id": "no-such-task"})
	status := func(hc *http.Client, h http.Header) int {
		resp, _ := postURL(t, hc, k.base+"/a2a", get, h)
		return resp.StatusCode
	}
	xff := func(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }

	// Two clients behind the proxy: each has its own burst of 2. (The
	// clock is frozen: nothing refills.)
	for i := range 2 {
		if s := status(proxy, xff("198.51.100.1")); s != http.StatusOK {
			t.Fatalf("client 1, request %d: HTTP %d", i+1, s)
		}
	}
	if s := status(proxy, xff("198.51.100.1")); s != http.StatusTooManyRequests {
		t.Fatalf("client 1 over its burst: HTTP %d, want 429", s)
	}
	for i := range 2 {
		if s := status(proxy, xff("198.51.100.2")); s != http.StatusOK {
			t.Errorf("client 2, request %d, after client 1 spent its burst: HTTP %d", i+1, s)
		}
	}
	// Forwarded works too, and the proxy's chain is walked from the right:
	// what a client wrote before the proxy's entry counts for nothing.
	if s := status(proxy, http.Header{"Forwarded": {`for=198.51.100.1, for="198.51.100.3:4711"`}}); s != http.StatusOK {
		t.Errorf("client 3 by Forwarded: HTTP %d", s)
	}
	if s := status(proxy, xff("198.51.100.2, 198.51.100.4")); s != http.StatusOK {
		t.Errorf("client 4, naming client 2 first: HTTP %d", s)
	}

	// A peer that is not a trusted proxy gets nothing from the header: a
	// new address in each request still spends its own peer's bucket.
	for i := range 2 {
		if s := status(stranger, xff("203.0.113."+strconv.Itoa(i+1))); s != http.StatusOK {
			t.Fatalf("stranger, request %d: HTTP %d", i+1, s)
		}
	}
	if s := status(stranger, xff("203.0.113.9")); s != http.StatusTooManyRequests {
		t.Errorf("stranger's spoofed X-Forwarded-For gave it a new bucket: HTTP %d, want 429", s)
	}
	if s := status(stranger, http.Header{"Forwarded": {"for=203.0.113.10"}}); s != http.StatusTooManyRequests {
		t.Errorf("stranger's spoofed Forwarded gave it a new bucket: HTTP %d, want 429", s)
	}

	// Every audit record names the client address; the stranger's two
	// refusals are one record (the window's summary: the second waits).
	recs := k.auditRecords(t)
	count := map[string]int{}
	for _, r := range recs {
		addr, ok := r["client_addr"].(string)
		if !ok {
			t.Fatalf("audit record without client_addr: %v", r)
		}
		count[addr]++
	}
	want := map[string]int{"198.51.100.1": 3, "198.51.100.2": 2, "198.51.100.3": 1, "198.51.100.4": 1, "127.0.0.3": 3}
	if len(count) != len(want) {
		t.Errorf("audit records by client_addr = %v, want %v", count, want)
	}
	for addr, n := range want {
		if count[addr] != n {
			t.Errorf("%d audit records from %s, want %d (all: %v)", count[addr], addr, n, count)
		}
	}
}

// TestRateBucketsBounded: the per-address bucket map of item 6 (1.2
// million addresses took the RSS from 28 MB to 763 MB) stays at
// --rate-buckets, and a map full of active buckets lets no new address
// bypass the limit: new addresses share one overflow bucket. Scaled down:
// 16 buckets and 200 addresses (the memory bound with a million addresses
// is TestLimiterMemoryBounded in package callers).
func TestRateBucketsBounded(t *testing.T) {
	k := startKeyed(t, func(c *Config) {
		anonymousPartners(c)
		c.RatePerSecond = 1
		c.RateBurst = 2
		c.RateBuckets = 16
		c.TrustedProxies = "127.0.0.2"
	})
	proxy := fromAddr("127.0.0.2")
	get := rpcBody("tasks/get", map[string]any{"id": "no-such-task"})
	client := func(i int) http.Header {
		return http.Header{"X-Forwarded-For": {"10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)}}
	}
	ok := 0
	for i := range 200 {
		if resp, _ := postURL(t, proxy, k.base+"/a2a", get, client(i)); resp.StatusCode == http.StatusOK {
			ok++
		}
	}
	if n := k.m.gate.Addresses(); n != 16 {
		t.Errorf("%d address buckets after 200 addresses, want --rate-buckets 16", n)
	}
	// 16 addresses got buckets of their own; the other 184 shared one
	// overflow bucket, whose burst let 2 through.
	if ok != 16+2 {
		t.Errorf("%d of 200 new addresses served, want 18", ok)
	}
	// Once buckets are full again they make room: a new address is served.
	k.clock.Advance(2 * time.Second)
	if resp, body := postURL(t, proxy, k.base+"/a2a", get, client(1000)); resp.StatusCode != http.StatusOK {
		t.Errorf("a new address after the buckets refilled: HTTP %d %s", resp.StatusCode, body)
	}
	if n := k.m.gate.Addresses(); n != 16 {
		t.Errorf("%d address buckets, want 16", n)
	}
}

// TestConflictingCredentials: a request whose credentials disagree or
// repeat is refused, even when one of them is a valid key (item 9: a valid
// Bearer key with a different X-API-Key was served, and of two
// Authorization headers the first won).
func TestConflictingCredentials(t *testing.T) {
	k := startKeyed(t, anonymousPartners)
	const (
		challenge = `Bearer realm="a2ad", error="invalid_request"`
		body      = `{"jsonrpc":"2.0","id":null,"error":{"code":-32054,"message":"Conflicting credentials: send one API key, in the Authorization header (Bearer) or in X-API-Key, once"}}`
	)
	for _, tt := range []struct {
		name   string
		header http.Header
	}{
		{"a valid bearer key and another key", http.Header{"Authorization": {"Bearer " + k.acme}, "X-Api-Key": {k.ops}}},
		{"a valid bearer key and an unknown key", http.Header{"Authorization": {"Bearer " + k.acme}, "X-Api-Key": {"a2ad_nope"}}},
		{"an unknown bearer key and a valid key", http.Header{"Authorization": {"Bearer a2ad_nope"}, "X-Api-Key": {k.acme}}},
		{"basic auth and a valid key", http.Header{"Authorization": {"Basic YTpi"}, "X-Api-Key": {k.acme}}},
		{"two authorization headers", http.Header{"Authorization": {"Bearer " + k.acme, "Bearer " + k.ops}}},
		{"one key in two authorization headers", http.Header{"Authorization": {"Bearer " + k.acme, "Bearer " + k.acme}}},
		{"two X-API-Key headers", http.Header{"X-Api-Key": {k.acme, k.ops}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, out := postRaw(t, k.base, rpcBody("message/send", sendParams("c-1", "demo::echo", map[string]any{}, true)), tt.header)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("HTTP %d %s, want 401", resp.StatusCode, out)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, challenge)
			}
			if string(out) != body {
				t.Errorf("body = %s\nwant   %s", out, body)
			}
		})
	}
	// Both headers with one and the same key are one credential: served.
	resp, out := postRaw(t, k.base, rpcBody("message/send", sendParams("c-2", "demo::echo", map[string]any{}, true)),
		http.Header{"Authorization": {"Bearer " + k.acme}, "X-Api-Key": {k.acme}})
	if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"state":"completed"`)) {
		t.Errorf("one key in both headers: HTTP %d %s", resp.StatusCode, out)
	}
	// The audit trail has each refusal, with the client's address.
	refused := recordsWhere(k.auditRecords(t), "reason", "unauthenticated")
	if len(refused) != 7 {
		t.Fatalf("%d unauthenticated records, want 7", len(refused))
	}
	for _, r := range refused {
		if r["client_addr"] != "127.0.0.1" || r["code"] != float64(-32054) || r["caller"] != "" {
			t.Errorf("refusal record: %v", r)
		}
	}
}

// TestRevokedKeyEndsItsStreams: a reload that disables or removes a key
// ends that key's open streams with an error event (item 9: a stream
// opened with a key then revoked streamed on until its task ended). Other
// callers' streams go on, and the tasks run on.
func TestRevokedKeyEndsItsStreams(t *testing.T) {
	k := startKeyed(t, nil)
	carol := mustAppendKey(t, k.keys, "carol", "partner")
	if _, err := k.m.Reload(); err != nil {
		t.Fatal(err)
	}
	taskIDs := map[string]string{}
	open := func(key, msgID string) *sseStream {
		s := openStream(t, nil, k.base, msgID, "message/stream", sendParams(msgID, "demo::sleep", map[string]any{"seconds": 30}, false),
			http.Header{"Authorization": {"Bearer " + key}})
		ev, ok := s.next(t, 5*time.Second)
		var frame struct {
			Result struct {
				Kind, ID string
				Status   struct{ State string }
			} `json:"result"`
		}
		if !ok || json.Unmarshal([]byte(ev.Data), &frame) != nil || frame.Result.Kind != "task" || frame.Result.Status.State != "working" {
			t.Fatalf("%s: first event %+v", msgID, ev)
		}
		taskIDs[msgID] = frame.Result.ID
		return s
	}
	acme, carolS, bob := open(k.acme, "s-acme"), open(carol, "s-carol"), open(k.bob, "s-bob")

	// Disable acme, remove carol; bob stays.
	b, err := os.ReadFile(k.keys)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	inCarol := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "  - id: ") {
			inCarol = line == "  - id: carol"
		}
		switch {
		case inCarol: // its whole entry
		case line == "  - id: acme":
			kept = append(kept, line, "    enabled: false")
		default:
			kept = append(kept, line)
		}
	}
	if err := os.WriteFile(k.keys, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	report, err := k.m.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if report.Keys.Entries != 3 || report.Keys.StreamsEnded != 2 {
		t.Errorf("reload report: %+v, want 3 entries and 2 streams ended", report.Keys)
	}
	for name, s := range map[string]*sseStream{"s-acme": acme, "s-carol": carolS} {
		evs := s.rest(t)
		if len(evs) == 0 {
			t.Fatalf("%s: no event before the end", name)
		}
		last := evs[len(evs)-1]
		want := `{"jsonrpc":"2.0","id":"` + name + `","error":{"code":-32054,"message":"The API key was revoked: the stream is closed"}}`
		if last.Data != want || last.HasID {
			t.Errorf("%s: last event %+v, want data %s without an id", name, last, want)
		}
	}
	// bob's stream is still open: it carries the end of bob's task.
	k.ok(t, k.bob, "tasks/cancel", map[string]any{"id": taskIDs["s-bob"]})
	if evs := bob.rest(t); len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Data, `"state":"canceled"`) {
		t.Errorf("bob's stream after the reload: %+v", evs)
	}
	// acme is refused from now on; its task runs on: the end of a stream
	// never cancels a task.
	if status, _, _ := k.call(t, k.acme, "tasks/get", map[string]any{"id": "x"}); status != http.StatusUnauthorized {
		t.Errorf("acme after the reload: HTTP %d", status)
	}
	if got, err := k.m.service.Get(context.Background(), tasks.Caller{ID: "acme"}, taskIDs["s-acme"], nil); err != nil || got.Status.State != "working" {
		t.Errorf("acme's task after the reload: %v, %v; want it working", got, err)
	}
	for _, c := range []string{"acme", "carol"} {
		if _, err := k.m.service.Cancel(context.Background(), tasks.Caller{ID: c}, taskIDs["s-"+c]); err != nil {
			t.Error(err)
		}
	}
	// The audit trail says why the streams ended.
	revoked := recordsWhere(k.auditRecords(t), "reason", "key_revoked")
	if len(revoked) != 2 {
		t.Fatalf("%d key_revoked records, want 2", len(revoked))
	}
	for _, r := range revoked {
		if r["outcome"] != "transport_denied" || r["rpc_method"] != "message/stream" || r["code"] != float64(-32054) {
			t.Errorf("key_revoked record: %v", r)
		}
	}
}

// TestAuthFloodThrottled is the flood of item 9 (45,000 failures a second
// wrote 13.5 MiB/s of audit log), scaled down to 2,000 failures from one
// address: past --auth-fail-burst, its requests are refused with 429
// unchecked and audited in summary, so the audit trail stays a few lines.
func TestAuthFloodThrottled(t *testing.T) {
	k := startKeyed(t, func(c *Config) {
		c.AuthFailRate = 1
		c.AuthFailBurst = 20
	})
	const flood = 2000
	bad := http.Header{"Authorization": {"Bearer a2ad_guess"}}
	get := rpcBody("tasks/get", map[string]any{"id": "x"})
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		wg       sync.WaitGroup
		next     = make(chan struct{})
	)
	for range 8 {
		wg.Go(func() {
			for range next {
				resp, _ := postRaw(t, k.base, get, bad)
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	for range flood {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	// The clock is frozen: 20 failures, then refusals only. A request
	// checked before the last token went still fails with 401 (the
	// throttle looks, then the key is checked, then a failure is
	// counted), so the 8 senders may add up to 7 more, never a flood.
	n401, n429 := statuses[http.StatusUnauthorized], statuses[http.StatusTooManyRequests]
	if n401 < 20 || n401 > 27 || n401+n429 != flood {
		t.Fatalf("answers by status: %v, want 20 to 27×401 and the rest of %d 429", statuses, flood)
	}
	resp, out := postRaw(t, k.base, get, bad)
	const body = `{"jsonrpc":"2.0","id":null,"error":{"code":-32052,"message":"Too many failed authentications from this address; retry after data.retryAfterMs milliseconds","data":{"retryAfterMs":1000,"scope":"auth"}}}`
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || string(out) != body {
		t.Errorf("a throttled request: HTTP %d, Retry-After %q, %s\nwant 429, 1, %s", resp.StatusCode, resp.Header.Get("Retry-After"), out, body)
	}
	// The address is shut out whatever it sends, a valid key too; another
	// address is not.
	if resp, _ := postRaw(t, k.base, get, http.Header{"Authorization": {"Bearer " + k.acme}}); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a valid key from the throttled address: HTTP %d, want 429", resp.StatusCode)
	}
	if resp, _ := postURL(t, fromAddr("127.0.0.4"), k.base+"/a2a", get, http.Header{"Authorization": {"Bearer " + k.acme}}); resp.StatusCode != http.StatusOK {
		t.Errorf("a valid key from another address: HTTP %d", resp.StatusCode)
	}

	// One record per failure answered 401 (20, and the racing ones) and
	// one of the first refusal: the other refusals wait for a summary.
	recs := k.auditRecords(t)
	fails, throttled := recordsWhere(recs, "reason", "unauthenticated"), recordsWhere(recs, "reason", "auth_throttled")
	if len(fails) != n401 || len(throttled) != 1 {
		t.Fatalf("%d unauthenticated and %d auth_throttled records, want %d (one per 401) and 1", len(fails), len(throttled), n401)
	}
	first := throttled[0]
	for key, v := range map[string]any{"client_addr": "127.0.0.1", "outcome": "transport_denied", "code": float64(-32052), "refused": float64(1)} {
		if first[key] != v {
			t.Errorf("auth_throttled record: %s = %v, want %v (%v)", key, first[key], v, first)
		}
	}
	// Ten seconds on: ten tokens back, ten more failures checked and
	// audited; then a refusal writes the summary of every refusal since
	// the first (n429-1 of the flood, the two after it, and itself).
	k.clock.Advance(10 * time.Second)
	for i := range 10 {
		if resp, _ := postRaw(t, k.base, get, bad); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d after the refill: HTTP %d, want 401", i+1, resp.StatusCode)
		}
	}
	if resp, _ := postRaw(t, k.base, get, bad); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after the refill's failures: HTTP %d, want 429", resp.StatusCode)
	}
	recs = k.auditRecords(t)
	throttled = recordsWhere(recs, "reason", "auth_throttled")
	if len(throttled) != 2 || throttled[1]["refused"] != float64(n429-1+2+1) {
		t.Errorf("auth_throttled records: %v, want a second one with refused %d", throttled, n429-1+2+1)
	}
	// 2,014 requests, 33 to 40 audit records: the n401+10 failures, 2
	// summaries and the call from 127.0.0.4.
	if len(recs) != n401+10+2+1 {
		t.Errorf("%d audit records, want %d", len(recs), n401+10+2+1)
	}
	if st, err := os.Stat(k.audit); err != nil || st.Size() > 16<<10 {
		t.Errorf("the audit log is %d bytes (%v), want under 16 KiB", st.Size(), err)
	}
}

// TestPushAndFileCapsOverHTTP: push urls, tokens and credentials are
// capped, and 0.3 file bytes must be base64, in both versions (item 9:
// a megabyte each was accepted; bytes that are not base64 were stored and
// handed to 1.0 clients).
func TestPushAndFileCapsOverHTTP(t *testing.T) {
	hook := newHookReceiver(t, nil)
	k := startKeyed(t, nil)
	task := resultTask(t, k.ok(t, k.acme, "message/send", sendParams("p-1", "demo::sleep", map[string]any{"seconds": 30}, false)))
	id := task["id"].(string)
	t.Cleanup(func() { k.ok(t, k.acme, "tasks/cancel", map[string]any{"id": id}) })
	big := strings.Repeat("x", 400<<10) // within --max-body-bytes, twice
	for _, tt := range []struct {
		name, method string
		params       any
		want         string
	}{
		{"0.3 set, token", "tasks/pushNotificationConfig/set",
			map[string]any{"taskId": id, "pushNotificationConfig": map[string]any{"url": hook.URL, "token": big}},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters: /pushNotificationConfig/token: must be at most 4096 bytes","data":{"errors":[{"message":"must be at most 4096 bytes","path":"/pushNotificationConfig/token"}]}}}`},
		{"0.3 set, url and token", "tasks/pushNotificationConfig/set",
			map[string]any{"taskId": id, "pushNotificationConfig": map[string]any{"url": hook.URL + "/" + big, "token": big}},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters: /pushNotificationConfig/url: must be at most 2048 bytes (and 1 more problem)","data":{"errors":[{"message":"must be at most 2048 bytes","path":"/pushNotificationConfig/url"},{"message":"must be at most 4096 bytes","path":"/pushNotificationConfig/token"}]}}}`},
		{"0.3 send, url", "message/send",
			func() map[string]any {
				p := sendParams("p-2", "demo::echo", map[string]any{}, true)
				p["configuration"].(map[string]any)["pushNotificationConfig"] = map[string]any{"url": hook.URL + "/" + big}
				return p
			}(),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters: /configuration/pushNotificationConfig/url: must be at most 2048 bytes","data":{"errors":[{"message":"must be at most 2048 bytes","path":"/configuration/pushNotificationConfig/url"}]}}}`},
		{"1.0 create, token", "CreateTaskPushNotificationConfig",
			map[string]any{"taskId": id, "url": hook.URL, "token": big},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters: /token: must be at most 4096 bytes","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_PARAMS","domain":"github.com/a2ad/a2ad"},{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"token","description":"must be at most 4096 bytes"}]}]}}`},
		{"0.3 file bytes not base64", "message/send",
			map[string]any{"message": map[string]any{"kind": "message", "messageId": "p-3", "role": "user",
				"parts": []any{map[string]any{"kind": "file", "file": map[string]any{"name": "a.bin", "bytes": "not base64!"}}}}},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters: /message/parts/0/file/bytes: must be base64","data":{"errors":[{"message":"must be base64","path":"/message/parts/0/file/bytes"}]}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Authorization": {"Bearer " + k.acme}}
			if !strings.Contains(tt.method, "/") {
				h.Set("A2A-Version", "1.0")
			}
			resp, out := postRaw(t, k.base, rpcBody(tt.method, tt.params), h)
			if resp.StatusCode != http.StatusOK || string(out) != tt.want {
				t.Errorf("HTTP %d %s\nwant %s", resp.StatusCode, out, tt.want)
			}
		})
	}
	// Nothing was stored: the task has no webhook.
	if cfgs := k.ok(t, k.acme, "tasks/pushNotificationConfig/list", map[string]any{"id": id})["result"].([]any); len(cfgs) != 0 {
		t.Errorf("webhooks after refused sets: %v", cfgs)
	}
}
