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
// Two codecs share the core types and the JSON-RPC envelope (ParseRequest,
// AppendResultStart). The 0.3 codec is AppendJSON, the Decode* functions
// and AppendError. The 1.0 codec, the ProtoJSON of the lf.a2a.v1 proto, is
// AppendJSONV1, the Decode*V1 functions, the result wrappers
// (StreamResponseV1, PushConfigListV1, TaskListV1, EmptyV1, written whole
// by AppendResultV1) and AppendErrorV1, whose error data is an array of
// google.rpc.ErrorInfo and BadRequest details. Both decoders return the same
// core params, so the task service never sees which version a call came in;
// ParseVersion reads the A2A-Version header that picks one. The 1.0 decoders
// refuse what the core types cannot hold, so that what they accept reads
// back the same through both codecs: a 1.0 data part must hold a JSON
// object, as 0.3's does. The one loss is a media type or file name on a
// text or data part, which the core Part keeps only for files; it is
// dropped.
//
// The Echo handlers live in the sub-package a2a/server.
package a2a
