// Package transport is the core every A2A binding serves through
// (JSON-RPC in transport/jsonrpc, HTTP+JSON in transport/rest, gRPC in
// transport/grpc): authentication, admission and the body limits, each
// call's audit record and metrics, the operations over the task service
// and the streams. A binding decodes its wire format into the a2a types,
// calls the core, and encodes what it answers; the behaviour is the
// core's, once.
package transport
