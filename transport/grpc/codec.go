package grpc

import (
	"encoding/json"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	// The detail types the statuses carry must be registered for their
	// ProtoJSON to be read (this import does it).
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/transport"
)

// Requests and results cross between the generated types and a2ad's
// own through ProtoJSON: a request is written as ProtoJSON and read by
// the 1.0 decoder of its JSON-RPC params; a result is written by the 1.0
// encoder and read into its generated type, but for tasks and stream
// events, which are written into theirs directly (topb.go). Unknown
// fields of a request are dropped by the proto decoding, as proto3 says.

var (
	toJSON   = protojson.MarshalOptions{}
	fromJSON = protojson.UnmarshalOptions{DiscardUnknown: true}
)

// params is req as the ProtoJSON params of its JSON-RPC method.
func params(req proto.Message) (json.RawMessage, *a2a.Error) {
	b, err := toJSON.Marshal(req)
	if err != nil {
		return nil, &a2a.Error{Code: a2a.CodeInvalidParams, Message: "Invalid parameters: " + err.Error()}
	}
	return b, nil
}

// encodable is a result of the 1.0 encoders.
type encodable interface {
	AppendJSON(dst []byte) ([]byte, error)
}

// result reads the 1.0 JSON of r into out.
func result(r encodable, out proto.Message) error {
	b, err := r.AppendJSON(nil)
	if err != nil {
		return err
	}
	return fromJSON.Unmarshal(b, out)
}

// rawResult reads JSON b into out.
func rawResult(b []byte, out proto.Message) error { return fromJSON.Unmarshal(b, out) }

// statusError is the gRPC status of e: the code of the spec's table (and
// a2ad's own for its codes), e's message, and the details the 1.0
// errors carry (ErrorInfo first; a BadRequest for invalid params). A
// status that says to come back later has a RetryInfo last (see
// retryDelay).
func statusError(e *a2a.Error) error {
	return statusOf(transport.StatusOf(e), e)
}

// refusalError is the gRPC status of a call the core refused: a limit's
// refusal is RESOURCE_EXHAUSTED (the caller's limits) or UNAVAILABLE (the
// server's cap), as over HTTP+JSON it is 429 or 503.
func refusalError(ref *transport.Refusal) error {
	return statusOf(transport.StatusOfRefusal(ref), transport.RefusalError(ref))
}

func statusOf(st transport.Status, e *a2a.Error) error {
	sp := &spb.Status{Code: int32(st.Code), Message: e.Message}
	var details []json.RawMessage
	if json.Unmarshal(v1.AppendErrorDetails(nil, e), &details) == nil {
		for _, d := range details {
			var a anypb.Any
			if protojson.Unmarshal(d, &a) == nil {
				sp.Details = append(sp.Details, &a)
			}
		}
	}
	if sp.Code == 0 {
		sp.Code = int32(codes.Internal)
	}
	if d, ok := retryDelay(codes.Code(sp.Code), e); ok {
		if a, err := anypb.New(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)}); err == nil {
			sp.Details = append(sp.Details, a)
		}
	}
	return status.FromProto(sp).Err()
}

// retryDelay is when a call answered with code and e may be retried:
// data.retryAfterMs for a limit's refusal (RESOURCE_EXHAUSTED or
// UNAVAILABLE); a second for another UNAVAILABLE (busy, shutting down, the
// store out of reach), as HTTP+JSON's Retry-After says. gRPC has no
// Retry-After header: google.rpc.RetryInfo is the status detail that
// says it (AIP-194). A storage quota (RESOURCE_EXHAUSTED too) has none:
// waiting does not lift it.
func retryDelay(code codes.Code, e *a2a.Error) (time.Duration, bool) {
	if code != codes.ResourceExhausted && code != codes.Unavailable {
		return 0, false
	}
	if ms, ok := e.Data["retryAfterMs"].(int64); ok { // as transport's refusals set it
		return time.Duration(ms) * time.Millisecond, true
	}
	return time.Second, code == codes.Unavailable
}
