package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.servers, ",") != "a2ad,sdk,floor" || joinInts(o.clients) != "16,64" ||
		o.duration != 10*time.Second || o.warmup != 2*time.Second || o.mode != "send" {
		t.Fatalf("defaults = %+v", o)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-servers", "a2ad,nginx"}, `unknown server "nginx"`},
		{[]string{"-servers", ","}, "name at least one server"},
		{[]string{"-clients", "16,x"}, `"x" is not a number of clients`},
		{[]string{"-clients", "0"}, `"0" is not a number of clients`},
		{[]string{"-duration", "0s"}, "-duration must be positive"},
		{[]string{"-duration", "3m"}, "over the limit of 10m0s"},
		{[]string{"-a2ad-log-level", "loud"}, "is not debug, info, warn or error"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		_, err := parseFlags(tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestStreamModeIsNotImplemented(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-mode", "stream"}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if got := strings.TrimSpace(stderr.String()); got != "stream mode: not implemented yet" {
		t.Fatalf("stderr = %q", got)
	}
}

func TestBaseURLFrom(t *testing.T) {
	line := `{"level":"info","listen":"127.0.0.1:4242","base_url":"http://127.0.0.1:4242","message":"a2ad serving"}`
	if got, ok := baseURLFrom("a2ad", []byte(line)); !ok || got != "http://127.0.0.1:4242" {
		t.Fatalf("a2ad serving line: %q %v", got, ok)
	}
	if _, ok := baseURLFrom("a2ad", []byte(`{"message":"task created"}`)); ok {
		t.Fatal("another a2ad line gave an address")
	}
	if got, ok := baseURLFrom("sdk", []byte("http://127.0.0.1:5000\n")); !ok || got != "http://127.0.0.1:5000" {
		t.Fatalf("sdk line: %q %v", got, ok)
	}
	for _, h := range []string{"127.0.0.1:80", "[::1]:80", "127.0.0.1"} {
		if !isLoopback(h) {
			t.Errorf("isLoopback(%q) = false", h)
		}
	}
	for _, h := range []string{"10.0.0.1:80", "example.com:80", "0.0.0.0:80"} {
		if isLoopback(h) {
			t.Errorf("isLoopback(%q) = true", h)
		}
	}
}
