package testkit

import (
	"io"
	"net/http"
	"testing"
)

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
