package jsonrpc

import (
	"encoding/json"
	"net/http"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// requestVersion reads the A2A-Version header, else the query parameter
// of that name; missing or empty means 0.3.
func requestVersion(r *http.Request) (a2a.Version, *a2a.Error) {
	return a2a.ParseVersion(transport.VersionAsked(r))
}

// appendErrorFor writes e in the shape of wire.
func appendErrorFor(dst []byte, wire a2a.Version, id []byte, e *a2a.Error) []byte {
	if wire == a2a.V10 {
		return v1.AppendError(dst, id, e)
	}
	return a2a.AppendError(dst, id, e)
}

// codecV1 spells the methods in A2A 1.0 (ProtoJSON).
var codecV1 = &codec{
	decodeSend:   v1.DecodeSendParams,
	decodeQuery:  v1.DecodeTaskQuery,
	decodeTaskID: v1.DecodeTaskIDParams,
	decodeList:   v1.DecodeListTasks,
	decodePush: [pushVerbs]func(json.RawMessage) (a2a.PushConfigParams, *a2a.Error){
		pushSet:    v1.DecodePushCreate,
		pushGet:    v1.DecodePushRef,
		pushList:   decodePushListV1,
		pushDelete: v1.DecodePushRef,
	},

	sent:    func(t *a2a.Task) result { return v1Result{&v1.StreamResponse{Task: t}} },
	replied: func(m *a2a.Message) result { return v1Result{&v1.StreamResponse{Message: m}} },
	task:    func(t *a2a.Task) result { return v1Result{v1.TaskResult{Task: t}} },
	page: func(p tasks.ListPage) result {
		return v1Result{&v1.TaskList[a2a.Task]{Tasks: p.Tasks, NextPageToken: p.NextPageToken, PageSize: p.PageSize, TotalSize: p.TotalSize}}
	},
	pushConfig: func(cfg *a2a.TaskPushConfig) (result, error) { return v1Result{v1.PushConfigResult{Config: cfg}}, nil },
	pushConfigs: func(list []a2a.TaskPushConfig) (result, error) {
		return v1Result{&v1.PushConfigList{Configs: list}}, nil
	},
	pushDeleted: v1Result{v1.Empty{}},

	version:           a2a.V10,
	pageTokenPath:     "/pageToken",
	cancelIdempotent:  true,
	subscribeLiveOnly: true,
}

// decodePushListV1 reads ListTaskPushNotificationConfigs params. Every
// config fits on one page: a2ad never hands out a token.
func decodePushListV1(raw json.RawMessage) (a2a.PushConfigParams, *a2a.Error) {
	p, perr := v1.DecodePushList(raw)
	if perr != nil {
		return a2a.PushConfigParams{}, perr
	}
	if e := transport.OnePage("/pageToken", p.PageToken); e != nil {
		return a2a.PushConfigParams{}, e
	}
	return a2a.PushConfigParams{TaskID: p.TaskID}, nil
}

// cardV1 serves GetExtendedAgentCard, which takes no params.
func (s *Server) cardV1(cl *call) (result, *a2a.Error) {
	if perr := v1.DecodeNoParams(cl.req.Params); perr != nil {
		return nil, perr
	}
	card, e := s.core.ExtendedCard(cl.cl, a2a.V10)
	if e != nil {
		return nil, e
	}
	return rawJSON(card), nil
}
