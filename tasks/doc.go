// Package tasks owns the life of a task: the model and its state machine
// (state.go: every status change goes through it),
// the store contract, the Service that turns a message into a function
// call (resolution, exposure check, validation, idempotency), the executor
// that runs calls under concurrency caps, cancellation, crash recovery,
// retention, and the listing of a caller's tasks in pages.
//
// Backend (backend.go) is the whole of what a2ad asks of a store, named
// once, its parts by role (Store, Outbox, Gauges, Replay, Inspect); the
// packages that use a store declare the small subsets they need. Its
// implementations are the sub-packages boltstore (a bbolt file) and
// pgstore (PostgreSQL); the contracts are written down as the tests of
// storetest, which each implementation runs. A third store is one package
// implementing Backend, one var _ check beside it, one row in the opener
// table of tasks/stores (keyed by the scheme of the store URL), and the
// conformance suite run over it.
package tasks
