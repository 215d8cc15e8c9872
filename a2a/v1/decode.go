package v1

import (
	"encoding/json"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wire"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// The decoders read the params of the 1.0 JSON-RPC methods (ProtoJSON of
// lf.a2a.v1 requests) into the same core values the 0.3 decoders return,
// and report every problem as -32602 with the JSON pointer of its field,
// as the 0.3 ones do. Their ProtoJSON rules:
//
//   - A member is read by its JSON name (camelCase: taskId) or by its
//     proto field name (snake_case: task_id), as ProtoJSON parsers accept
//     both; one given under both names is a problem. Problems are located
//     with the JSON names, whichever the request used. Unknown members
//     are ignored, as 1.0 says they SHOULD be.
//   - null is the same as an absent member, except for a part's "data"
//     (a google.protobuf.Value, where null is a value): there it is a
//     data part holding null, which is refused like any non-object.
//   - Enums are read by name, or by number as ProtoJSON allows; the
//     *_UNSPECIFIED values are refused.
//   - int32 members are a JSON number or a string holding one, and must be
//     whole.
//   - "tenant" is read (it must be a string) and ignored: a2ad serves a
//     single tenant.
//
// What a2ad refuses beyond the proto, so that whatever it accepts reads
// back the same through both codecs and the task store:
//
//   - A part's "data" must be a JSON object (a2ad's data parts, and the 0.3
//     DataPart, hold objects): any other JSON value is refused, not
//     wrapped.
//   - "raw" and "url" must not be empty. "raw" must be base64 (standard or
//     URL-safe, padded or not, as ProtoJSON reads bytes); it is kept in
//     standard padded form, as 0.3's FileContent.Bytes is written.
//   - "mediaType" and "filename" are kept for raw and url parts only (the
//     core Part holds them in its FileContent); on text and data parts
//     they are checked and dropped.

// decode is wire.Read for a 1.0 request: its tenant is read first.
func decode[T any](c *wire.Checker, raw json.RawMessage, read func(params jsonw.Members) T) (T, *a2a.Error) {
	return wire.Read(c, raw, func(params jsonw.Members) T {
		tenant(c, "/tenant", params)
		return read(params)
	})
}

func tenant(c *wire.Checker, path string, params jsonw.Members) {
	c.Str(path, params.Get("tenant"), false)
}

// DecodeSendParams reads and checks the params of SendMessage and
// SendStreamingMessage (SendMessageRequest) into the SendParams the 0.3
// decoder returns:
//
//   - configuration.returnImmediately true sets Blocking to false, false
//     sets it to true, absent leaves it nil (blocking);
//   - configuration.taskPushNotificationConfig becomes PushConfig; its
//     taskId, if set, must be the message's taskId;
//   - configuration.historyLength and acceptedOutputModes are as in 0.3.
func DecodeSendParams(raw json.RawMessage) (a2a.SendParams, *a2a.Error) {
	var c wire.Checker
	return decode(&c, raw, func(params jsonw.Members) (p a2a.SendParams) {
		if m := c.Object("/message", params.Get("message"), true); m != nil {
			p.Message = message(&c, "/message", m)
		}
		if conf := c.Object("/configuration", params.Get("configuration"), false); conf != nil {
			p.AcceptedOutputModes = c.Names("/configuration/acceptedOutputModes", field(&c, "/configuration", conf, "acceptedOutputModes"), a2a.MaxListNames, a2a.MaxNameBytes)
			const pushPath = "/configuration/taskPushNotificationConfig"
			if pc := c.Object(pushPath, field(&c, "/configuration", conf, "taskPushNotificationConfig"), false); pc != nil {
				cfg, taskID := pushConfig(&c, pushPath, pc, false)
				if taskID != "" && taskID != p.Message.TaskID {
					c.Add(pushPath+"/taskId", "must be empty or the message's taskId")
				}
				p.PushConfig = &cfg
			}
			p.HistoryLength = protoInt32(&c, "/configuration/historyLength", field(&c, "/configuration", conf, "historyLength"))
			if ri := c.Boolean("/configuration/returnImmediately", field(&c, "/configuration", conf, "returnImmediately")); ri != nil {
				blocking := !*ri
				p.Blocking = &blocking
			}
		}
		p.Metadata = c.AnyMap("/metadata", params.Get("metadata"))
		return p
	})
}

// DecodeTaskQuery reads and checks GetTask params (GetTaskRequest: id,
// historyLength).
func DecodeTaskQuery(raw json.RawMessage) (a2a.TaskQuery, *a2a.Error) {
	var c wire.Checker
	return decode(&c, raw, func(params jsonw.Members) a2a.TaskQuery {
		return a2a.TaskQuery{ID: c.TaskID(params), HistoryLength: protoInt32(&c, "/historyLength", field(&c, "", params, "historyLength"))}
	})
}

// DecodeTaskIDParams reads and checks CancelTask params
// (CancelTaskRequest: id, metadata) and SubscribeToTask params
// (SubscribeToTaskRequest: id). SubscribeToTaskRequest has no metadata;
// a2ad reads it there too, as in 0.3's tasks/resubscribe, so a client can
// resume a stream by metadata.
func DecodeTaskIDParams(raw json.RawMessage) (a2a.TaskIDParams, *a2a.Error) {
	var c wire.Checker
	return decode(&c, raw, func(params jsonw.Members) a2a.TaskIDParams { return c.TaskIDParams(params) })
}

// DecodePushCreate reads and checks CreateTaskPushNotificationConfig
// params, the flattened TaskPushNotificationConfig {taskId, id, url,
// token, authentication{scheme, credentials}}. The single 1.0 scheme
// becomes the one element of PushAuth.Schemes.
func DecodePushCreate(raw json.RawMessage) (a2a.PushConfigParams, *a2a.Error) {
	var c wire.Checker
	return wire.Read(&c, raw, func(params jsonw.Members) (p a2a.PushConfigParams) {
		p.Config, p.TaskID = pushConfig(&c, "", params, true)
		return p
	})
}

// DecodePushRef reads and checks the params of
// GetTaskPushNotificationConfig and DeleteTaskPushNotificationConfig:
// {taskId, id}, both required. The config id is returned as ConfigID.
func DecodePushRef(raw json.RawMessage) (a2a.PushConfigParams, *a2a.Error) {
	var c wire.Checker
	return decode(&c, raw, func(params jsonw.Members) (p a2a.PushConfigParams) {
		p.TaskID = c.NonEmptyID("/taskId", field(&c, "", params, "taskId"), true)
		p.ConfigID = c.NonEmptyID("/id", params.Get("id"), true)
		return p
	})
}

// PushListParams are the params of ListTaskPushNotificationConfigs.
type PushListParams struct {
	TaskID string
	// PageSize is the requested page size; 0 means unset.
	PageSize int
	// PageToken is "" for the first page.
	PageToken string
}

// DecodePushList reads and checks ListTaskPushNotificationConfigs params:
// {taskId, pageSize, pageToken}.
func DecodePushList(raw json.RawMessage) (PushListParams, *a2a.Error) {
	var c wire.Checker
	return decode(&c, raw, func(params jsonw.Members) (p PushListParams) {
		p.TaskID = c.NonEmptyID("/taskId", field(&c, "", params, "taskId"), true)
		if n := protoInt32(&c, "/pageSize", field(&c, "", params, "pageSize")); n != nil {
			p.PageSize = *n
		}
		p.PageToken, _ = c.Str("/pageToken", field(&c, "", params, "pageToken"), false)
		return p
	})
}

// DecodeNoParams checks the params of a method that takes none but
// tenant (GetExtendedAgentCard): absent, null or an object. Members other
// than tenant are ignored.
func DecodeNoParams(raw json.RawMessage) *a2a.Error {
	var c wire.Checker
	if len(raw) > 0 && !jsonw.Valid(raw) {
		c.Add("/", "must be an object")
		return c.Err()
	}
	if params := c.Object("/", raw, false); params != nil {
		tenant(&c, "/tenant", params)
	}
	return c.Err()
}

// DecodeListTasks reads and checks ListTasks params (ListTasksRequest,
// read by the rules of the other 1.0 decoders): tenant (ignored),
// contextId, status (a TASK_STATE_* name or its number; UNSPECIFIED, the
// proto default, keeps all), pageSize, pageToken, historyLength,
// statusTimestampAfter (RFC 3339) and includeArtifacts.
func DecodeListTasks(raw json.RawMessage) (a2a.ListTasksParams, *a2a.Error) {
	var c wire.Checker
	return wire.ReadOptional(&c, raw, func(params jsonw.Members) (p a2a.ListTasksParams) {
		tenant(&c, "/tenant", params)
		p.ContextID, _ = c.ID("/contextId", field(&c, "", params, "contextId"), false)
		p.Status = stateFilter(&c, "/status", params.Get("status"))
		if n := protoInt32(&c, "/pageSize", field(&c, "", params, "pageSize")); n != nil {
			p.PageSize = c.PageRange("/pageSize", *n)
		}
		p.PageToken, _ = c.Str("/pageToken", field(&c, "", params, "pageToken"), false)
		p.HistoryLength = protoInt32(&c, "/historyLength", field(&c, "", params, "historyLength"))
		p.StatusTimestampAfter = c.Timestamp("/statusTimestampAfter", field(&c, "", params, "statusTimestampAfter"))
		if b := c.Boolean("/includeArtifacts", field(&c, "", params, "includeArtifacts")); b != nil {
			p.IncludeArtifacts = *b
		}
		return p
	})
}
