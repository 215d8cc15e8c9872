package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// PushService is what the push config methods need of the task service.
type PushService interface {
	SetPushConfig(ctx context.Context, caller tasks.Caller, taskID string, cfg a2a.PushConfig) (*a2a.TaskPushConfig, error)
	PushConfig(ctx context.Context, caller tasks.Caller, taskID, configID string) (*a2a.TaskPushConfig, error)
	PushConfigList(ctx context.Context, caller tasks.Caller, taskID string) ([]a2a.TaskPushConfig, error)
	DeletePushConfig(ctx context.Context, caller tasks.Caller, taskID, configID string) error
}

func isPushMethod(m string) bool { return strings.HasPrefix(m, "tasks/pushNotificationConfig/") }

// push serves the tasks/pushNotificationConfig methods and returns the
// result's JSON.
func (s *Server) push(ctx context.Context, r *http.Request, req *a2a.Request) ([]byte, *a2a.Error) {
	if s.cfg.Push == nil {
		return nil, a2a.ErrPushNotSupported
	}
	caller := s.callerOf(r)
	var (
		result any
		err    error
	)
	switch req.Method {
	case "tasks/pushNotificationConfig/set":
		p, perr := a2a.DecodePushSet(req.Params)
		if perr != nil {
			return nil, perr
		}
		noteTask(ctx, p.TaskID)
		result, err = s.cfg.Push.SetPushConfig(ctx, caller, p.TaskID, p.Config)
	case "tasks/pushNotificationConfig/get":
		p, perr := a2a.DecodePushRef(req.Params, false)
		if perr != nil {
			return nil, perr
		}
		noteTask(ctx, p.TaskID)
		result, err = s.cfg.Push.PushConfig(ctx, caller, p.TaskID, p.ConfigID)
	case "tasks/pushNotificationConfig/list":
		p, perr := a2a.DecodePushRef(req.Params, false)
		if perr != nil {
			return nil, perr
		}
		noteTask(ctx, p.TaskID)
		result, err = s.cfg.Push.PushConfigList(ctx, caller, p.TaskID)
	case "tasks/pushNotificationConfig/delete":
		p, perr := a2a.DecodePushRef(req.Params, true)
		if perr != nil {
			return nil, perr
		}
		noteTask(ctx, p.TaskID)
		err = s.cfg.Push.DeletePushConfig(ctx, caller, p.TaskID, p.ConfigID)
	default:
		return nil, a2a.MethodNotFound(req.Method)
	}
	if err != nil {
		return nil, s.rpcError(ctx, req.Method, err)
	}
	b, err := json.Marshal(result) // delete's nil result is JSON null
	if err != nil {
		return nil, s.rpcError(ctx, req.Method, err)
	}
	return b, nil
}
