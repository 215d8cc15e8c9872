package main

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/a2ad/a2ad/internal/testkit"
)

// TestHeadAnswersAsGet: every probe and the card answer HEAD, on both
// listeners, with GET's status and headers (ETag and Content-Length
// included) and no body; a conditional HEAD gets GET's 304.
func TestHeadAnswersAsGet(t *testing.T) {
	m := startMain(t, nil)
	base, admin := "http://"+m.Addr(), "http://"+m.AdminAddr()
	for _, u := range []string{
		base + "/.well-known/agent-card.json", base + "/.well-known/agent.json",
		base + "/healthz", base + "/readyz", admin + "/healthz", admin + "/readyz",
	} {
		get, getBody := testkit.RoundTrip(t, nil, newReq(t, http.MethodGet, u, nil))
		head, headBody := testkit.RoundTrip(t, nil, newReq(t, http.MethodHead, u, nil))
		if get.StatusCode != http.StatusOK || head.StatusCode != http.StatusOK {
			t.Errorf("%s: GET %d, HEAD %d, want 200 both", u, get.StatusCode, head.StatusCode)
		}
		if len(headBody) != 0 {
			t.Errorf("HEAD %s: body %q, want none", u, headBody)
		}
		if cl := head.Header.Get("Content-Length"); cl == "" || cl != get.Header.Get("Content-Length") || int(head.ContentLength) != len(getBody) {
			t.Errorf("HEAD %s: Content-Length %q, GET's %q (%d bytes)", u, cl, get.Header.Get("Content-Length"), len(getBody))
		}
		if g, h := stableHeaders(get.Header), stableHeaders(head.Header); !reflect.DeepEqual(g, h) {
			t.Errorf("%s: headers differ\nGET  %v\nHEAD %v", u, g, h)
		}
	}
	card := base + "/.well-known/agent-card.json"
	get, _ := testkit.RoundTrip(t, nil, newReq(t, http.MethodGet, card, nil))
	etag := get.Header.Get("ETag")
	if etag == "" {
		t.Fatal("the card has no ETag")
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		resp, body := testkit.RoundTrip(t, nil, newReq(t, method, card, http.Header{"If-None-Match": {etag}}))
		if resp.StatusCode != http.StatusNotModified || len(body) != 0 || resp.Header.Get("ETag") != etag {
			t.Errorf("%s with If-None-Match: %d ETag %q body %q, want 304 ETag %s and no body", method, resp.StatusCode, resp.Header.Get("ETag"), body, etag)
		}
	}
}

// stableHeaders is h less the headers that differ from one answer to the
// next.
func stableHeaders(h http.Header) http.Header {
	h = h.Clone()
	h.Del("Date")
	h.Del("X-Request-Id")
	return h
}

func newReq(tb testing.TB, method, url string, h http.Header) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	return req
}
