package server

import (
	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
)

// The A2A 0.3 methods that do not stream, but for push and list (in
// push.go and list.go).

func (s *Server) send03(cl *call) (result, *a2a.Error) {
	p, perr := v03.DecodeSendParams(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	cl.ac.noteTask(p.Message.TaskID)
	task, out, err := s.cfg.Tasks.Send(cl.ctx, cl.caller, p)
	cl.ac.outcome = out
	if err != nil {
		return nil, s.fail(cl, err)
	}
	cl.ac.noteResult(task)
	return task03{task}, nil
}

func (s *Server) get03(cl *call) (result, *a2a.Error) {
	q, perr := v03.DecodeTaskQuery(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	cl.ac.noteTask(q.ID)
	task, err := s.cfg.Tasks.Get(cl.ctx, cl.caller, q.ID, q.HistoryLength)
	if err != nil {
		return nil, s.fail(cl, err)
	}
	cl.ac.noteResult(task)
	return task03{task}, nil
}

func (s *Server) cancel03(cl *call) (result, *a2a.Error) {
	id, perr := v03.DecodeTaskID(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	cl.ac.noteTask(id)
	task, err := s.cfg.Tasks.Cancel(cl.ctx, cl.caller, id)
	if err != nil {
		return nil, s.fail(cl, err)
	}
	cl.ac.noteResult(task)
	return task03{task}, nil
}

// card03 serves agent/getAuthenticatedExtendedCard; its params are not
// looked at.
func (s *Server) card03(cl *call) (result, *a2a.Error) {
	if s.cfg.ExtendedCard == nil {
		return nil, a2a.ErrUnsupportedOp
	}
	return rawJSON(s.cfg.ExtendedCard(cl.p).JSON), nil
}
