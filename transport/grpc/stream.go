package grpc

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// SendStreamingMessage implements a2apb.A2AServiceServer.
func (s *Server) SendStreamingMessage(req *a2apb.SendMessageRequest, stream grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	return s.stream(stream, "SendStreamingMessage", req, func(ctx context.Context, cl *transport.Call) (transport.Opened, *a2a.Error) {
		p, e := sendParams(req)
		if e != nil {
			return transport.Opened{}, e
		}
		after, e := resumePoint(ctx, p.Metadata)
		if e != nil {
			return transport.Opened{}, e
		}
		return s.core.OpenSend(cl, p, after), nil
	})
}

// SubscribeToTask implements a2apb.A2AServiceServer.
func (s *Server) SubscribeToTask(req *a2apb.SubscribeToTaskRequest, stream grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	return s.stream(stream, "SubscribeToTask", req, func(ctx context.Context, cl *transport.Call) (transport.Opened, *a2a.Error) {
		raw, e := params(req)
		var p a2a.TaskIDParams
		if e == nil {
			p, e = v1.DecodeTaskIDParams(raw)
		}
		var after *uint64
		if e == nil {
			after, e = resumePoint(ctx, nil)
		}
		if e != nil {
			return transport.Opened{}, e
		}
		return s.core.OpenWatch(ctx, cl, p.ID, after, true)
	})
}

// stream serves a streaming call: its events are sent as they come, and
// an error after the first one ends the stream with its status. A client
// that goes away cancels the stream's context, which ends the stream and
// frees what it held.
func (s *Server) stream(stream grpc.ServerStreamingServer[a2apb.StreamResponse], method string, req proto.Message,
	open func(ctx context.Context, cl *transport.Call) (transport.Opened, *a2a.Error)) error {
	ctx := stream.Context()
	ctx, c, err := s.begin(ctx, method, true, req)
	defer s.end(c)
	if err != nil {
		return err
	}
	if e := s.core.StreamsRefused(); e != nil {
		return s.fail(c, e)
	}
	sk := &sink{stream: stream, g: guardOf(ctx), writeTimeout: s.limits.WriteTimeout}
	e := s.core.Stream(ctx, c.cl, func(ctx context.Context) (transport.Opened, *a2a.Error) { return open(ctx, c.cl) }, sk)
	if e != nil {
		if c.cl.Err() == nil {
			c.cl.NoteError(e, nil)
		}
		return statusError(e)
	}
	return sk.failed
}

// sink writes a stream's events to a gRPC server stream.
type sink struct {
	stream grpc.ServerStreamingServer[a2apb.StreamResponse]
	// g bounds each write by writeTimeout; nil: no bound.
	g            *guard
	writeTimeout time.Duration
	started      bool
	failed       error // the status the stream ends with
}

var _ transport.Sink = (*sink)(nil)

// Event implements transport.Sink: the event, with its sequence in its
// metadata (EventIDKey).
func (sk *sink) Event(e tasks.StreamEvent) error {
	out, err := pbEvent(&v1.StreamResponse{Task: e.Task, Message: e.Message, StatusUpdate: e.Status, ArtifactUpdate: e.Artifact})
	if err != nil {
		return err
	}
	setEventID(out, e.Seq)
	sk.started = true
	send := func() error { return sk.stream.Send(out) }
	if sk.g != nil {
		err = sk.g.send(sk.writeTimeout, proto.Size(out), send)
	} else {
		err = send()
	}
	if err != nil {
		return transport.ErrWrite
	}
	return nil
}

// setEventID puts seq into the metadata of r's event.
func setEventID(r *a2apb.StreamResponse, seq uint64) {
	var meta **structpb.Struct
	switch {
	case r.GetTask() != nil:
		meta = &r.GetTask().Metadata
	case r.GetStatusUpdate() != nil:
		meta = &r.GetStatusUpdate().Metadata
	case r.GetArtifactUpdate() != nil:
		meta = &r.GetArtifactUpdate().Metadata
	default:
		return
	}
	if *meta == nil {
		*meta = &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	(*meta).Fields[EventIDKey] = structpb.NewStringValue(formatSeq(seq))
}

// Started implements transport.Sink.
func (sk *sink) Started() bool { return sk.started }

// Start implements transport.Sink: the headers go, and the stream ends
// with no event.
func (sk *sink) Start() {
	sk.started = true
	_ = sk.stream.SendHeader(metadata.MD{})
}

// Fail implements transport.Sink: the stream ends with e's status.
func (sk *sink) Fail(e *a2a.Error) { sk.failed = statusError(e) }

// Close implements transport.Sink.
func (sk *sink) Close() {}
