// Package metrics collects a2ad's metrics and serves them in the
// Prometheus text format.
//
// The domain packages know nothing of Prometheus: each offers small hooks
// (server.Config.Observe, tasks.Metrics, boltstore.Options.OnCommit and
// OnTransition, push.SenderConfig.OnAttempt) that cmd/a2ad points at one
// Metrics, and the push outbox is read when scraped. Every label value
// comes from a fixed set (methods, outcomes, reasons, states, limits) or
// from the operator's catalogue (function ids of calls that ran); never
// from a request: no task id, caller id, URL or method a caller made up.
package metrics
