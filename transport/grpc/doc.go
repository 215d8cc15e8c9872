// Package grpc is the A2A 1.0 gRPC binding: the lf.a2a.v1.A2AService of
// the spec's a2a.proto (its generated types are a2a-go v2's a2apb), with
// server streaming for SendStreamingMessage and SubscribeToTask. It is an
// adapter over transport.Core, as the JSON-RPC and HTTP+JSON bindings
// are: a request is read through its ProtoJSON by the same 1.0 decoders,
// so the three bindings accept the same things, and a result is written
// by the same 1.0 encoders (tasks and events by writers held to them), so
// they answer the same.
//
// Keys are read from the authorization and x-api-key metadata, as from
// the headers of those names over HTTP, and over TLS a client certificate
// counts as it does over HTTPS; a2a-version, when sent, must be 1.0. A stream's events carry their sequence in the task's event log in
// their metadata, under EventIDKey; a client resumes a stream by sending
// the last one it saw in the last-event-id metadata of a new call.
package grpc
