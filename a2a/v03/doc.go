// Package v03 is the A2A 0.3 JSON-RPC codec: it writes the core values
// of package a2a in their 0.3 wire shapes (camelCase members, lower-case
// enums, "kind" discriminators) and reads the params of the 0.3 methods
// into the core params, reporting every problem as one -32602 error
// whose data lists each with the JSON pointer of its field.
//
// The encoders append to a byte slice without reflection (AppendTask,
// AppendMessage, ...): encoding/json re-scans the output of every nested
// MarshalJSON, which made encoding a task cost several times its size.
// The 1.0 codec is package a2a/v1; both return the same core params, so
// the task service never sees which version a call came in.
package v03
