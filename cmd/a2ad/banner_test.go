package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/a2ad/a2ad/cmd/a2ad/internal/config"
)

// TestLogFormatAuto: the default log format is console for a terminal (a
// character device) and JSON for anything else, a pipe, a file or a
// buffer; a format asked for is kept.
func TestLogFormatAuto(t *testing.T) {
	if config.Default().LogFormat != "auto" {
		t.Fatalf("the default log format is %q, want auto", config.Default().LogFormat)
	}
	tty, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	_, w := pipe(t)
	for _, tc := range []struct {
		format string
		w      any
		want   string
	}{
		{"auto", tty, "console"},
		{"auto", w, "json"},
		{"auto", &bytes.Buffer{}, "json"},
		{"json", tty, "json"},
		{"console", w, "console"},
	} {
		var got string
		switch out := tc.w.(type) {
		case *os.File:
			got = logFormatFor(tc.format, out)
		case *bytes.Buffer:
			got = logFormatFor(tc.format, out)
		}
		if got != tc.want {
			t.Errorf("logFormatFor(%q, %T) = %q, want %q", tc.format, tc.w, got, tc.want)
		}
	}
}

func TestServingBanner(t *testing.T) {
	got := servingBanner("http://127.0.0.1:8080", "127.0.0.1:8080", "http://127.0.0.1:8081", "127.0.0.1:50051", "http://127.0.0.1:8080/mcp")
	want := `
a2ad is serving at http://127.0.0.1:8080
  agent card      http://127.0.0.1:8080/.well-known/agent-card.json
  A2A JSON-RPC    http://127.0.0.1:8080/a2a
  A2A HTTP+JSON   http://127.0.0.1:8080/a2a/rest
  A2A gRPC        127.0.0.1:50051
  MCP             http://127.0.0.1:8080/mcp
  operator view   http://127.0.0.1:8081/admin/v1/overview (also /metrics and /readyz; a2ad tasks --server http://127.0.0.1:8081)

`
	if got != want {
		t.Errorf("banner:\n%s\nwant:\n%s", got, want)
	}
	if got := servingBanner("https://a2a.example.com", "", "", "", ""); bytes.Contains([]byte(got), []byte("gRPC")) || bytes.Contains([]byte(got), []byte("operator")) || bytes.Contains([]byte(got), []byte("MCP")) {
		t.Errorf("a banner without gRPC, admin or MCP names them:\n%s", got)
	}
	// --base-url names a public address: the banner also says where the
	// listener is (a newcomer of issue 30 saw only agents.example.com).
	got = servingBanner("https://agents.example.com", "127.0.0.1:8080", "", "", "")
	want = `
a2ad is serving at https://agents.example.com
  listening on    127.0.0.1:8080 (the base URL is the address callers are given)
  agent card      https://agents.example.com/.well-known/agent-card.json
  A2A JSON-RPC    https://agents.example.com/a2a
  A2A HTTP+JSON   https://agents.example.com/a2a/rest

`
	if got != want {
		t.Errorf("banner with a base URL:\n%s\nwant:\n%s", got, want)
	}
	if got := servingBanner("https://127.0.0.1:8443", "127.0.0.1:8443", "", "", ""); bytes.Contains([]byte(got), []byte("listening on")) {
		t.Errorf("a banner whose base URL is the listener names it twice:\n%s", got)
	}
}
