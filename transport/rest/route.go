package rest

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/a2ad/a2ad/transport/httpx"
)

// op is one operation of the binding; it indexes ops.
type op int

// The operations.
const (
	opSend op = iota
	opStream
	opGet
	opList
	opCancel
	opSubscribe
	opPushCreate
	opPushList
	opPushGet
	opPushDelete
	opCard
)

// opInfo is what the binding knows of an operation: its 1.0 method name
// (the audit record's and the metrics' method), whether its answer tells
// how a task ended (see transport.Call.SetMethod), and whether it changes
// a task (see Server.typeAccepted).
var ops = [...]struct {
	name     string
	stateful bool
	writes   bool
}{
	opSend:       {"SendMessage", true, true},
	opStream:     {"SendStreamingMessage", true, true},
	opGet:        {"GetTask", false, false},
	opList:       {"ListTasks", false, false},
	opCancel:     {"CancelTask", true, true},
	opSubscribe:  {"SubscribeToTask", true, false},
	opPushCreate: {"CreateTaskPushNotificationConfig", false, true},
	opPushList:   {"ListTaskPushNotificationConfigs", false, false},
	opPushGet:    {"GetTaskPushNotificationConfig", false, false},
	opPushDelete: {"DeleteTaskPushNotificationConfig", false, true},
	opCard:       {"GetExtendedAgentCard", false, false},
}

// target is a request's operation, and the ids its path names. An id
// that is not a valid path segment (a bad escape) is left empty: the
// operation answers it as not found.
type target struct {
	op       op
	taskID   string
	configID string
}

// routeError is a request whose path or verb names no operation: 404, or
// 405 with the verbs the path takes.
type routeError struct {
	status int
	allow  string
}

// verbs maps a resource's verbs to their operations.
type verbs map[string]op

func (v verbs) allow() string {
	var list []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete} {
		if _, ok := v.op(m); ok {
			list = append(list, m)
		}
	}
	return strings.Join(list, ", ")
}

// op is the operation of verb m. HEAD is served as GET (httpx.GET), the
// same status and headers without the body, but for a stream: a HEAD of
// :subscribe would hold a subscription open for nothing, and the headers
// of a stream tell nothing a GET's first event would not, so it is 405
// with Allow "GET, POST".
func (v verbs) op(m string) (op, bool) {
	if m != http.MethodGet && httpx.ServedAsGET(m) { // HEAD
		o, ok := v[http.MethodGet]
		return o, ok && o != opSubscribe
	}
	o, ok := v[m]
	return o, ok
}

// The resources, by the shape of their path.
var (
	sendVerbs      = verbs{http.MethodPost: opSend}
	streamVerbs    = verbs{http.MethodPost: opStream}
	listVerbs      = verbs{http.MethodGet: opList}
	cardVerbs      = verbs{http.MethodGet: opCard}
	taskVerbs      = verbs{http.MethodGet: opGet}
	cancelVerbs    = verbs{http.MethodPost: opCancel}
	subscribeVerbs = verbs{http.MethodGet: opSubscribe, http.MethodPost: opSubscribe} // the proto says GET, the spec text POST
	pushesVerbs    = verbs{http.MethodGet: opPushList, http.MethodPost: opPushCreate}
	pushVerbs      = verbs{http.MethodGet: opPushGet, http.MethodDelete: opPushDelete}
)

// route finds the operation of a request: method is its verb, path its
// escaped path below the binding's base ("/tasks/abc:cancel").
func route(method, path string) (target, *routeError) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var t target
	var v verbs
	switch {
	case len(segs) == 1 && segs[0] == "message:send":
		v = sendVerbs
	case len(segs) == 1 && segs[0] == "message:stream":
		v = streamVerbs
	case len(segs) == 1 && segs[0] == "tasks":
		v = listVerbs
	case len(segs) == 1 && segs[0] == "extendedAgentCard":
		v = cardVerbs
	case len(segs) == 2 && segs[0] == "tasks":
		id, verb, hasVerb := cutVerb(segs[1])
		switch {
		case !hasVerb:
			v = taskVerbs
		case verb == "cancel":
			v = cancelVerbs
		case verb == "subscribe":
			v = subscribeVerbs
		default:
			return t, &routeError{status: http.StatusNotFound}
		}
		t.taskID = unescape(id)
	case len(segs) == 3 && segs[0] == "tasks" && segs[2] == "pushNotificationConfigs":
		v, t.taskID = pushesVerbs, unescape(segs[1])
	case len(segs) == 4 && segs[0] == "tasks" && segs[2] == "pushNotificationConfigs":
		v, t.taskID, t.configID = pushVerbs, unescape(segs[1]), unescape(segs[3])
	default:
		return t, &routeError{status: http.StatusNotFound}
	}
	o, ok := v.op(method)
	if !ok {
		return t, &routeError{status: http.StatusMethodNotAllowed, allow: v.allow()}
	}
	t.op = o
	return t, nil
}

// cutVerb splits a custom verb (":cancel") off a path segment: the
// segment's last colon starts it.
func cutVerb(seg string) (id, verb string, ok bool) {
	i := strings.LastIndexByte(seg, ':')
	if i < 0 {
		return seg, "", false
	}
	return seg[:i], seg[i+1:], true
}

// unescape is a path segment's value; "" when it is not a valid escape.
func unescape(seg string) string {
	s, err := url.PathUnescape(seg)
	if err != nil {
		return ""
	}
	return s
}
