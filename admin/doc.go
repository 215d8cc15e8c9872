// Package admin is a2ad's admin listener as an Echo adapter: the probes
// (/healthz, /readyz), /metrics, the operator view (/admin/v1/...), the
// store backup download and the reload endpoint, with their JSON shapes
// (view.go); and Client, through which a2ad's command line calls them.
//
// Every route but the probes and /metrics answers loopback callers only,
// and refuses requests a web page could send. The package reads and
// changes the rest of a2ad only through the small interfaces it declares
// (Outbox, BackupSource, Canceler, Reloader) and the store's read-only
// tasks.Inspector; main wires the store, the task service and itself in.
package admin
