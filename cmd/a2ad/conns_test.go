package main

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestMaxConnsFor(t *testing.T) {
	for _, tc := range []struct {
		want    int
		nofile  uint64
		n       int
		lowered bool
	}{
		{4096, 1 << 20, 4096, false}, // systemd's and Docker's usual hard limits
		{4096, 4096 + fdReserve, 4096, false},
		{4096, 4096, 4096 - fdReserve, true},
		{4096, 1024, 512, true}, // a shell's default soft limit
		{4096, 256, 128, true},  // never below half the limit
		{0, 1024, 0, false},     // no cap stays no cap
		{100, 0, 100, false},    // the limit could not be read
	} {
		n, lowered := maxConnsFor(tc.want, tc.nofile)
		if n != tc.n || lowered != tc.lowered {
			t.Errorf("maxConnsFor(%d, %d) = %d, %v; want %d, %v", tc.want, tc.nofile, n, lowered, tc.n, tc.lowered)
		}
	}
}

// TestHTTPErrorLog: net/http's own lines go to the operational log as
// warnings naming the listener.
func TestHTTPErrorLog(t *testing.T) {
	var buf strings.Builder
	httpErrorLog(zerolog.New(&buf), "main").Printf("http: superfluous response.WriteHeader call")
	if got, want := strings.TrimSpace(buf.String()), `{"level":"warn","listener":"main","error":"http: superfluous response.WriteHeader call","message":"http server"}`; got != want {
		t.Errorf("log line %s\nwant %s", got, want)
	}
}
