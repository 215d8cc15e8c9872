package jsonrpc

import (
	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// list serves tasks/list (the a2a-go 0.3 extension) and ListTasks.
// Without a Lister the method is unknown (-32601), as on a server that
// does not offer it.
func (c *codec) list(s *Server, cl *call) (result, *a2a.Error) {
	if e := s.core.ListRefused(cl.cl); e != nil {
		return nil, e
	}
	p, perr := c.decodeList(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	page, e := s.core.List(cl.ctx, cl.cl, p, c.pageTokenPath)
	if e != nil {
		return nil, e
	}
	return c.page(page), nil
}

// listResult converts a page of the service for the wire.
func listResult(p tasks.ListPage) a2a.ListTasksResult {
	return a2a.ListTasksResult{Tasks: p.Tasks, TotalSize: p.TotalSize, PageSize: p.PageSize, NextPageToken: p.NextPageToken}
}
