package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// The A2A 1.0 method names. They do not collide with the 0.3 ones, so one
// endpoint serves both: the method name picks the shapes.
func isV1Method(m string) bool {
	switch m {
	case "SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask",
		"CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
		"ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard":
		return true
	}
	return false
}

// is03Method reports whether m is an A2A 0.3 method name (or a2a-go's
// tasks/list).
func is03Method(m string) bool {
	switch m {
	case "message/send", "message/stream", "tasks/get", "tasks/list", "tasks/cancel", "tasks/resubscribe",
		"tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete", "agent/getAuthenticatedExtendedCard":
		return true
	}
	return false
}

// requestVersion reads the A2A-Version header, else the query parameter
// of that name; missing or empty means 0.3.
func requestVersion(r *http.Request) (a2a.Version, *a2a.Error) {
	v := r.Header.Get(a2a.VersionHeader)
	if v == "" {
		v = r.URL.Query().Get(a2a.VersionHeader)
	}
	return a2a.ParseVersion(v)
}

// appendErrorFor writes e in the shape of wire.
func appendErrorFor(dst []byte, wire a2a.Version, id []byte, e *a2a.Error) []byte {
	if wire == a2a.V10 {
		return a2a.AppendErrorV1(dst, id, e)
	}
	return a2a.AppendError(dst, id, e)
}

// serveV1 serves one 1.0 method, but for the streaming ones.
func (s *Server) serveV1(c echo.Context, req *a2a.Request) error {
	r := c.Request()
	ctx := r.Context()
	result, rpcErr := s.dispatchV1(ctx, r, req)
	op := bufPool.Get().(*[]byte)
	defer bufPool.Put(op)
	out := (*op)[:0]
	if rpcErr == nil {
		var err error
		if out, err = a2a.AppendResultV1(out, req.ID, result); err != nil {
			rpcErr = s.rpcError(ctx, req.Method, err)
		}
	}
	if rpcErr != nil {
		noteError(ctx, rpcErr, nil)
		out = a2a.AppendErrorV1(out[:0], req.ID, rpcErr)
	}
	*op = out
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, out)
}

func (s *Server) dispatchV1(ctx context.Context, r *http.Request, req *a2a.Request) (a2a.ResultV1, *a2a.Error) {
	caller := s.callerOf(r)
	ac := auditFrom(ctx)
	fail := func(err error) (a2a.ResultV1, *a2a.Error) { return nil, s.rpcError(ctx, req.Method, err) }
	switch req.Method {
	case "SendMessage":
		p, perr := a2a.DecodeSendParamsV1(req.Params)
		if perr != nil {
			return nil, perr
		}
		if p.PushConfig != nil {
			p.PushConfig.Wire = a2a.V10
		}
		if ac != nil {
			ac.stateful = true
		}
		noteTask(ctx, p.Message.TaskID)
		task, err := s.cfg.Tasks.Send(ctx, caller, p)
		if err != nil {
			return fail(err)
		}
		noteResult(ctx, task)
		return &a2a.StreamResponseV1{Task: task}, nil
	case "GetTask":
		q, perr := a2a.DecodeTaskQueryV1(req.Params)
		if perr != nil {
			return nil, perr
		}
		noteTask(ctx, q.ID)
		task, err := s.cfg.Tasks.Get(ctx, caller, q.ID, q.HistoryLength)
		if err != nil {
			return fail(err)
		}
		return task, nil
	case "CancelTask":
		p, perr := a2a.DecodeTaskIDParamsV1(req.Params)
		if perr != nil {
			return nil, perr
		}
		if ac != nil {
			ac.stateful = true
		}
		noteTask(ctx, p.ID)
		task, err := s.cfg.Tasks.Cancel(ctx, caller, p.ID)
		if errors.Is(err, tasks.ErrNotCancelable) {
			// 1.0: cancel is idempotent; a task canceled already is
			// answered as it stands (another terminal state is not).
			if t, gerr := s.cfg.Tasks.Get(ctx, caller, p.ID, nil); gerr == nil && t.Status.State == a2a.StateCanceled {
				task, err = t, nil
			}
		}
		if err != nil {
			return fail(err)
		}
		noteResult(ctx, task)
		return task, nil
	case "ListTasks":
		return s.listV1(ctx, caller, req)
	case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
		"ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig":
		return s.pushV1(ctx, caller, req)
	case "GetExtendedAgentCard":
		if perr := a2a.DecodeNoParamsV1(req.Params); perr != nil {
			return nil, perr
		}
		if s.cfg.ExtendedCard == nil {
			return nil, a2a.ErrUnsupportedOp
		}
		p, _ := principalFrom(ctx)
		return rawV1(s.cfg.ExtendedCard(p).JSON), nil
	case "SendStreamingMessage", "SubscribeToTask":
		return nil, a2a.ErrStreamingNotSupport
	}
	return nil, a2a.MethodNotFound(req.Method)
}

// rawV1 is a result already in JSON.
type rawV1 []byte

func (b rawV1) AppendJSONV1(dst []byte) ([]byte, error) { return append(dst, b...), nil }

func (s *Server) pushV1(ctx context.Context, caller tasks.Caller, req *a2a.Request) (a2a.ResultV1, *a2a.Error) {
	if s.cfg.Push == nil {
		return nil, a2a.ErrPushNotSupported
	}
	fail := func(err error) (a2a.ResultV1, *a2a.Error) { return nil, s.rpcError(ctx, req.Method, err) }
	switch req.Method {
	case "CreateTaskPushNotificationConfig":
		p, perr := a2a.DecodePushCreateV1(req.Params)
		if perr != nil {
			return nil, perr
		}
		p.Config.Wire = a2a.V10
		noteTask(ctx, p.TaskID)
		cfg, err := s.cfg.Push.SetPushConfig(ctx, caller, p.TaskID, p.Config)
		if err != nil {
			return fail(err)
		}
		return cfg, nil
	case "GetTaskPushNotificationConfig":
		p, perr := a2a.DecodePushRefV1(req.Params)
		if perr != nil {
			return nil, perr
		}
		noteTask(ctx, p.TaskID)
		cfg, err := s.cfg.Push.PushConfig(ctx, caller, p.TaskID, p.ConfigID)
		if err != nil {
			return fail(err)
		}
		return cfg, nil
	case "ListTaskPushNotificationConfigs":
		p, perr := a2a.DecodePushListV1(req.Params)
		if perr != nil {
			return nil, perr
		}
		if p.PageToken != "" {
			// Every config fits on one page: a2ad never hands out a token.
			return nil, a2a.InvalidParams(a2a.Problem{Path: "/pageToken", Message: "is not a token this server issued (every config fits on one page)"})
		}
		noteTask(ctx, p.TaskID)
		list, err := s.cfg.Push.PushConfigList(ctx, caller, p.TaskID)
		if err != nil {
			return fail(err)
		}
		return &a2a.PushConfigListV1{Configs: list}, nil
	default: // DeleteTaskPushNotificationConfig: idempotent
		p, perr := a2a.DecodePushRefV1(req.Params)
		if perr != nil {
			return nil, perr
		}
		noteTask(ctx, p.TaskID)
		if err := s.cfg.Push.DeletePushConfig(ctx, caller, p.TaskID, p.ConfigID); err != nil {
			return fail(err)
		}
		return a2a.EmptyV1{}, nil
	}
}

// listV1 serves ListTasks; without a Lister the method is unknown, as
// tasks/list is.
func (s *Server) listV1(ctx context.Context, caller tasks.Caller, req *a2a.Request) (a2a.ResultV1, *a2a.Error) {
	if s.cfg.Lister == nil {
		return nil, a2a.MethodNotFound(req.Method)
	}
	if e := listRefused(ctx); e != nil {
		return nil, e
	}
	p, perr := a2a.DecodeListTasksV1(req.Params)
	if perr != nil {
		return nil, perr
	}
	page, err := s.cfg.Lister.List(ctx, caller, listQuery(p))
	if err != nil {
		return nil, s.listError(ctx, req.Method, err, "/pageToken")
	}
	return &a2a.TaskListV1[a2a.Task]{Tasks: page.Tasks, NextPageToken: page.NextPageToken, PageSize: page.PageSize, TotalSize: page.TotalSize}, nil
}
