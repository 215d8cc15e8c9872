package main

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestHTTPErrorLog: net/http's own lines go to the operational log as
// warnings naming the listener.
func TestHTTPErrorLog(t *testing.T) {
	var buf strings.Builder
	httpErrorLog(zerolog.New(&buf), "main").Printf("http: superfluous response.WriteHeader call")
	if got, want := strings.TrimSpace(buf.String()), `{"level":"warn","listener":"main","error":"http: superfluous response.WriteHeader call","message":"http server"}`; got != want {
		t.Errorf("log line %s\nwant %s", got, want)
	}
}
