// Package push delivers push notifications: a durable outbox of
// deliveries, a sender that POSTs them to webhooks with retries, backoff
// and a dead-letter list, one delivery in flight per (task, config), and
// an SSRF guard that keeps callers from aiming a2ad at internal addresses.
//
// The outbox itself lives in the task store, written in the same
// transaction as the task transition a delivery reports; its contract is
// tasks.Outbox, a part of tasks.Backend (Outbox here), and this package
// does the sending.
package push
