package grpc

import (
	"context"
	"encoding/json"
	"errors"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/transport"
)

// unary is the one shape of the unary methods: begin the call, refuse it
// when the binding does not offer what it asks (refused, optional),
// decode its request, run it through the core and encode the answer.
type unary[P any, O proto.Message] struct {
	name string
	// stateful says that the method changes a task (see transport.Call).
	stateful bool
	refused  func(s *Server, cl *transport.Call) *a2a.Error
	decode   func(raw json.RawMessage) (P, *a2a.Error)
	// run answers the call: an *a2a.Error is the call's error, any other
	// error a failure to encode the answer (internal).
	run func(ctx context.Context, s *Server, cl *transport.Call, p P) (O, error)
}

// serve runs m for req.
func (m *unary[P, O]) serve(ctx context.Context, s *Server, req proto.Message) (O, error) {
	var zero O
	ctx, c, err := s.begin(ctx, m.name, m.stateful, req)
	defer s.end(c)
	if err != nil {
		return zero, err
	}
	var e *a2a.Error
	if m.refused != nil {
		e = m.refused(s, c.cl)
	}
	var raw json.RawMessage
	if e == nil {
		raw, e = params(req)
	}
	var p P
	if e == nil {
		p, e = m.decode(raw)
	}
	if e != nil {
		return zero, s.fail(c, e)
	}
	out, err := m.run(ctx, s, c.cl, p)
	if err == nil {
		if cerr := ctx.Err(); cerr != nil {
			// The client canceled, or its deadline passed, while the call
			// was answered (a blocking send answers with its task as it
			// stands then): the answer would reach no one, or race the
			// client's own deadline, so the call ends as gRPC says such a
			// call ends, whichever end saw it first.
			return zero, status.FromContextError(cerr).Err()
		}
		return out, nil
	}
	if errors.As(err, &e) {
		return zero, s.fail(c, e)
	}
	return zero, s.fail(c, s.core.Fail(ctx, c.cl, err))
}

// answer is out, or the core's refusal e (never a typed nil).
func answer[O any](out O, e *a2a.Error) (O, error) {
	if e != nil {
		var zero O
		return zero, e
	}
	return out, nil
}

// encoded is out read from the 1.0 encoding of r.
func encoded[O proto.Message](r encodable, out O) (O, error) {
	if err := result(r, out); err != nil {
		var zero O
		return zero, err
	}
	return out, nil
}

func pushRefused(s *Server, _ *transport.Call) *a2a.Error { return s.core.PushRefused() }

var (
	sendMessage = unary[a2a.SendParams, *a2apb.SendMessageResponse]{
		name: "SendMessage", stateful: true, decode: v1.DecodeSendParams,
		run: func(ctx context.Context, s *Server, cl *transport.Call, p a2a.SendParams) (*a2apb.SendMessageResponse, error) {
			task, reply, e := s.core.Send(ctx, cl, p)
			switch {
			case e != nil:
				return nil, e
			case reply != nil:
				m, err := pbMessage(reply)
				return &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Message{Message: m}}, err
			}
			t, err := pbTask(task)
			return &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Task{Task: t}}, err
		},
	}
	getTask = unary[a2a.TaskQuery, *a2apb.Task]{
		name: "GetTask", decode: v1.DecodeTaskQuery,
		run: func(ctx context.Context, s *Server, cl *transport.Call, q a2a.TaskQuery) (*a2apb.Task, error) {
			task, e := s.core.Get(ctx, cl, q, false)
			if e != nil {
				return nil, e
			}
			return pbTask(task)
		},
	}
	listTasks = unary[a2a.ListTasksParams, *a2apb.ListTasksResponse]{
		name: "ListTasks", decode: v1.DecodeListTasks,
		refused: func(s *Server, cl *transport.Call) *a2a.Error { return s.core.ListRefused(cl) },
		run: func(ctx context.Context, s *Server, cl *transport.Call, p a2a.ListTasksParams) (*a2apb.ListTasksResponse, error) {
			page, e := s.core.List(ctx, cl, p, "/pageToken")
			if e != nil {
				return nil, e
			}
			out := &a2apb.ListTasksResponse{NextPageToken: page.NextPageToken, PageSize: int32(page.PageSize), TotalSize: int32(page.TotalSize)}
			for i := range page.Tasks {
				t, err := pbTask(&page.Tasks[i])
				if err != nil {
					return nil, err
				}
				out.Tasks = append(out.Tasks, t)
			}
			return out, nil
		},
	}
	cancelTask = unary[a2a.TaskIDParams, *a2apb.Task]{
		name: "CancelTask", stateful: true, decode: v1.DecodeTaskIDParams,
		run: func(ctx context.Context, s *Server, cl *transport.Call, p a2a.TaskIDParams) (*a2apb.Task, error) {
			task, e := s.core.Cancel(ctx, cl, p.ID, true)
			if e != nil {
				return nil, e
			}
			return pbTask(task)
		},
	}
	createPush = unary[a2a.PushConfigParams, *a2apb.TaskPushNotificationConfig]{
		name: "CreateTaskPushNotificationConfig", refused: pushRefused, decode: v1.DecodePushCreate,
		run: func(ctx context.Context, s *Server, cl *transport.Call, p a2a.PushConfigParams) (*a2apb.TaskPushNotificationConfig, error) {
			cfg, e := s.core.SetPush(ctx, cl, p)
			if e != nil {
				return nil, e
			}
			return encoded(v1.PushConfigResult{Config: cfg}, &a2apb.TaskPushNotificationConfig{})
		},
	}
	getPush = unary[a2a.PushConfigParams, *a2apb.TaskPushNotificationConfig]{
		name: "GetTaskPushNotificationConfig", refused: pushRefused, decode: v1.DecodePushRef,
		run: func(ctx context.Context, s *Server, cl *transport.Call, p a2a.PushConfigParams) (*a2apb.TaskPushNotificationConfig, error) {
			cfg, e := s.core.GetPush(ctx, cl, p)
			if e != nil {
				return nil, e
			}
			return encoded(v1.PushConfigResult{Config: cfg}, &a2apb.TaskPushNotificationConfig{})
		},
	}
	listPush = unary[v1.PushListParams, *a2apb.ListTaskPushNotificationConfigsResponse]{
		name: "ListTaskPushNotificationConfigs", refused: pushRefused, decode: decodePushList,
		run: func(ctx context.Context, s *Server, cl *transport.Call, lp v1.PushListParams) (*a2apb.ListTaskPushNotificationConfigsResponse, error) {
			list, e := s.core.ListPush(ctx, cl, a2a.PushConfigParams{TaskID: lp.TaskID})
			if e != nil {
				return nil, e
			}
			return encoded(&v1.PushConfigList{Configs: list}, &a2apb.ListTaskPushNotificationConfigsResponse{})
		},
	}
	deletePush = unary[a2a.PushConfigParams, *emptypb.Empty]{
		name: "DeleteTaskPushNotificationConfig", refused: pushRefused, decode: v1.DecodePushRef,
		run: func(ctx context.Context, s *Server, cl *transport.Call, p a2a.PushConfigParams) (*emptypb.Empty, error) {
			return answer(&emptypb.Empty{}, s.core.DeletePush(ctx, cl, p))
		},
	}
)

// decodePushList reads a push config list: one page, as a2ad offers.
func decodePushList(raw json.RawMessage) (v1.PushListParams, *a2a.Error) {
	lp, e := v1.DecodePushList(raw)
	if e == nil {
		e = transport.OnePage("/pageToken", lp.PageToken)
	}
	return lp, e
}

// SendMessage implements a2apb.A2AServiceServer.
func (s *Server) SendMessage(ctx context.Context, req *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	return sendMessage.serve(ctx, s, req)
}

// GetTask implements a2apb.A2AServiceServer.
func (s *Server) GetTask(ctx context.Context, req *a2apb.GetTaskRequest) (*a2apb.Task, error) {
	return getTask.serve(ctx, s, req)
}

// ListTasks implements a2apb.A2AServiceServer.
func (s *Server) ListTasks(ctx context.Context, req *a2apb.ListTasksRequest) (*a2apb.ListTasksResponse, error) {
	return listTasks.serve(ctx, s, req)
}

// CancelTask implements a2apb.A2AServiceServer.
func (s *Server) CancelTask(ctx context.Context, req *a2apb.CancelTaskRequest) (*a2apb.Task, error) {
	return cancelTask.serve(ctx, s, req)
}

// CreateTaskPushNotificationConfig implements a2apb.A2AServiceServer.
func (s *Server) CreateTaskPushNotificationConfig(ctx context.Context, req *a2apb.TaskPushNotificationConfig) (*a2apb.TaskPushNotificationConfig, error) {
	return createPush.serve(ctx, s, req)
}

// GetTaskPushNotificationConfig implements a2apb.A2AServiceServer.
func (s *Server) GetTaskPushNotificationConfig(ctx context.Context, req *a2apb.GetTaskPushNotificationConfigRequest) (*a2apb.TaskPushNotificationConfig, error) {
	return getPush.serve(ctx, s, req)
}

// ListTaskPushNotificationConfigs implements a2apb.A2AServiceServer.
func (s *Server) ListTaskPushNotificationConfigs(ctx context.Context, req *a2apb.ListTaskPushNotificationConfigsRequest) (*a2apb.ListTaskPushNotificationConfigsResponse, error) {
	return listPush.serve(ctx, s, req)
}

// DeleteTaskPushNotificationConfig implements a2apb.A2AServiceServer.
func (s *Server) DeleteTaskPushNotificationConfig(ctx context.Context, req *a2apb.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	return deletePush.serve(ctx, s, req)
}

// GetExtendedAgentCard implements a2apb.A2AServiceServer: its request
// has nothing to decode, and without credentials it is refused as the
// core refuses an unauthenticated call.
func (s *Server) GetExtendedAgentCard(ctx context.Context, req *a2apb.GetExtendedAgentCardRequest) (*a2apb.AgentCard, error) {
	ctx, c, err := s.begin(ctx, "GetExtendedAgentCard", false, req)
	defer s.end(c)
	if err != nil {
		return nil, err
	}
	if ref := s.core.NeedsAuth(c.cl, a2a.V10); ref != nil {
		return nil, refusalError(ref)
	}
	card, e := s.core.ExtendedCard(c.cl, a2a.V10)
	if e != nil {
		return nil, s.fail(c, e)
	}
	out := &a2apb.AgentCard{}
	if err := rawResult(card, out); err != nil {
		return nil, s.fail(c, s.core.Fail(ctx, c.cl, err))
	}
	return out, nil
}

// sendParams reads a send's request, streamed or not.
func sendParams(req *a2apb.SendMessageRequest) (a2a.SendParams, *a2a.Error) {
	raw, e := params(req)
	if e != nil {
		return a2a.SendParams{}, e
	}
	return v1.DecodeSendParams(raw)
}
