// Package a2a is the A2A protocol as a2ad speaks it: the version-neutral core
// types (Task, Message, Part, Artifact and the task events), the JSON-RPC 2.0
// envelope and the A2A error codes.
//
// The core types marshal to the A2A 0.3 JSON-RPC wire shapes (with their
// "kind" discriminators), which is also how the task store keeps them. Other
// protocol generations translate to and from these types at the edge; the
// task store, the state machine and the executor know nothing of wire
// versions.
//
// The Echo handlers live in the sub-package a2a/server.
package a2a
