package main

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"

	"github.com/a2ad/a2ad/internal/otelx"
)

// openTracing starts exporting traces by OTLP/HTTP when --otel-endpoint,
// or the standard OTEL_EXPORTER_OTLP_ENDPOINT, names a collector: the
// task service and the bindings get its tracer, and it closes last, so
// that the spans of the shutdown's last calls are flushed. Without one,
// m.tracer stays nil and nothing is traced.
func (m *Main) openTracing(ctx context.Context) error {
	if !otelx.Enabled(m.Config.OTelEndpoint) {
		return nil
	}
	p, err := otelx.Open(ctx, m.Config.OTelEndpoint, Version())
	if err != nil {
		return fmt.Errorf("otel-endpoint: %w", err)
	}
	m.tracer = p.Tracer()
	// The SDK's errors (an export that failed: the collector is down)
	// go to the log as one JSON line each, not to the standard logger.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		m.Logger.Warn().Err(err).Msg("traces")
	}))
	m.onClose("traces", func(ctx context.Context) error {
		// A collector that is down costs the spans, not the shutdown.
		if err := p.Close(ctx); err != nil {
			m.Logger.Warn().Err(err).Msg("traces not all exported at shutdown")
		}
		return nil
	})
	return nil
}
