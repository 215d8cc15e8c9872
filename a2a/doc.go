// Package a2a is the A2A protocol as a2ad speaks it, apart from its wire
// shapes: the version-neutral core types (Task, Message, Part, Artifact,
// the task events and push configs), the params of the methods as both
// protocol versions decode them, the JSON-RPC 2.0 envelope (ParseRequest,
// AppendResultStart, AppendError), the A2A error codes and errors, and the
// protocol Version a request names in its A2A-Version header.
//
// The codecs are sub-packages: a2a/v03 writes and reads the 0.3 shapes,
// a2a/v1 the 1.0 ones. Both translate to and from these types at the
// edge; the task store, the state machine and the executor know nothing
// of wire versions. The Echo handlers live in transport/jsonrpc. (The core
// types' MarshalJSON still writes the 0.3 shape, through a2a/v03, for a
// few tests that write older store layouts: see marshal.go.)
package a2a
