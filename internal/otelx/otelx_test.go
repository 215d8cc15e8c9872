package otelx

import (
	"context"
	"testing"
)

func TestTracesURL(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces", ""},
		{"https://collector.example.com/otlp/", "https://collector.example.com/otlp/v1/traces", ""},
		{"127.0.0.1:4318", "", `"127.0.0.1:4318" is not an http:// or https:// URL with a host`},
		{"grpc://127.0.0.1:4317", "", `"grpc://127.0.0.1:4317" is not an http:// or https:// URL with a host`},
		{"http://127.0.0.1:4318#x", "", `"http://127.0.0.1:4318#x" has a query or fragment`},
	} {
		got, err := tracesURL(tc.in)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if got != tc.want || msg != tc.err {
			t.Errorf("tracesURL(%q) = %q, %q; want %q, %q", tc.in, got, msg, tc.want, tc.err)
		}
	}
}

// TestEnabled: traces are on with an endpoint, from the flag or the
// standard variables, unless OTEL_SDK_DISABLED is true.
func TestEnabled(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	if Enabled("") {
		t.Error("enabled without an endpoint")
	}
	if !Enabled("http://127.0.0.1:4318") {
		t.Error("not enabled with the flag")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces")
	if !Enabled("") {
		t.Error("not enabled with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	}
	t.Setenv("OTEL_SDK_DISABLED", "TRUE")
	if Enabled("http://127.0.0.1:4318") {
		t.Error("enabled with OTEL_SDK_DISABLED=TRUE")
	}
}

// TestOpenAndClose: Open sends nothing (a collector that is not there is
// no error), and Close with nothing to flush returns at once.
func TestOpenAndClose(t *testing.T) {
	p, err := Open(context.Background(), "http://127.0.0.1:1", "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if p.Tracer() == nil {
		t.Fatal("no tracer")
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("close with nothing to flush: %v", err)
	}
	if _, err := Open(context.Background(), "ftp://x", ""); err == nil || err.Error() != `"ftp://x" is not an http:// or https:// URL with a host` {
		t.Errorf("Open(ftp://x): %v", err)
	}
}
