package server

import (
	"errors"
	"net/http"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/tasks"
)

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
		return v1.AppendError(dst, id, e)
	}
	return a2a.AppendError(dst, id, e)
}

// The A2A 1.0 methods that do not stream.

func (s *Server) sendV1(cl *call) (result, *a2a.Error) {
	p, perr := v1.DecodeSendParams(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	if p.PushConfig != nil {
		p.PushConfig.Wire = a2a.V10
	}
	cl.ac.noteTask(p.Message.TaskID)
	task, out, err := s.cfg.Tasks.Send(cl.ctx, cl.caller, p)
	cl.ac.outcome = out
	if err != nil {
		return nil, s.fail(cl, err)
	}
	cl.ac.noteResult(task)
	return v1Result{&v1.StreamResponse{Task: task}}, nil
}

func (s *Server) getV1(cl *call) (result, *a2a.Error) {
	q, perr := v1.DecodeTaskQuery(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	cl.ac.noteTask(q.ID)
	task, err := s.cfg.Tasks.Get(cl.ctx, cl.caller, q.ID, q.HistoryLength)
	if err != nil {
		return nil, s.fail(cl, err)
	}
	return v1Result{v1.TaskResult{Task: task}}, nil
}

func (s *Server) cancelV1(cl *call) (result, *a2a.Error) {
	p, perr := v1.DecodeTaskIDParams(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	cl.ac.noteTask(p.ID)
	task, err := s.cfg.Tasks.Cancel(cl.ctx, cl.caller, p.ID)
	if errors.Is(err, tasks.ErrNotCancelable) {
		// 1.0: cancel is idempotent; a task canceled already is
		// answered as it stands (another terminal state is not).
		if t, gerr := s.cfg.Tasks.Get(cl.ctx, cl.caller, p.ID, nil); gerr == nil && t.Status.State == a2a.StateCanceled {
			task, err = t, nil
		}
	}
	if err != nil {
		return nil, s.fail(cl, err)
	}
	cl.ac.noteResult(task)
	return v1Result{v1.TaskResult{Task: task}}, nil
}

// cardV1 serves GetExtendedAgentCard, which takes no params.
func (s *Server) cardV1(cl *call) (result, *a2a.Error) {
	if perr := v1.DecodeNoParams(cl.req.Params); perr != nil {
		return nil, perr
	}
	if s.cfg.ExtendedCard == nil {
		return nil, a2a.ErrUnsupportedOp
	}
	return rawJSON(s.cfg.ExtendedCard(cl.p).JSON), nil
}

func (s *Server) pushCreateV1(cl *call) (result, *a2a.Error) {
	if s.cfg.Push == nil {
		return nil, a2a.ErrPushNotSupported
	}
	p, perr := v1.DecodePushCreate(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	p.Config.Wire = a2a.V10
	cl.ac.noteTask(p.TaskID)
	cfg, err := s.cfg.Push.SetPushConfig(cl.ctx, cl.caller, p.TaskID, p.Config)
	if err != nil {
		return nil, s.fail(cl, err)
	}
	return v1Result{v1.PushConfigResult{Config: cfg}}, nil
}

func (s *Server) pushGetV1(cl *call) (result, *a2a.Error) {
	if s.cfg.Push == nil {
		return nil, a2a.ErrPushNotSupported
	}
	p, perr := v1.DecodePushRef(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	cl.ac.noteTask(p.TaskID)
	cfg, err := s.cfg.Push.PushConfig(cl.ctx, cl.caller, p.TaskID, p.ConfigID)
	if err != nil {
		return nil, s.fail(cl, err)
	}
	return v1Result{v1.PushConfigResult{Config: cfg}}, nil
}

func (s *Server) pushListV1(cl *call) (result, *a2a.Error) {
	if s.cfg.Push == nil {
		return nil, a2a.ErrPushNotSupported
	}
	p, perr := v1.DecodePushList(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	if p.PageToken != "" {
		// Every config fits on one page: a2ad never hands out a token.
		return nil, a2a.InvalidParams(a2a.Problem{Path: "/pageToken", Message: "is not a token this server issued (every config fits on one page)"})
	}
	cl.ac.noteTask(p.TaskID)
	list, err := s.cfg.Push.PushConfigList(cl.ctx, cl.caller, p.TaskID)
	if err != nil {
		return nil, s.fail(cl, err)
	}
	return v1Result{&v1.PushConfigList{Configs: list}}, nil
}

// pushDeleteV1 is idempotent: deleting what is not there is no error.
func (s *Server) pushDeleteV1(cl *call) (result, *a2a.Error) {
	if s.cfg.Push == nil {
		return nil, a2a.ErrPushNotSupported
	}
	p, perr := v1.DecodePushRef(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	cl.ac.noteTask(p.TaskID)
	if err := s.cfg.Push.DeletePushConfig(cl.ctx, cl.caller, p.TaskID, p.ConfigID); err != nil {
		return nil, s.fail(cl, err)
	}
	return v1Result{v1.Empty{}}, nil
}

// listV1 serves ListTasks; without a Lister the method is unknown, as
// tasks/list is.
func (s *Server) listV1(cl *call) (result, *a2a.Error) {
	if s.cfg.Lister == nil {
		return nil, a2a.MethodNotFound(cl.req.Method)
	}
	if e := listRefused(cl.p); e != nil {
		return nil, e
	}
	p, perr := v1.DecodeListTasks(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	page, err := s.cfg.Lister.List(cl.ctx, cl.caller, listQuery(p))
	if err != nil {
		return nil, s.listError(cl, err, "/pageToken")
	}
	return v1Result{&v1.TaskList[a2a.Task]{Tasks: page.Tasks, NextPageToken: page.NextPageToken, PageSize: page.PageSize, TotalSize: page.TotalSize}}, nil
}
