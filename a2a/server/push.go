package server

import (
	"context"
	"encoding/json"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	"github.com/a2ad/a2ad/tasks"
)

// PushService is what the push config methods need of the task service.
type PushService interface {
	SetPushConfig(ctx context.Context, caller tasks.Caller, taskID string, cfg a2a.PushConfig) (*a2a.TaskPushConfig, error)
	PushConfig(ctx context.Context, caller tasks.Caller, taskID, configID string) (*a2a.TaskPushConfig, error)
	PushConfigList(ctx context.Context, caller tasks.Caller, taskID string) ([]a2a.TaskPushConfig, error)
	DeletePushConfig(ctx context.Context, caller tasks.Caller, taskID, configID string) error
}

// The 0.3 push config methods. Without a PushService they answer -32003.

func (s *Server) pushSet03(cl *call) (result, *a2a.Error) {
	if s.cfg.Push == nil {
		return nil, a2a.ErrPushNotSupported
	}
	p, perr := v03.DecodePushSet(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	cl.ac.noteTask(p.TaskID)
	cfg, err := s.cfg.Push.SetPushConfig(cl.ctx, cl.caller, p.TaskID, p.Config)
	if err != nil {
		return nil, s.fail(cl, err)
	}
	return s.json03(cl, wire03(cfg))
}

func (s *Server) pushGet03(cl *call) (result, *a2a.Error) {
	if s.cfg.Push == nil {
		return nil, a2a.ErrPushNotSupported
	}
	p, perr := v03.DecodePushRef(cl.req.Params, false)
	if perr != nil {
		return nil, perr
	}
	cl.ac.noteTask(p.TaskID)
	cfg, err := s.cfg.Push.PushConfig(cl.ctx, cl.caller, p.TaskID, p.ConfigID)
	if err != nil {
		return nil, s.fail(cl, err)
	}
	return s.json03(cl, wire03(cfg))
}

func (s *Server) pushList03(cl *call) (result, *a2a.Error) {
	if s.cfg.Push == nil {
		return nil, a2a.ErrPushNotSupported
	}
	p, perr := v03.DecodePushRef(cl.req.Params, false)
	if perr != nil {
		return nil, perr
	}
	cl.ac.noteTask(p.TaskID)
	list, err := s.cfg.Push.PushConfigList(cl.ctx, cl.caller, p.TaskID)
	if err != nil {
		return nil, s.fail(cl, err)
	}
	out := make([]*a2a.TaskPushConfig, len(list))
	for i := range list {
		out[i] = wire03(&list[i])
	}
	return s.json03(cl, out)
}

// pushDelete03's result is JSON null.
func (s *Server) pushDelete03(cl *call) (result, *a2a.Error) {
	if s.cfg.Push == nil {
		return nil, a2a.ErrPushNotSupported
	}
	p, perr := v03.DecodePushRef(cl.req.Params, true)
	if perr != nil {
		return nil, perr
	}
	cl.ac.noteTask(p.TaskID)
	if err := s.cfg.Push.DeletePushConfig(cl.ctx, cl.caller, p.TaskID, p.ConfigID); err != nil {
		return nil, s.fail(cl, err)
	}
	return rawJSON("null"), nil
}

// json03 is v as a result, encoded by encoding/json.
func (s *Server) json03(cl *call, v any) (result, *a2a.Error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, s.fail(cl, err)
	}
	return rawJSON(b), nil
}

// wire03 is cfg as 0.3 shows it: without the version it was set with,
// which is a2ad's own business.
func wire03(cfg *a2a.TaskPushConfig) *a2a.TaskPushConfig {
	c := *cfg
	c.PushNotificationConfig.Wire = a2a.V03
	return &c
}
