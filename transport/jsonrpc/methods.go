package jsonrpc

import (
	"context"
	"net/http"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/transport"
)

// method is one JSON-RPC method the endpoint knows. A method may be known
// and still be turned off (no stream, push or list service): it is
// answered, not "method not found".
type method struct {
	name string
	// version is the protocol the name belongs to: it picks the shapes
	// of the params, the result and the errors.
	version a2a.Version
	// stateful: the call changes or follows a task, and its answer says
	// how the task ended; the audit record's reason is the task's state
	// rather than a plain "ok".
	stateful bool
	// authOnly: when the server offers it (an extended card is
	// configured), an anonymous caller is refused with HTTP 401.
	authOnly bool
	// serve serves one call of a method that does not stream; open opens
	// the stream of a method that does (see Server.stream). A method has
	// one of the two.
	serve func(s *Server, cl *call) (result, *a2a.Error)
	open  func(s *Server, cl *call) (opened, *a2a.Error)
}

// streams reports whether m is answered as server-sent events (when a
// StreamService is configured).
func (m *method) streams() bool { return m.open != nil }

// call is one admitted, parsed request to a known method.
type call struct {
	ctx context.Context
	r   *http.Request
	req *a2a.Request
	cl  *transport.Call // the core's view of the call, and its audit record
}

// result is a method's result, which appends its JSON in the shape of the
// method's version.
type result interface {
	appendJSON(dst []byte) ([]byte, error)
}

// methods are the JSON-RPC methods, 0.3 names then 1.0 names. The 1.0
// names do not collide with the 0.3 ones, so one endpoint serves both.
var methods = []method{
	{name: "message/send", version: a2a.V03, stateful: true, serve: codec03.send},
	{name: "message/stream", version: a2a.V03, stateful: true, open: codec03.stream},
	{name: "tasks/get", version: a2a.V03, serve: codec03.get},
	{name: "tasks/cancel", version: a2a.V03, stateful: true, serve: codec03.cancel},
	{name: "tasks/resubscribe", version: a2a.V03, stateful: true, open: codec03.subscribe},
	{name: "tasks/list", version: a2a.V03, serve: codec03.list}, // a2a-go's extension of 0.3
	{name: "tasks/pushNotificationConfig/set", version: a2a.V03, serve: codec03.push(pushSet)},
	{name: "tasks/pushNotificationConfig/get", version: a2a.V03, serve: codec03.push(pushGet)},
	{name: "tasks/pushNotificationConfig/list", version: a2a.V03, serve: codec03.push(pushList)},
	{name: "tasks/pushNotificationConfig/delete", version: a2a.V03, serve: codec03.push(pushDelete)},
	{name: "agent/getAuthenticatedExtendedCard", version: a2a.V03, authOnly: true, serve: (*Server).card03},

	{name: "SendMessage", version: a2a.V10, stateful: true, serve: codecV1.send},
	{name: "SendStreamingMessage", version: a2a.V10, stateful: true, open: codecV1.stream},
	{name: "GetTask", version: a2a.V10, serve: codecV1.get},
	{name: "CancelTask", version: a2a.V10, stateful: true, serve: codecV1.cancel},
	{name: "SubscribeToTask", version: a2a.V10, stateful: true, open: codecV1.subscribe},
	{name: "ListTasks", version: a2a.V10, serve: codecV1.list},
	{name: "CreateTaskPushNotificationConfig", version: a2a.V10, serve: codecV1.push(pushSet)},
	{name: "GetTaskPushNotificationConfig", version: a2a.V10, serve: codecV1.push(pushGet)},
	{name: "ListTaskPushNotificationConfigs", version: a2a.V10, serve: codecV1.push(pushList)},
	{name: "DeleteTaskPushNotificationConfig", version: a2a.V10, serve: codecV1.push(pushDelete)},
	{name: "GetExtendedAgentCard", version: a2a.V10, authOnly: true, serve: (*Server).cardV1},
}

// methodsByName indexes methods.
var methodsByName = func() map[string]*method {
	m := make(map[string]*method, len(methods))
	for i := range methods {
		m[methods[i].name] = &methods[i]
	}
	return m
}()

// lookup finds the method named name.
func lookup(name string) (*method, bool) {
	m, ok := methodsByName[name]
	return m, ok
}

// Methods returns the names of the JSON-RPC methods the endpoint knows:
// a fixed set, unlike the method of a request, which the caller chooses.
func Methods() []string {
	out := make([]string, len(methods))
	for i := range methods {
		out[i] = methods[i].name
	}
	return out
}

// The results, by shape.
type (
	// task03 is a task in the 0.3 shape.
	task03 struct{ t *a2a.Task }
	// message03 is a message in the 0.3 shape.
	message03 struct{ m *a2a.Message }
	// rawJSON is a result already in JSON.
	rawJSON []byte
	// list03 is a page of tasks/list.
	list03 a2a.ListTasksResult
	// v1Result is a result in the 1.0 shapes.
	v1Result struct{ r v1.Result }
)

func (r task03) appendJSON(dst []byte) ([]byte, error)    { return v03.AppendTask(dst, r.t) }
func (r message03) appendJSON(dst []byte) ([]byte, error) { return v03.AppendMessage(dst, r.m) }
func (r rawJSON) appendJSON(dst []byte) ([]byte, error)   { return append(dst, r...), nil }
func (r *list03) appendJSON(dst []byte) ([]byte, error) {
	return v03.AppendListTasksResult(dst, (*a2a.ListTasksResult)(r))
}
func (r v1Result) appendJSON(dst []byte) ([]byte, error) { return r.r.AppendJSON(dst) }

// spilling is a result that carries tasks, which can be large: it can be
// written while it is made (transport.Spiller).
type spilling interface {
	result
	appendSpilling(dst []byte, spill a2a.Spill) ([]byte, error)
}

var (
	_ spilling = task03{}
	_ spilling = (*list03)(nil)
	_ spilling = v1Result{}
)

func (r task03) appendSpilling(dst []byte, spill a2a.Spill) ([]byte, error) {
	return v03.AppendTaskSpilling(dst, r.t, spill)
}

func (r *list03) appendSpilling(dst []byte, spill a2a.Spill) ([]byte, error) {
	return v03.AppendListTasksResultSpilling(dst, (*a2a.ListTasksResult)(r), spill)
}

func (r v1Result) appendSpilling(dst []byte, spill a2a.Spill) ([]byte, error) {
	if sr, ok := r.r.(v1.Spilling); ok {
		return sr.AppendJSONSpilling(dst, spill)
	}
	return r.r.AppendJSON(dst)
}
