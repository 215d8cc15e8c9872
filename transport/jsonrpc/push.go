package jsonrpc

import (
	"github.com/a2ad/a2ad/a2a"
)

// push serves the push config method verb in the codec's version
// (tasks/pushNotificationConfig/set and CreateTaskPushNotificationConfig,
// and so on). Without a PushService it answers -32003.
func (c *codec) push(verb pushVerb) func(s *Server, cl *call) (result, *a2a.Error) {
	return func(s *Server, cl *call) (result, *a2a.Error) {
		if e := s.core.PushRefused(); e != nil {
			return nil, e
		}
		p, perr := c.decodePush[verb](cl.req.Params)
		if perr != nil {
			return nil, perr
		}
		switch verb {
		case pushSet:
			cfg, e := s.core.SetPush(cl.ctx, cl.cl, p)
			return pushAnswer(s, cl, cfg, e, c.pushConfig)
		case pushGet:
			cfg, e := s.core.GetPush(cl.ctx, cl.cl, p)
			return pushAnswer(s, cl, cfg, e, c.pushConfig)
		case pushList:
			list, e := s.core.ListPush(cl.ctx, cl.cl, p)
			return pushAnswer(s, cl, list, e, c.pushConfigs)
		}
		if e := s.core.DeletePush(cl.ctx, cl.cl, p); e != nil {
			return nil, e
		}
		return c.pushDeleted, nil
	}
}

// pushAnswer is a push method's result in the codec's shape, or the
// call's error: the service's, or the encoding's.
func pushAnswer[T any](s *Server, cl *call, v T, e *a2a.Error, shape func(T) (result, error)) (result, *a2a.Error) {
	if e != nil {
		return nil, e
	}
	r, err := shape(v)
	if err != nil {
		return nil, s.core.Fail(cl.ctx, cl.cl, err)
	}
	return r, nil
}
