package testkit

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// NewRequest is a request with body, its Content-Type (none if empty)
// and header's name, value pairs.
func NewRequest(tb testing.TB, method, url, contentType, body string, header ...string) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// RoundTrip sends req with hc (nil: the default client) and returns the
// response and its body, read in full and closed; an error fails the
// test.
func RoundTrip(tb testing.TB, hc *http.Client, req *http.Request) (*http.Response, []byte) {
	tb.Helper()
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", req.Method, req.URL.Path, err)
	}
	return resp, b
}
