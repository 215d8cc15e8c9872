// Package rest is the A2A 1.0 HTTP+JSON binding: the spec's paths and
// verbs under a base path of the main listener, ProtoJSON bodies, SSE
// for the streaming calls, and errors as google.rpc.Status. It is an
// adapter over transport.Core, as the JSON-RPC binding is: it reads the
// params from the path, the query and the body, and writes the results
// with the 1.0 codecs of package a2a/v1.
package rest
