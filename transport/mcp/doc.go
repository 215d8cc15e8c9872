// Package mcp serves the catalogue's MCP tools over the Model Context
// Protocol's Streamable HTTP transport, stateless: every POST is one
// JSON-RPC message answered in JSON, so any replica answers any request
// and nothing is kept between requests.
//
// It is an adapter over transport.Core, as the A2A bindings are: the same
// authentication, limits, body caps and audit (transport "mcp"). The MCP
// protocol itself (initialize, version negotiation, ping, the envelope)
// is the official Go SDK's, run per request; tools/list and tools/call
// are a2ad's: a caller sees exactly the tools its tiers may see over MCP
// (exposure.Policy.DecideIn), and every call is a durable task of the
// task service, sent through the core as an A2A message/send is. The
// common tools/call and tools/list (a JSON answer, a revision before
// 2026-07-28, nothing in _meta but a2ad's idempotency key) are answered
// before the SDK, with its decoding and encoding but without the server
// and session it builds per request, and the same bytes (fast.go); the
// rest is the SDK's.
//
// A client that declares MCP's tasks extension (io.modelcontextprotocol/
// tasks) gets a long call as a task handle, the a2ad task itself, which
// tasks/get, tasks/update, tasks/cancel and a subscriptions/listen for
// notifications/tasks read and change in the store (handles.go): the SDK
// has none of them, so a2ad answers them. A client that declares
// elicitation gets a function's question as MCP 2026-07-28's multi
// round-trip InputRequiredResult, and its retry answers the waiting task
// (elicit.go).
package mcp
