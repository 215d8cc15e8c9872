package rest

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// result is an operation's result, which appends its 1.0 JSON.
type result interface {
	AppendJSON(dst []byte) ([]byte, error)
}

// rawJSON is a result already in JSON.
type rawJSON []byte

func (r rawJSON) AppendJSON(dst []byte) ([]byte, error) { return append(dst, r...), nil }

// The parameters each operation reads from the query.
var (
	getQuery  = []string{"historyLength"}
	listQuery = []string{"contextId", "status", "pageSize", "pageToken", "historyLength", "statusTimestampAfter", "includeArtifacts"}
	pushQuery = []string{"pageSize", "pageToken"}
)

// dispatch serves the operation t with the call's body, and answers.
func (s *Server) dispatch(c echo.Context, cl *transport.Call, t target, body []byte) error {
	if e := pathIDs(t); e != nil {
		return s.fail(c, cl, e)
	}
	switch t.op {
	case opStream, opSubscribe:
		return s.stream(c, cl, t, body)
	case opCard:
		if ref := s.core.NeedsAuth(cl, a2a.V10); ref != nil {
			return s.refuse(c, ref)
		}
	}
	res, e := s.call(c, cl, t, body)
	if e != nil {
		return s.fail(c, cl, e)
	}
	bp := transport.Buffer()
	defer transport.PutBuffer(bp)
	var out []byte
	var err error
	if sr, ok := res.(v1.Spilling); ok {
		// A result carrying tasks is written out while it is made once
		// it passes transport.SpillBytes.
		sp := transport.Spiller{W: c.Response(), ContentType: contentA2AHeader}
		out, err = sr.AppendJSONSpilling((*bp)[:0], sp.Spill)
		if out != nil {
			*bp = out
		}
		if sp.Started() {
			return sp.Finish(out, err)
		}
	} else {
		out, err = res.AppendJSON((*bp)[:0])
		*bp = out
	}
	if err != nil {
		return s.fail(c, cl, s.core.Fail(c.Request().Context(), cl, err))
	}
	return c.Blob(http.StatusOK, contentA2A, out)
}

// call serves an operation that does not stream.
func (s *Server) call(c echo.Context, cl *transport.Call, t target, body []byte) (result, *a2a.Error) {
	r := c.Request()
	ctx := r.Context()
	switch t.op {
	case opSend:
		p, e := sendParams(body)
		if e != nil {
			return nil, e
		}
		task, reply, e := s.core.Send(ctx, cl, p)
		if e != nil {
			return nil, e
		}
		return &v1.StreamResponse{Task: task, Message: reply}, nil
	case opGet:
		if t.taskID == "" {
			return nil, a2a.ErrTaskNotFound
		}
		raw, e := queryParams(r.URL.Query(), getQuery, map[string]string{"id": t.taskID})
		if e != nil {
			return nil, e
		}
		q, e := v1.DecodeTaskQuery(raw)
		if e != nil {
			return nil, e
		}
		task, e := s.core.Get(ctx, cl, q, false)
		if e != nil {
			return nil, e
		}
		return v1.TaskResult{Task: task}, nil
	case opList:
		return s.list(c, cl)
	case opCancel:
		if t.taskID == "" {
			return nil, a2a.ErrTaskNotFound
		}
		task, e := s.core.Cancel(ctx, cl, t.taskID, true)
		if e != nil {
			return nil, e
		}
		return v1.TaskResult{Task: task}, nil
	case opCard:
		card, e := s.core.ExtendedCard(cl, a2a.V10)
		if e != nil {
			return nil, e
		}
		return rawJSON(card), nil
	}
	return s.push(c, cl, t, body)
}

// sendParams reads the body of message:send and message:stream.
func sendParams(body []byte) (a2a.SendParams, *a2a.Error) {
	raw, e := jsonBody(body)
	if e != nil {
		return a2a.SendParams{}, e
	}
	return v1.DecodeSendParams(raw)
}

// list serves GET /tasks.
func (s *Server) list(c echo.Context, cl *transport.Call) (result, *a2a.Error) {
	if e := s.core.ListRefused(cl); e != nil {
		return nil, e
	}
	raw, e := queryParams(c.Request().URL.Query(), listQuery, nil)
	if e != nil {
		return nil, e
	}
	p, e := v1.DecodeListTasks(raw)
	if e != nil {
		return nil, e
	}
	page, e := s.core.List(c.Request().Context(), cl, p, "/pageToken")
	if e != nil {
		return nil, e
	}
	return &v1.TaskList[a2a.Task]{Tasks: page.Tasks, NextPageToken: page.NextPageToken, PageSize: page.PageSize, TotalSize: page.TotalSize}, nil
}

// push serves the push config collection of a task.
func (s *Server) push(c echo.Context, cl *transport.Call, t target, body []byte) (result, *a2a.Error) {
	if e := s.core.PushRefused(); e != nil {
		return nil, e
	}
	ctx := c.Request().Context()
	if t.taskID == "" {
		return nil, a2a.ErrTaskNotFound
	}
	ref := a2a.PushConfigParams{TaskID: t.taskID, ConfigID: t.configID}
	switch t.op {
	case opPushCreate:
		p, e := pushCreateParams(body, t.taskID)
		if e != nil {
			return nil, e
		}
		cfg, e := s.core.SetPush(ctx, cl, p)
		if e != nil {
			return nil, e
		}
		return v1.PushConfigResult{Config: cfg}, nil
	case opPushList:
		raw, e := queryParams(c.Request().URL.Query(), pushQuery, map[string]string{"taskId": t.taskID})
		if e != nil {
			return nil, e
		}
		lp, e := v1.DecodePushList(raw)
		if e == nil {
			e = transport.OnePage("/pageToken", lp.PageToken)
		}
		if e != nil {
			return nil, e
		}
		list, e := s.core.ListPush(ctx, cl, ref)
		if e != nil {
			return nil, e
		}
		return &v1.PushConfigList{Configs: list}, nil
	case opPushGet, opPushDelete:
		if t.configID == "" {
			return nil, a2a.ErrPushConfigNotFound
		}
	}
	if t.op == opPushGet {
		cfg, e := s.core.GetPush(ctx, cl, ref)
		if e != nil {
			return nil, e
		}
		return v1.PushConfigResult{Config: cfg}, nil
	}
	if e := s.core.DeletePush(ctx, cl, ref); e != nil {
		return nil, e
	}
	return v1.Empty{}, nil
}

// pushCreateParams reads the body of a push config create: a
// TaskPushNotificationConfig whose taskId, if set, must be the path's.
func pushCreateParams(body []byte, taskID string) (a2a.PushConfigParams, *a2a.Error) {
	raw, e := jsonBody(body)
	if e != nil {
		return a2a.PushConfigParams{}, e
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && m != nil {
		if _, ok := m["taskId"]; !ok {
			m["taskId"], _ = json.Marshal(taskID)
			raw, _ = json.Marshal(m)
		}
	}
	p, e := v1.DecodePushCreate(raw)
	if e != nil {
		return p, e
	}
	if p.TaskID != taskID {
		return p, a2a.InvalidParams(a2a.Problem{Path: "/taskId", Message: "must be empty or the task of the path"})
	}
	return p, nil
}

// stream serves message:stream and a task's :subscribe as server-sent
// events: each data line a StreamResponse, each id the task's event
// sequence, so that Last-Event-ID resumes. Errors before the first event
// are answered as any error; after it, as the last event, a
// google.rpc.Status object.
func (s *Server) stream(c echo.Context, cl *transport.Call, t target, body []byte) error {
	r := c.Request()
	if e := s.core.StreamsRefused(); e != nil {
		return s.fail(c, cl, e)
	}
	open := func(ctx context.Context) (transport.Opened, *a2a.Error) {
		if t.op == opStream {
			p, e := sendParams(body)
			if e != nil {
				return transport.Opened{}, e
			}
			after, e := transport.ResumePoint(r.Header.Get("Last-Event-ID"), "Last-Event-ID", p.Metadata)
			if e != nil {
				return transport.Opened{}, e
			}
			return s.core.OpenSend(cl, p, after), nil
		}
		if t.taskID == "" {
			return transport.Opened{}, a2a.ErrTaskNotFound
		}
		after, e := transport.ResumePoint(r.Header.Get("Last-Event-ID"), "Last-Event-ID", nil)
		if e != nil {
			return transport.Opened{}, e
		}
		return s.core.OpenWatch(ctx, cl, t.taskID, after, true)
	}
	sw := &transport.SSE{
		W: c.Response(), KeepAlive: s.core.KeepAlive(),
		Data: func(b []byte, e tasks.StreamEvent) ([]byte, error) {
			r := v1.StreamResponse{Task: e.Task, Message: e.Message, StatusUpdate: e.Status, ArtifactUpdate: e.Artifact}
			return r.AppendJSON(b)
		},
		ErrorData: func(b []byte, e *a2a.Error) []byte { return appendStatus(b, transport.StatusOf(e), e) },
	}
	if e := s.core.Stream(r.Context(), cl, open, sw); e != nil {
		if cl.Err() == nil {
			cl.NoteError(e, nil)
		}
		st := transport.StatusOf(e)
		if st.HTTP == http.StatusServiceUnavailable {
			c.Response().Header().Set("Retry-After", "1")
		}
		return s.writeError(c, st.HTTP, st, e)
	}
	return nil
}

// pathIDs reads the ids of t's path that no decoder reads on the way of
// its operation (cancel, subscribe, a push config's get and delete)
// through the 1.0 decoders, as the other operations' ids and the other
// bindings' are: an id longer than a2a.MaxIDBytes is a -32602 (400)
// naming it (/id; /taskId and /id for a push config). An empty id is
// left to the operation, which answers it as not found.
func pathIDs(t target) *a2a.Error {
	var e *a2a.Error
	switch {
	case t.taskID == "":
	case t.op == opCancel || t.op == opSubscribe:
		_, e = v1.DecodeTaskIDParams(idsJSON("id", t.taskID, "", ""))
	case (t.op == opPushGet || t.op == opPushDelete) && t.configID != "":
		_, e = v1.DecodePushRef(idsJSON("taskId", t.taskID, "id", t.configID))
	}
	return e
}

// idsJSON is the JSON object {k1: s1} or {k1: s1, k2: s2} (k2 "").
func idsJSON(k1, s1, k2, s2 string) json.RawMessage {
	m := map[string]string{k1: s1}
	if k2 != "" {
		m[k2] = s2
	}
	b, _ := json.Marshal(m) // strings always encode
	return b
}
