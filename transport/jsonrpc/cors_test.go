package jsonrpc_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/transport/httpx"
	"github.com/a2ad/a2ad/transport/jsonrpc"
)

// TestCORSWiring: with a policy, the card at both paths is read from
// every origin and /a2a answers the listed origin, its refusals included
// (a page reads why); without one, no answer carries a CORS header.
func TestCORSWiring(t *testing.T) {
	const ui, evil = "https://ui.example", "https://evil.example"
	cors, err := httpx.NewCORS([]string{ui})
	if err != nil {
		t.Fatal(err)
	}
	on := MustServe(t, okService(), func(c *jsonrpc.Config) { c.CORS = cors })
	off := MustServe(t, okService())
	send := func(base, method, path, origin, contentType, body string) (*http.Response, string) {
		t.Helper()
		req := newRequest(t, method, base+path, contentType, strings.NewReader(body))
		req.Header.Set("Origin", origin)
		if method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", http.MethodPost)
			req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
		}
		resp, b := testkit.RoundTrip(t, nil, req)
		return resp, strings.TrimSpace(string(b))
	}
	for _, tt := range []struct {
		name, base, method, path, origin, contentType, body string
		code                                                int
		allowOrigin                                         string
	}{
		{"card", on.URL, "GET", jsonrpc.CardPath, evil, "", "", 200, "*"},
		{"0.2 card", on.URL, "GET", jsonrpc.LegacyCardPath, evil, "", "", 200, "*"},
		{"a2a preflight", on.URL, "OPTIONS", "/a2a", ui, "", "", 204, ui},
		{"a2a preflight, not listed", on.URL, "OPTIONS", "/a2a", evil, "", "", 403, ""},
		{"a2a", on.URL, "POST", "/a2a", ui, "application/json", getT1, 200, ui},
		{"a2a refused", on.URL, "POST", "/a2a", ui, "text/plain", getT1, 415, ui},
		{"a2a, not listed", on.URL, "POST", "/a2a", evil, "application/json", getT1, 200, ""},
		{"off: card", off.URL, "GET", jsonrpc.CardPath, ui, "", "", 200, ""},
		{"off: a2a preflight", off.URL, "OPTIONS", "/a2a", ui, "", "", 405, ""},
		{"off: a2a", off.URL, "POST", "/a2a", ui, "application/json", getT1, 200, ""},
	} {
		resp, body := send(tt.base, tt.method, tt.path, tt.origin, tt.contentType, tt.body)
		if resp.StatusCode != tt.code || resp.Header.Get("Access-Control-Allow-Origin") != tt.allowOrigin {
			t.Errorf("%s: %d Access-Control-Allow-Origin %q (%s), want %d %q",
				tt.name, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), body, tt.code, tt.allowOrigin)
		}
	}
}
