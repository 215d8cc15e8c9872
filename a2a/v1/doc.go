// Package v1 is the A2A 1.0 JSON-RPC codec, the ProtoJSON of the
// lf.a2a.v1 proto: it writes the core values of package a2a in their 1.0
// shapes (camelCase members, TASK_STATE_* and ROLE_* enums, no "kind"
// discriminators, one unified Part), wraps results as 1.0 has them
// (StreamResponse, PushConfigList, TaskList, Empty, written whole by
// AppendResult), writes errors with their google.rpc details
// (AppendError), and reads the params of the 1.0 methods into the same
// core params package a2a/v03 returns for 0.3.
//
// The decoders refuse what the core types cannot hold, so that what they
// accept reads back the same through both codecs: a 1.0 data part must
// hold a JSON object, as 0.3's does. The one loss is a media type or file
// name on a text or data part, which the core Part keeps only for files;
// it is dropped.
//
// The decoders read a member by its JSON name (taskId) or its proto field
// name (task_id), as ProtoJSON parsers do, and locate every problem with
// the JSON names; ProblemPath gives the 1.0 location of a problem the task
// service found, which it names as 0.3 does.
package v1
