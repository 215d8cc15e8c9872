package jsonrpc

import (
	"context"

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

// push serves the push config method verb in the codec's version
// (tasks/pushNotificationConfig/set and CreateTaskPushNotificationConfig,
// and so on). Without a PushService it answers -32003. Delete is
// idempotent: deleting what is not there is no error.
func (c *codec) push(verb pushVerb) func(s *Server, cl *call) (result, *a2a.Error) {
	return func(s *Server, cl *call) (result, *a2a.Error) {
		p, e := c.pushParams(s, cl, verb)
		if e != nil {
			return nil, e
		}
		switch verb {
		case pushSet:
			p.Config.Wire = c.version
			cfg, err := s.cfg.Push.SetPushConfig(cl.ctx, cl.caller, p.TaskID, p.Config)
			return pushAnswer(s, cl, cfg, err, c.pushConfig)
		case pushGet:
			cfg, err := s.cfg.Push.PushConfig(cl.ctx, cl.caller, p.TaskID, p.ConfigID)
			return pushAnswer(s, cl, cfg, err, c.pushConfig)
		case pushList:
			list, err := s.cfg.Push.PushConfigList(cl.ctx, cl.caller, p.TaskID)
			return pushAnswer(s, cl, list, err, c.pushConfigs)
		}
		if err := s.cfg.Push.DeletePushConfig(cl.ctx, cl.caller, p.TaskID, p.ConfigID); err != nil {
			return nil, s.fail(cl, err)
		}
		return c.pushDeleted, nil
	}
}

// pushParams reads the params of a push config method and notes its
// task, once the server is known to offer push.
func (c *codec) pushParams(s *Server, cl *call, verb pushVerb) (a2a.PushConfigParams, *a2a.Error) {
	if s.cfg.Push == nil {
		return a2a.PushConfigParams{}, a2a.ErrPushNotSupported
	}
	p, perr := c.decodePush[verb](cl.req.Params)
	if perr != nil {
		return p, perr
	}
	cl.ac.noteTask(p.TaskID)
	return p, nil
}

// pushAnswer is a push method's result in the codec's shape, or the
// call's error: the service's, or the encoding's.
func pushAnswer[T any](s *Server, cl *call, v T, err error, shape func(T) (result, error)) (result, *a2a.Error) {
	var r result
	if err == nil {
		r, err = shape(v)
	}
	if err != nil {
		return nil, s.fail(cl, err)
	}
	return r, nil
}
