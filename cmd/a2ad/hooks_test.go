package main

// The webhook receiver and the push helpers the end-to-end tests share.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/admin"
)

// pushAllowLoopback opens the httptest receivers (127.0.0.1) to the SSRF
// guard.
const pushAllowLoopback = "127.0.0.1/32"

// hookRequest is one POST a hookReceiver got, and what it answered.
type hookRequest struct {
	Method string
	Header http.Header
	Body   []byte
	Status int
}

// task decodes the body, which must be a Task JSON.
func (r hookRequest) task(tb testing.TB) map[string]any {
	tb.Helper()
	var task map[string]any
	if err := json.Unmarshal(r.Body, &task); err != nil {
		tb.Fatalf("webhook body %q: %v", r.Body, err)
	}
	return task
}

// hookReceiver is a webhook on 127.0.0.1 that records every request.
// answer decides the status of request n (1-based); nil means 200. It may
// block, but must return within a few seconds.
type hookReceiver struct {
	URL    string
	answer func(n int) int

	mu      sync.Mutex
	reqs    []hookRequest
	arrived int // requests whose body was read, answered or not
}

func newHookReceiver(tb testing.TB, answer func(n int) int) *hookReceiver {
	tb.Helper()
	h := &hookReceiver{answer: answer}
	var n int
	var nmu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.arrived++
		h.mu.Unlock()
		nmu.Lock()
		n++
		i := n
		nmu.Unlock()
		status := http.StatusOK
		if h.answer != nil {
			status = h.answer(i)
		}
		h.mu.Lock()
		h.reqs = append(h.reqs, hookRequest{Method: r.Method, Header: r.Header.Clone(), Body: body, Status: status})
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	h.URL = srv.URL + "/hook"
	tb.Cleanup(srv.Close)
	return h
}

// arrivals counts the requests that arrived, answered or not.
func (h *hookReceiver) arrivals() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.arrived
}

// requests returns a copy of the requests answered so far, in order.
func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.reqs)
}

// delivered returns the requests answered 2xx.
func (h *hookReceiver) delivered() []hookRequest {
	var out []hookRequest
	for _, r := range h.requests() {
		if r.Status >= 200 && r.Status <= 299 {
			out = append(out, r)
		}
	}
	return out
}

// eventually polls cond every 20 ms until it holds, or fails the test
// after within.
func eventually(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pushSendParams is sendParams with a webhook in the configuration.
func pushSendParams(msgID, skill string, input any, blocking bool, hook map[string]any) map[string]any {
	p := sendParams(msgID, skill, input, blocking)
	p["configuration"].(map[string]any)["pushNotificationConfig"] = hook
	return p
}

// rpcError returns the error of a JSON-RPC response, failing the test if
// it has none.
func rpcError(tb testing.TB, resp map[string]any) (code int, msg string) {
	tb.Helper()
	e, ok := resp["error"].(map[string]any)
	if !ok {
		tb.Fatalf("want an error, got %v", resp)
	}
	return int(e["code"].(float64)), e["message"].(string)
}

// wantRPCError fails the test unless resp is an error with code whose
// message contains each of parts.
func wantRPCError(tb testing.TB, what string, resp map[string]any, code int, parts ...string) {
	tb.Helper()
	c, msg := rpcError(tb, resp)
	if c != code {
		tb.Fatalf("%s: error %d %q, want %d", what, c, msg, code)
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			tb.Fatalf("%s: message %q does not contain %q", what, msg, p)
		}
	}
}

// getDeadLetters GETs the dead letters with query (may be empty) and
// returns the status, the raw body and, for a 200, the decoded list.
func getDeadLetters(tb testing.TB, base, query string) (int, []byte, admin.OutboxList) {
	tb.Helper()
	resp, raw := httpGet(tb, base+"/admin/push/dead-letters"+query)
	var list admin.OutboxList
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &list); err != nil {
			tb.Fatalf("dead letters %s: %v", raw, err)
		}
	}
	return resp.StatusCode, raw, list
}

// waitOutboxEmpty waits until no delivery is waiting.
func waitOutboxEmpty(tb testing.TB, base string, within time.Duration) {
	tb.Helper()
	eventually(tb, within, "outbox empty", func() bool {
		code, raw, list := getDeadLetters(tb, base, "")
		if code != http.StatusOK {
			tb.Fatalf("dead letters: HTTP %d %s", code, raw)
		}
		return list.OutboxDepth == 0
	})
}
