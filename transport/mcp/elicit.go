package mcp

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// Elicitation, as revision 2026-07-28 asks of a stateless server: multi
// round-trip requests (MRTR). A client that declares the elicitation
// capability (form mode) in a tools/call's per-request capabilities, and
// whose call's function asks a question (its task waits in
// input-required), gets an InputRequiredResult instead of today's isError:
// one elicitation/create, whose message is the function's question and
// whose requestedSchema is the tool's input schema made a flat form (see
// formSchema), under the question's key, and a requestState naming the
// task. The client retries the call (same tool, same arguments) with the
// state and its answer under the key: an accepted answer's content, over
// the call's arguments, is the function's new input, sent to the waiting
// task through the core as an A2A answer is (durable: the retry may land
// on another replica, or after a restart); the call then goes on to its
// result, or to the next question. A declined or cancelled question
// cancels the task, as tasks/update does.
//
// The requestState is the task's id, versioned and encoded; it carries no
// authority: the task is read through the core for the calling caller, so
// another caller's retry with it gets errUnknownTask, the same bytes as a
// task that does not exist, and a tampered state can only name another
// task of the same caller, which must be a call of the same tool waiting
// on the question answered. Nothing else is kept between the two requests.

// The elicitation capability of a request's per-request capabilities.
const (
	capElicitation = "elicitation"
	capForm        = "form"
)

// stateVersion starts every requestState a2ad gives.
const stateVersion = "a2ad.1."

// declaresElicitation reports whether meta, a request's _meta, declares
// form-mode elicitation: elicitation as an object, empty (form alone, for
// backwards compatibility) or naming form.
func declaresElicitation(meta map[string]any) bool {
	caps, _ := meta[clientCapabilitiesKey].(map[string]any)
	el, ok := caps[capElicitation].(map[string]any)
	if !ok {
		return false
	}
	if len(el) == 0 {
		return true
	}
	_, ok = el[capForm].(map[string]any)
	return ok
}

// requestState is the state of a call waiting on task id.
func requestState(id string) string {
	return stateVersion + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// stateTask is the task a requestState names; false for a state a2ad did
// not give.
func stateTask(state string) (string, bool) {
	enc, ok := strings.CutPrefix(state, stateVersion)
	if !ok || len(enc) > base64.RawURLEncoding.EncodedLen(a2a.MaxIDBytes) {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(b) == 0 || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// errBadState answers a requestState that a2ad did not give.
var errBadState = invalidParams("requestState", "is not one this server gave")

// inputRequiredResult is a call's answer when its function asks a
// question: MRTR's InputRequiredResult.
type inputRequiredResult struct {
	sdk.ResultBase
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]inputRequest `json:"inputRequests,omitempty"`
	RequestState  string                  `json:"requestState"`
}

// askInput is the InputRequiredResult of a call of f whose task t waits
// on a question; input is the function's input the question came from,
// whose values the form offers as defaults.
func askInput(f *functions.Function, t *a2a.Task, input json.RawMessage) *inputRequiredResult {
	msg := statusText(t.Status.Message)
	if msg == "" {
		msg = "The function needs more input."
	}
	schema, _ := tool(f).InputSchema.(json.RawMessage)
	r := &inputRequiredResult{
		ResultType: "input_required",
		InputRequests: map[string]inputRequest{inputKey(t): {Method: "elicitation/create",
			Params: elicitRequest{Mode: "form", Message: msg, RequestedSchema: formSchema(schema, input)}}},
		RequestState: requestState(t.ID),
	}
	r.Meta = sdk.Meta{TaskIDKey: t.ID, TaskStateKey: string(t.Status.State)}
	return r
}

// stillWorking answers a retry whose task is working (an answer to its
// question was taken already): MRTR's requestState alone, which the
// client retries as it is, to get the outcome.
func stillWorking(t *a2a.Task) *inputRequiredResult {
	r := &inputRequiredResult{ResultType: "input_required", RequestState: requestState(t.ID)}
	r.Meta = sdk.Meta{TaskIDKey: t.ID, TaskStateKey: string(t.Status.State)}
	return r
}

// resume reads a retried call of f with arguments args: the requestState
// names the task, and the answer under the key of the question it waits
// on becomes the message to send it (sp). When the retry answers without
// a message (the question again, a declined question, the task still
// working), res is the answer; e refuses the retry.
func (rq *request) resume(f *functions.Function, args json.RawMessage, p *sdk.CallToolParamsRaw) (sp *a2a.SendParams, res sdk.Result, e *jsonrpc.Error) {
	s, cl := rq.s, rq.cl
	id, ok := stateTask(p.RequestState)
	if !ok {
		return nil, nil, rq.fail(errBadState)
	}
	t, ae := s.cfg.Core.Get(rq.ctx, cl, a2a.TaskQuery{ID: id}, false)
	if ae != nil {
		return nil, nil, taskError(ae)
	}
	switch {
	case firstSkill(t) != f.ID:
		return nil, nil, rq.fail(invalidParams("requestState", "continues a call of another tool"))
	case t.Status.State.Terminal():
		return nil, nil, rq.fail(invalidParams("requestState", "the call it continues has ended ("+string(t.Status.State)+
			"): its task "+t.ID+" holds the outcome"))
	case t.Status.State != a2a.StateInputRequired:
		return nil, stillWorking(t), nil
	}
	key := inputKey(t)
	raw, ok := p.InputResponses[key]
	if !ok {
		// Not answered (or an older question answered): ask again.
		return nil, askInput(f, t, args), nil
	}
	r, ok := raw.(*sdk.ElicitResult)
	if !ok {
		return nil, nil, rq.fail(invalidParams("inputResponses."+key, "must be an elicitation result"))
	}
	switch r.Action {
	case "accept":
	case "decline", "cancel":
		res, e := rq.declined(id, r.Action)
		return nil, res, e
	default:
		return nil, nil, rq.fail(invalidParams("inputResponses."+key+".action", "must be accept, decline or cancel"))
	}
	input, err := mergeInput(args, r.Content)
	if err != nil {
		return nil, nil, rq.fail(invalidParams("inputResponses."+key+".content", "must be an object"))
	}
	// The answer's messageId is the question's, as tasks/update's: the
	// same answer sent again is the same message, not a second answer.
	msg := a2a.Message{MessageID: keyPrefix + key, TaskID: id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(input)}}
	return &a2a.SendParams{Message: msg}, nil, nil
}

// declined cancels task id, whose question the client declined or
// cancelled (action), as an A2A cancel does; the call's answer says so.
// A task that ended meanwhile is the core's error (not cancelable).
func (rq *request) declined(id, action string) (sdk.Result, *jsonrpc.Error) {
	t, e := rq.s.cfg.Core.Cancel(rq.ctx, rq.cl, id, true)
	if e != nil {
		return nil, taskError(e)
	}
	verb := map[string]string{"decline": "declined", "cancel": "cancelled"}[action]
	res := result(id, t.Status.State, []a2a.Part{a2a.TextPart("The question was " + verb + ": the call is canceled.")})
	res.IsError = true
	return res, nil
}

// mergeInput is the function's new input: the call's arguments with the
// accepted content's values over them, key by key.
func mergeInput(args json.RawMessage, content map[string]any) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, err
	}
	for k, v := range content {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		m[k] = b
	}
	return json.Marshal(m)
}
