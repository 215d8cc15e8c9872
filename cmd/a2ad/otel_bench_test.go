package main

import "testing"

// BenchmarkHTTPSendEchoTraced is BenchmarkHTTPSendEcho with traces
// exported to an OTLP/HTTP receiver in the test: the cost of tracing on
// (BenchmarkHTTPSendEcho is the path with tracing off).
func BenchmarkHTTPSendEchoTraced(b *testing.B) {
	rc := startOTLPReceiver(b)
	m := startMain(b, func(c *Config) { c.RatePerSecond, c.RateBytes, c.OTelEndpoint = 0, 0, rc.srv.URL })
	sendEchoes(b, m)
}
