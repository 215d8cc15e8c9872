package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// Lister is what tasks/list needs of the task service.
type Lister interface {
	List(ctx context.Context, caller tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error)
}

// list serves tasks/list, the a2a-go 0.3 extension. Without a Lister the
// method is unknown (-32601), as on a server that does not offer it.
func (s *Server) list(c echo.Context, req *a2a.Request) error {
	r := c.Request()
	op := bufPool.Get().(*[]byte)
	defer bufPool.Put(op)
	out := (*op)[:0]
	res, rpcErr := s.listPage(r.Context(), r, req)
	if rpcErr == nil {
		out = a2a.AppendResultStart(out, req.ID)
		var err error
		if out, err = a2a.AppendListTasksResult(out, &res); err == nil {
			out = append(out, '}')
		} else {
			rpcErr = s.rpcError(r.Context(), req.Method, err)
		}
	}
	if rpcErr != nil {
		out = a2a.AppendError(out[:0], req.ID, rpcErr)
	}
	*op = out
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, out)
}

func (s *Server) listPage(ctx context.Context, r *http.Request, req *a2a.Request) (a2a.ListTasksResult, *a2a.Error) {
	if s.cfg.Lister == nil {
		e := a2a.MethodNotFound(req.Method)
		noteError(ctx, e, nil)
		return a2a.ListTasksResult{}, e
	}
	if e := listRefused(ctx); e != nil {
		noteError(ctx, e, nil)
		return a2a.ListTasksResult{}, e
	}
	p, perr := a2a.DecodeListTasks(req.Params)
	if perr != nil {
		noteError(ctx, perr, nil)
		return a2a.ListTasksResult{}, perr
	}
	page, err := s.cfg.Lister.List(ctx, s.callerOf(r), listQuery(p))
	if err != nil {
		return a2a.ListTasksResult{}, s.listError(ctx, req.Method, err, "/page_token")
	}
	return listResult(page), nil
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
func (s *Server) listError(ctx context.Context, method string, err error, tokenPath string) *a2a.Error {
	var e *a2a.Error
	switch {
	case errors.Is(err, tasks.ErrPageToken):
		e = a2a.InvalidParams(a2a.Problem{Path: tokenPath, Message: a2a.PageTokenMalformed})
	case errors.Is(err, tasks.ErrPageTokenQuery):
		e = a2a.InvalidParams(a2a.Problem{Path: tokenPath, Message: a2a.PageTokenOtherQuery})
	default:
		return s.rpcError(ctx, method, err)
	}
	noteError(ctx, e, err)
	return e
}

// listRefused refuses listing to a principal whose owner is shared with
// callers it cannot be told apart from: anonymous callers beside keyed
// ones would list each other's tasks.
func listRefused(ctx context.Context) *a2a.Error {
	if p, ok := principalFrom(ctx); ok && p.SharedOwner {
		return a2a.ErrListNeedsKey
	}
	return nil
}
