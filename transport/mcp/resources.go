package mcp

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

// A caller's own tasks are MCP resources, read-only: resources/list
// lists them, resources/read reads one, through the core as tasks/list
// and tasks/get are (the same isolation, limits and audit). Reading a
// task only observes it: it changes, refreshes and counts nothing.

// TaskURIPrefix starts the URI of a task resource; the task's id follows.
const TaskURIPrefix = "a2ad://tasks/"

// taskMIMEType is the media type of a task resource: the A2A 1.0 Task
// JSON, as the REST binding's GetTask answers it.
const taskMIMEType = "application/json"

// taskTemplate is the one resource template: any task of the caller's.
var taskTemplate = &sdk.ResourceTemplate{
	URITemplate: TaskURIPrefix + "{id}",
	Name:        "task",
	Title:       "An a2ad task of yours",
	Description: "One of your own a2ad tasks (a tools/call's io.a2ad/task-id, or an A2A task) as its A2A 1.0 Task JSON.",
	MIMEType:    taskMIMEType,
}

// resources serves the resources/* methods; ok is false for another
// method.
func (rq *request) resources(method string, req sdk.Request) (res sdk.Result, ok bool, err error) {
	switch method {
	case "resources/list":
		var cursor string
		if l, is := req.(*sdk.ListResourcesRequest); is && l.Params != nil {
			cursor = l.Params.Cursor
		}
		res, err = rq.listTasks(cursor)
		return res, true, err
	case "resources/templates/list":
		out := &sdk.ListResourceTemplatesResult{ResourceTemplates: []*sdk.ResourceTemplate{taskTemplate}}
		out.CacheScope = "private"
		return out, true, nil
	case "resources/read":
		if r, is := req.(*sdk.ReadResourceRequest); is && r.Params != nil {
			res, err = rq.readTask(r.Params.URI)
			return res, true, err
		}
	}
	return nil, false, nil
}

// listTasks is a page of resources/list: the caller's tasks, newest
// update first, the core's page token as the cursor. A caller who may
// not list tasks (an anonymous one beside keyed callers) gets the core's
// refusal.
func (rq *request) listTasks(cursor string) (*sdk.ListResourcesResult, error) {
	core, cl := rq.s.cfg.Core, rq.cl
	if e := core.ListRefused(cl); e != nil {
		cl.NoteError(e, nil)
		return nil, wireError(e)
	}
	// The latest message names the function (a tools/call's only one
	// does); the rest of the history, and the artifacts, stay in the store.
	one := 1
	page, e := core.List(rq.ctx, cl, a2a.ListTasksParams{PageToken: cursor, HistoryLength: &one}, "cursor")
	if e != nil {
		return nil, wireError(e)
	}
	res := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}, NextCursor: page.NextPageToken}
	res.CacheScope = "private"
	for i := range page.Tasks {
		t := &page.Tasks[i]
		res.Resources = append(res.Resources, &sdk.Resource{
			URI:         TaskURIPrefix + t.ID,
			Name:        t.ID,
			MIMEType:    taskMIMEType,
			Description: describe(t),
		})
	}
	return res, nil
}

// describe is a task's one-line description: its function, when the
// message the page holds names one, and its state.
func describe(t *a2a.Task) string {
	state := "state " + string(t.Status.State)
	if fn := functionOf(t); fn != "" {
		return "Call of " + fn + ", " + state
	}
	return "Task, " + state
}

// functionOf is the function the task's last message names in a data
// part's "skill" (as a tools/call's does); "" when it names none (an A2A
// message to the default skill, a follow-up, or no history kept).
func functionOf(t *a2a.Task) string {
	if len(t.History) == 0 {
		return ""
	}
	for _, p := range t.History[len(t.History)-1].Parts {
		if p.Kind != a2a.PartData {
			continue
		}
		var d struct {
			Skill string `json:"skill"`
		}
		if json.Unmarshal(p.Data, &d) == nil && d.Skill != "" {
			if len(d.Skill) > maxEchoedName {
				return ""
			}
			return d.Skill
		}
	}
	return ""
}

// readTask is resources/read of a task's URI: the task as its A2A 1.0
// JSON, read through the core's Get. A task of another caller's and one
// that does not exist are the same error, byte for byte.
func (rq *request) readTask(uri string) (*sdk.ReadResourceResult, error) {
	id, ok := strings.CutPrefix(uri, TaskURIPrefix)
	if !ok || id == "" || len(id) > a2a.MaxIDBytes || strings.ContainsAny(id, "/?#") {
		return nil, rq.fail(badURI(uri))
	}
	task, e := rq.s.cfg.Core.Get(rq.ctx, rq.cl, a2a.TaskQuery{ID: id}, false)
	switch {
	case e != nil && e.Code == a2a.CodeTaskNotFound:
		return nil, notFound(uri)
	case e != nil:
		return nil, wireError(e)
	}
	b, err := v1.AppendTask(nil, task)
	if err != nil {
		e := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the task has no A2A 1.0 form"}
		return nil, rq.fail(e)
	}
	res := &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: taskMIMEType, Text: string(b)}}}
	res.CacheScope = "private"
	return res, nil
}

// notFound is MCP's error for a resource that does not exist (SEP-2164's
// -32602, as the SDK's ResourceNotFoundError, whose data it JSON-encodes):
// the answer both for a task of another caller's and for no task at all.
func notFound(uri string) *jsonrpc.Error {
	data, _ := json.Marshal(struct {
		URI string `json:"uri"`
	}{uri})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Resource not found", Data: data}
}

// badURI is the error of resources/read of a URI that names no task:
// -32602 naming the URI (cut to a bounded length).
func badURI(uri string) *jsonrpc.Error {
	if len(uri) > maxEchoedName {
		uri = strings.ToValidUTF8(uri[:maxEchoedName], "") + "…"
	}
	return invalidParams("uri", "must be "+TaskURIPrefix+"<task id>, not "+strconv.Quote(uri))
}
