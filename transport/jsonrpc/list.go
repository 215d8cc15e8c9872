package jsonrpc

import (
	"context"
	"errors"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// Lister is what tasks/list needs of the task service.
type Lister interface {
	List(ctx context.Context, caller tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error)
}

// list serves tasks/list (the a2a-go 0.3 extension) and ListTasks.
// Without a Lister the method is unknown (-32601), as on a server that
// does not offer it.
func (c *codec) list(s *Server, cl *call) (result, *a2a.Error) {
	if s.cfg.Lister == nil {
		return nil, a2a.MethodNotFound(cl.req.Method)
	}
	if e := listRefused(cl.p); e != nil {
		return nil, e
	}
	p, perr := c.decodeList(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	page, err := s.cfg.Lister.List(cl.ctx, cl.caller, listQuery(p))
	if err != nil {
		return nil, s.listError(cl, err, c.pageTokenPath)
	}
	return c.page(page), nil
}

// listQuery converts decoded list params, of either protocol version, to
// the service's query.
func listQuery(p a2a.ListTasksParams) tasks.ListQuery {
	q := tasks.ListQuery{
		ListFilter:       tasks.ListFilter{ContextID: p.ContextID, State: p.Status},
		PageSize:         p.PageSize,
		PageToken:        p.PageToken,
		HistoryLength:    p.HistoryLength,
		IncludeArtifacts: p.IncludeArtifacts,
	}
	if p.StatusTimestampAfter != nil {
		q.StatusAfter = *p.StatusTimestampAfter
	}
	return q
}

// listResult converts a page of the service for the wire.
func listResult(p tasks.ListPage) a2a.ListTasksResult {
	return a2a.ListTasksResult{Tasks: p.Tasks, TotalSize: p.TotalSize, PageSize: p.PageSize, NextPageToken: p.NextPageToken}
}

// listError converts a list error for the wire; a bad page token is
// -32602 naming tokenPath, the token's field in the caller's protocol.
func (s *Server) listError(cl *call, err error, tokenPath string) *a2a.Error {
	var e *a2a.Error
	switch {
	case errors.Is(err, tasks.ErrPageToken):
		e = a2a.InvalidParams(a2a.Problem{Path: tokenPath, Message: a2a.PageTokenMalformed})
	case errors.Is(err, tasks.ErrPageTokenQuery):
		e = a2a.InvalidParams(a2a.Problem{Path: tokenPath, Message: a2a.PageTokenOtherQuery})
	default:
		return s.fail(cl, err)
	}
	cl.ac.noteError(e, err)
	return e
}

// listRefused refuses listing to a principal whose owner is shared with
// callers it cannot be told apart from: anonymous callers beside keyed
// ones would list each other's tasks.
func listRefused(p Principal) *a2a.Error {
	if p.SharedOwner {
		return a2a.ErrListNeedsKey
	}
	return nil
}
