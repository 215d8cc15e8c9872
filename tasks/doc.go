// Package tasks owns the life of a task: the model and its state machine
// (state.go: every status change goes through it),
// the Store contract, the Service that turns a message into a function
// call (resolution, exposure check, validation, idempotency), the executor
// that runs calls under concurrency caps, cancellation, crash recovery,
// retention, and the listing of a caller's tasks in pages.
//
// The bbolt implementation of Store is in the sub-package boltstore; the
// contracts every store keeps (Store, the push outbox beside it, the
// Inspector) are written down as the tests of storetest, which each
// implementation runs.
package tasks
