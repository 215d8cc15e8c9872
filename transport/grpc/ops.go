package grpc

import (
	"context"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/transport"
)

// encode reads r into out; a failure is the call's internal error.
func (s *Server) encode(ctx context.Context, c *call, err error) error {
	if err == nil {
		return nil
	}
	return s.fail(c, s.core.Fail(ctx, c.cl, err))
}

// SendMessage implements a2apb.A2AServiceServer.
func (s *Server) SendMessage(ctx context.Context, req *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	ctx, c, err := s.begin(ctx, "SendMessage", true, req)
	defer s.end(c)
	if err != nil {
		return nil, err
	}
	p, e := sendParams(req)
	if e == nil {
		var (
			task  *a2a.Task
			reply *a2a.Message
		)
		if task, reply, e = s.core.Send(ctx, c.cl, p); e == nil {
			if reply != nil {
				m, err := pbMessage(reply)
				return &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Message{Message: m}}, s.encode(ctx, c, err)
			}
			t, err := pbTask(task)
			return &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Task{Task: t}}, s.encode(ctx, c, err)
		}
	}
	return nil, s.fail(c, e)
}

// sendParams reads a send's request; a push config in it is delivered
// in 1.0.
func sendParams(req *a2apb.SendMessageRequest) (a2a.SendParams, *a2a.Error) {
	raw, e := params(req)
	if e != nil {
		return a2a.SendParams{}, e
	}
	p, e := v1.DecodeSendParams(raw)
	if e == nil && p.PushConfig != nil {
		p.PushConfig.Wire = a2a.V10
	}
	return p, e
}

// GetTask implements a2apb.A2AServiceServer.
func (s *Server) GetTask(ctx context.Context, req *a2apb.GetTaskRequest) (*a2apb.Task, error) {
	ctx, c, err := s.begin(ctx, "GetTask", false, req)
	defer s.end(c)
	if err != nil {
		return nil, err
	}
	raw, e := params(req)
	var q a2a.TaskQuery
	if e == nil {
		q, e = v1.DecodeTaskQuery(raw)
	}
	if e == nil {
		var task *a2a.Task
		if task, e = s.core.Get(ctx, c.cl, q, false); e == nil {
			out, err := pbTask(task)
			return out, s.encode(ctx, c, err)
		}
	}
	return nil, s.fail(c, e)
}

// ListTasks implements a2apb.A2AServiceServer.
func (s *Server) ListTasks(ctx context.Context, req *a2apb.ListTasksRequest) (*a2apb.ListTasksResponse, error) {
	ctx, c, err := s.begin(ctx, "ListTasks", false, req)
	defer s.end(c)
	if err != nil {
		return nil, err
	}
	e := s.core.ListRefused(c.cl)
	var raw []byte
	if e == nil {
		raw, e = params(req)
	}
	var p a2a.ListTasksParams
	if e == nil {
		p, e = v1.DecodeListTasks(raw)
	}
	if e == nil {
		page, e := s.core.List(ctx, c.cl, p, "/pageToken")
		if e == nil {
			out := &a2apb.ListTasksResponse{NextPageToken: page.NextPageToken, PageSize: int32(page.PageSize), TotalSize: int32(page.TotalSize)}
			for i := range page.Tasks {
				t, err := pbTask(&page.Tasks[i])
				if err != nil {
					return nil, s.encode(ctx, c, err)
				}
				out.Tasks = append(out.Tasks, t)
			}
			return out, nil
		}
		return nil, s.fail(c, e)
	}
	return nil, s.fail(c, e)
}

// CancelTask implements a2apb.A2AServiceServer.
func (s *Server) CancelTask(ctx context.Context, req *a2apb.CancelTaskRequest) (*a2apb.Task, error) {
	ctx, c, err := s.begin(ctx, "CancelTask", true, req)
	defer s.end(c)
	if err != nil {
		return nil, err
	}
	raw, e := params(req)
	var p a2a.TaskIDParams
	if e == nil {
		p, e = v1.DecodeTaskIDParams(raw)
	}
	if e == nil {
		var task *a2a.Task
		if task, e = s.core.Cancel(ctx, c.cl, p.ID, true); e == nil {
			out, err := pbTask(task)
			return out, s.encode(ctx, c, err)
		}
	}
	return nil, s.fail(c, e)
}

// GetExtendedAgentCard implements a2apb.A2AServiceServer.
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
	return out, s.encode(ctx, c, rawResult(card, out))
}

// CreateTaskPushNotificationConfig implements a2apb.A2AServiceServer.
func (s *Server) CreateTaskPushNotificationConfig(ctx context.Context, req *a2apb.TaskPushNotificationConfig) (*a2apb.TaskPushNotificationConfig, error) {
	ctx, c, err := s.begin(ctx, "CreateTaskPushNotificationConfig", false, req)
	defer s.end(c)
	if err != nil {
		return nil, err
	}
	e := s.core.PushRefused()
	var raw []byte
	if e == nil {
		raw, e = params(req)
	}
	var p a2a.PushConfigParams
	if e == nil {
		p, e = v1.DecodePushCreate(raw)
	}
	if e == nil {
		p.Config.Wire = a2a.V10
		var cfg *a2a.TaskPushConfig
		if cfg, e = s.core.SetPush(ctx, c.cl, p); e == nil {
			out := &a2apb.TaskPushNotificationConfig{}
			return out, s.encode(ctx, c, result(v1.PushConfigResult{Config: cfg}, out))
		}
	}
	return nil, s.fail(c, e)
}

// GetTaskPushNotificationConfig implements a2apb.A2AServiceServer.
func (s *Server) GetTaskPushNotificationConfig(ctx context.Context, req *a2apb.GetTaskPushNotificationConfigRequest) (*a2apb.TaskPushNotificationConfig, error) {
	ctx, c, err := s.begin(ctx, "GetTaskPushNotificationConfig", false, req)
	defer s.end(c)
	if err != nil {
		return nil, err
	}
	p, e := s.pushRef(req)
	if e == nil {
		var cfg *a2a.TaskPushConfig
		if cfg, e = s.core.GetPush(ctx, c.cl, p); e == nil {
			out := &a2apb.TaskPushNotificationConfig{}
			return out, s.encode(ctx, c, result(v1.PushConfigResult{Config: cfg}, out))
		}
	}
	return nil, s.fail(c, e)
}

// pushRef reads the {taskId, id} of a push config get or delete.
func (s *Server) pushRef(req proto.Message) (a2a.PushConfigParams, *a2a.Error) {
	if e := s.core.PushRefused(); e != nil {
		return a2a.PushConfigParams{}, e
	}
	raw, e := params(req)
	if e != nil {
		return a2a.PushConfigParams{}, e
	}
	return v1.DecodePushRef(raw)
}

// ListTaskPushNotificationConfigs implements a2apb.A2AServiceServer.
func (s *Server) ListTaskPushNotificationConfigs(ctx context.Context, req *a2apb.ListTaskPushNotificationConfigsRequest) (*a2apb.ListTaskPushNotificationConfigsResponse, error) {
	ctx, c, err := s.begin(ctx, "ListTaskPushNotificationConfigs", false, req)
	defer s.end(c)
	if err != nil {
		return nil, err
	}
	e := s.core.PushRefused()
	var raw []byte
	if e == nil {
		raw, e = params(req)
	}
	var lp v1.PushListParams
	if e == nil {
		lp, e = v1.DecodePushList(raw)
	}
	if e == nil {
		e = transport.OnePage("/pageToken", lp.PageToken)
	}
	if e == nil {
		list, e := s.core.ListPush(ctx, c.cl, a2a.PushConfigParams{TaskID: lp.TaskID})
		if e == nil {
			out := &a2apb.ListTaskPushNotificationConfigsResponse{}
			return out, s.encode(ctx, c, result(&v1.PushConfigList{Configs: list}, out))
		}
		return nil, s.fail(c, e)
	}
	return nil, s.fail(c, e)
}

// DeleteTaskPushNotificationConfig implements a2apb.A2AServiceServer.
func (s *Server) DeleteTaskPushNotificationConfig(ctx context.Context, req *a2apb.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	ctx, c, err := s.begin(ctx, "DeleteTaskPushNotificationConfig", false, req)
	defer s.end(c)
	if err != nil {
		return nil, err
	}
	p, e := s.pushRef(req)
	if e == nil {
		e = s.core.DeletePush(ctx, c.cl, p)
	}
	if e != nil {
		return nil, s.fail(c, e)
	}
	return &emptypb.Empty{}, nil
}
