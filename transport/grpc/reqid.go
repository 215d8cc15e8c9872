package grpc

import (
	"context"
	"crypto/rand"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// RequestIDMetadata is the header metadata key of a call's request id,
// which its audit record and log lines carry (req_id), as the HTTP
// bindings' X-Request-Id header.
const RequestIDMetadata = "x-request-id"

type reqIDKey struct{}

// withRequest gives a call its request id (sent in its header metadata)
// and the core's logger with it, in the context its handler gets: the
// core logs through zerolog.Ctx (an internal error, once), as over HTTP.
func (s *Server) withRequest(ctx context.Context) context.Context {
	id := rand.Text()
	_ = grpc.SetHeader(ctx, metadata.Pairs(RequestIDMetadata, id))
	l := s.core.Logger().With().Str("req_id", id).Logger()
	return context.WithValue(l.WithContext(ctx), reqIDKey{}, id)
}

// requestID is the request id of the call of ctx; "" for none.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(reqIDKey{}).(string)
	return id
}

func (s *Server) unaryRequest(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	return h(s.withRequest(ctx), req)
}

func (s *Server) streamRequest(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, requestStream{ss, s.withRequest(ss.Context())})
}

// requestStream is a server stream whose context has the call's request
// id and logger.
type requestStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (r requestStream) Context() context.Context { return r.ctx }
