package jsonrpc

import (
	"encoding/json"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// codec is how one protocol version spells the methods both versions
// have: how their params are read, how their results are shaped, and the
// few rules in which the versions differ. Each such method is served by
// one handler that takes the codec (below, and in push.go, list.go and
// stream.go); codec03 and codecV1 are the two spellings.
type codec struct {
	// Params readers.
	decodeSend   func(json.RawMessage) (a2a.SendParams, *a2a.Error)
	decodeQuery  func(json.RawMessage) (a2a.TaskQuery, *a2a.Error)
	decodeTaskID func(json.RawMessage) (a2a.TaskIDParams, *a2a.Error)
	decodeList   func(json.RawMessage) (a2a.ListTasksParams, *a2a.Error)
	// decodePush reads the params of the push config methods, by verb.
	decodePush [pushVerbs]func(json.RawMessage) (a2a.PushConfigParams, *a2a.Error)

	// Result shapes.
	sent        func(*a2a.Task) result    // a send's task
	replied     func(*a2a.Message) result // a send's reply, a Message
	task        func(*a2a.Task) result    // the task that get and cancel answer with
	page        func(tasks.ListPage) result
	pushConfig  func(*a2a.TaskPushConfig) (result, error)
	pushConfigs func([]a2a.TaskPushConfig) (result, error)
	pushDeleted result

	// version is what a push config set through this codec is
	// delivered in.
	version a2a.Version
	// pageTokenPath is the page token's field in the list params, which
	// the error about a bad token names.
	pageTokenPath string
	// cancelIdempotent: canceling a task canceled already answers the
	// task as it stands (1.0); another terminal state is still an error.
	cancelIdempotent bool
	// subscribeLiveOnly: a finished task has nothing to subscribe to,
	// but a client resuming from an event id still gets what it missed
	// (1.0; 0.3's tasks/resubscribe leaves it to the stream).
	subscribeLiveOnly bool
	// getNotesState: the audit record of a get says the state of the
	// task it read (0.3's tasks/get does; 1.0's GetTask does not).
	getNotesState bool
}

// pushVerb is one of the push config methods; it indexes
// codec.decodePush.
type pushVerb int

// The push config methods.
const (
	pushSet pushVerb = iota
	pushGet
	pushList
	pushDelete
	pushVerbs
)

// send serves message/send and SendMessage.
func (c *codec) send(s *Server, cl *call) (result, *a2a.Error) {
	p, perr := c.sendParams(cl)
	if perr != nil {
		return nil, perr
	}
	task, reply, e := s.core.Send(cl.ctx, cl.cl, p)
	if e != nil {
		return nil, e
	}
	if reply != nil {
		return c.replied(reply), nil
	}
	return c.sent(task), nil
}

// sendParams reads the params of a send, streamed or not.
func (c *codec) sendParams(cl *call) (a2a.SendParams, *a2a.Error) {
	return c.decodeSend(cl.req.Params)
}

// get serves tasks/get and GetTask.
func (c *codec) get(s *Server, cl *call) (result, *a2a.Error) {
	q, perr := c.decodeQuery(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	task, e := s.core.Get(cl.ctx, cl.cl, q, c.getNotesState)
	if e != nil {
		return nil, e
	}
	return c.task(task), nil
}

// cancel serves tasks/cancel and CancelTask.
func (c *codec) cancel(s *Server, cl *call) (result, *a2a.Error) {
	p, perr := c.decodeTaskID(cl.req.Params)
	if perr != nil {
		return nil, perr
	}
	task, e := s.core.Cancel(cl.ctx, cl.cl, p.ID, c.cancelIdempotent)
	if e != nil {
		return nil, e
	}
	return c.task(task), nil
}
