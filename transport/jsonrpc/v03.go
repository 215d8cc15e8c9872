package jsonrpc

import (
	"encoding/json"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	"github.com/a2ad/a2ad/tasks"
)

// codec03 spells the methods in A2A 0.3: tasks come back in the 0.3
// shape, push configs by encoding/json.
var codec03 = &codec{
	decodeSend:   v03.DecodeSendParams,
	decodeQuery:  v03.DecodeTaskQuery,
	decodeTaskID: v03.DecodeTaskIDParams,
	decodeList:   v03.DecodeListTasks,
	decodePush: [pushVerbs]func(json.RawMessage) (a2a.PushConfigParams, *a2a.Error){
		pushSet:    v03.DecodePushSet,
		pushGet:    func(raw json.RawMessage) (a2a.PushConfigParams, *a2a.Error) { return v03.DecodePushRef(raw, false) },
		pushList:   func(raw json.RawMessage) (a2a.PushConfigParams, *a2a.Error) { return v03.DecodePushRef(raw, false) },
		pushDelete: func(raw json.RawMessage) (a2a.PushConfigParams, *a2a.Error) { return v03.DecodePushRef(raw, true) },
	},

	sent:    func(t *a2a.Task) result { return task03{t} },
	replied: func(m *a2a.Message) result { return message03{m} },
	task:    func(t *a2a.Task) result { return task03{t} },
	page: func(p tasks.ListPage) result {
		res := list03(listResult(p))
		return &res
	},
	pushConfig: func(cfg *a2a.TaskPushConfig) (result, error) { return json03(wire03(cfg)) },
	pushConfigs: func(list []a2a.TaskPushConfig) (result, error) {
		out := make([]*a2a.TaskPushConfig, len(list))
		for i := range list {
			out[i] = wire03(&list[i])
		}
		return json03(out)
	},
	pushDeleted: rawJSON("null"), // delete's result is JSON null

	version:       a2a.V03,
	pageTokenPath: "/page_token",
	getNotesState: true,
}

// json03 is v as a result, encoded by encoding/json.
func json03(v any) (result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return rawJSON(b), nil
}

// wire03 is cfg as 0.3 shows it: without the version it was set with,
// which is a2ad's own business.
func wire03(cfg *a2a.TaskPushConfig) *a2a.TaskPushConfig {
	c := *cfg
	c.PushNotificationConfig.Wire = a2a.V03
	return &c
}

// card03 serves agent/getAuthenticatedExtendedCard; its params are not
// looked at.
func (s *Server) card03(cl *call) (result, *a2a.Error) {
	card, e := s.core.ExtendedCard(cl.cl, a2a.V03)
	if e != nil {
		return nil, e
	}
	return rawJSON(card), nil
}
