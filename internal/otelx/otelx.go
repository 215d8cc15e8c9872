// Package otelx sets up the export of a2ad's traces by OTLP/HTTP: the
// OpenTelemetry SDK lives here and in cmd/a2ad's wiring only; the rest of
// a2ad sees the API's trace.Tracer, nil when tracing is off.
package otelx

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of a2ad's spans.
const Scope = "github.com/a2ad/a2ad"

// Enabled reports whether traces are to be exported: an endpoint was
// given (the flag, or the standard OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and OTEL_SDK_DISABLED is not
// "true".
func Enabled(endpoint string) bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// CheckEndpoint checks an --otel-endpoint value: an http or https URL,
// the collector's base (/v1/traces is added, as to
// OTEL_EXPORTER_OTLP_ENDPOINT).
func CheckEndpoint(endpoint string) error {
	_, err := tracesURL(endpoint)
	return err
}

func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http:// or https:// URL with a host", endpoint)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q has a query or fragment", endpoint)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	return u.String(), nil
}

// Provider exports the spans of its Tracer. Build it with Open; Close
// flushes the spans not yet sent.
type Provider struct {
	tp *sdktrace.TracerProvider
}

// Open starts exporting traces by OTLP/HTTP (protobuf) to endpoint, a
// collector's base URL; "" leaves the endpoint, and everything else of
// the exporter (headers, timeout, compression, certificates), to the
// standard OTEL_EXPORTER_OTLP_* variables, which the exporter reads. The
// sampler is the SDK's (parent-based, always on), or OTEL_TRACES_SAMPLER;
// service.name is "a2ad" unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES says otherwise. version goes in
// service.version. Nothing is sent at Open: a collector that is down
// costs dropped spans, logged by the SDK, never a failed request.
func Open(ctx context.Context, endpoint, version string) (*Provider, error) {
	var opts []otlptracehttp.Option
	if endpoint != "" {
		u, err := tracesURL(endpoint)
		if err != nil {
			return nil, err
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", "a2ad")}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	// The environment comes last: it wins over the defaults.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Provider{tp: tp}, nil
}

// Tracer is the tracer a2ad's spans come from.
func (p *Provider) Tracer() trace.Tracer { return p.tp.Tracer(Scope) }

// Close sends the spans not yet sent, until ctx is done, and stops the
// exporter.
func (p *Provider) Close(ctx context.Context) error {
	return p.tp.Shutdown(ctx)
}
