package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/a2ad/a2ad/internal/jsonw"
)

// The 1.0 decoders read the params of the 1.0 JSON-RPC methods (ProtoJSON
// of lf.a2a.v1 requests) into the same core values the 0.3 decoders
// return, and report every problem as -32602 with the JSON pointer of its
// field, as the 0.3 ones do. Their ProtoJSON rules:
//
//   - Only the camelCase member names are read; unknown members (the
//     snake_case proto names among them) are ignored, as 1.0 says they
//     SHOULD be.
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

// DecodeSendParamsV1 reads and checks the params of SendMessage and
// SendStreamingMessage (SendMessageRequest) into the SendParams the 0.3
// decoder returns:
//
//   - configuration.returnImmediately true sets Blocking to false, false
//     sets it to true, absent leaves it nil (blocking);
//   - configuration.taskPushNotificationConfig becomes PushConfig; its
//     taskId, if set, must be the message's taskId;
//   - configuration.historyLength and acceptedOutputModes are as in 0.3.
func DecodeSendParamsV1(raw json.RawMessage) (SendParams, *Error) {
	var c checker
	var p SendParams
	params := c.root(raw)
	if params == nil {
		return p, c.err()
	}
	c.tenant("/tenant", params)
	if m := c.object("/message", params.Get("message"), true); m != nil {
		p.Message = c.messageV1("/message", m)
	}
	if conf := c.object("/configuration", params.Get("configuration"), false); conf != nil {
		p.AcceptedOutputModes = c.strings("/configuration/acceptedOutputModes", conf.Get("acceptedOutputModes"))
		const pushPath = "/configuration/taskPushNotificationConfig"
		if pc := c.object(pushPath, conf.Get("taskPushNotificationConfig"), false); pc != nil {
			cfg, taskID := c.pushConfigV1(pushPath, pc, false)
			if taskID != "" && taskID != p.Message.TaskID {
				c.add(pushPath+"/taskId", "must be empty or the message's taskId")
			}
			p.PushConfig = &cfg
		}
		p.HistoryLength = c.int32V1("/configuration/historyLength", conf.Get("historyLength"))
		if ri := c.boolean("/configuration/returnImmediately", conf.Get("returnImmediately")); ri != nil {
			blocking := !*ri
			p.Blocking = &blocking
		}
	}
	p.Metadata = c.anyMap("/metadata", params.Get("metadata"))
	return p, c.err()
}

// DecodeTaskQueryV1 reads and checks GetTask params (GetTaskRequest:
// id, historyLength).
func DecodeTaskQueryV1(raw json.RawMessage) (TaskQuery, *Error) {
	var c checker
	var q TaskQuery
	params := c.root(raw)
	if params == nil {
		return q, c.err()
	}
	c.tenant("/tenant", params)
	q.ID = c.taskID(params)
	q.HistoryLength = c.int32V1("/historyLength", params.Get("historyLength"))
	return q, c.err()
}

// DecodeTaskIDParamsV1 reads and checks CancelTask params
// (CancelTaskRequest: id, metadata) and SubscribeToTask params
// (SubscribeToTaskRequest: id). SubscribeToTaskRequest has no metadata;
// a2ad reads it there too, as in 0.3's tasks/resubscribe, so a client can
// resume a stream by metadata.
func DecodeTaskIDParamsV1(raw json.RawMessage) (TaskIDParams, *Error) {
	var c checker
	var p TaskIDParams
	params := c.root(raw)
	if params == nil {
		return p, c.err()
	}
	c.tenant("/tenant", params)
	p.ID = c.taskID(params)
	p.Metadata = c.anyMap("/metadata", params.Get("metadata"))
	return p, c.err()
}

// DecodePushCreateV1 reads and checks CreateTaskPushNotificationConfig
// params, the flattened TaskPushNotificationConfig {taskId, id, url,
// token, authentication{scheme, credentials}}. The single 1.0 scheme
// becomes the one element of PushAuth.Schemes.
func DecodePushCreateV1(raw json.RawMessage) (PushConfigParams, *Error) {
	var c checker
	var p PushConfigParams
	params := c.root(raw)
	if params == nil {
		return p, c.err()
	}
	p.Config, p.TaskID = c.pushConfigV1("", params, true)
	return p, c.err()
}

// DecodePushRefV1 reads and checks the params of
// GetTaskPushNotificationConfig and DeleteTaskPushNotificationConfig:
// {taskId, id}, both required. The config id is returned as ConfigID.
func DecodePushRefV1(raw json.RawMessage) (PushConfigParams, *Error) {
	var c checker
	var p PushConfigParams
	params := c.root(raw)
	if params == nil {
		return p, c.err()
	}
	c.tenant("/tenant", params)
	p.TaskID = c.nonEmpty("/taskId", params.Get("taskId"), true)
	p.ConfigID = c.nonEmpty("/id", params.Get("id"), true)
	return p, c.err()
}

// PushListParamsV1 are the params of ListTaskPushNotificationConfigs.
type PushListParamsV1 struct {
	TaskID string
	// PageSize is the requested page size; 0 means unset.
	PageSize int
	// PageToken is "" for the first page.
	PageToken string
}

// DecodePushListV1 reads and checks ListTaskPushNotificationConfigs
// params: {taskId, pageSize, pageToken}.
func DecodePushListV1(raw json.RawMessage) (PushListParamsV1, *Error) {
	var c checker
	var p PushListParamsV1
	params := c.root(raw)
	if params == nil {
		return p, c.err()
	}
	c.tenant("/tenant", params)
	p.TaskID = c.nonEmpty("/taskId", params.Get("taskId"), true)
	if n := c.int32V1("/pageSize", params.Get("pageSize")); n != nil {
		p.PageSize = *n
	}
	p.PageToken, _ = c.str("/pageToken", params.Get("pageToken"), false)
	return p, c.err()
}

// DecodeNoParamsV1 checks the params of a method that takes none but
// tenant (GetExtendedAgentCard): absent, null or an object. Members other
// than tenant are ignored.
func DecodeNoParamsV1(raw json.RawMessage) *Error {
	var c checker
	if len(raw) > 0 && !json.Valid(raw) {
		c.add("/", "must be an object")
		return c.err()
	}
	if params := c.object("/", raw, false); params != nil {
		c.tenant("/tenant", params)
	}
	return c.err()
}

func (c *checker) tenant(path string, params jsonw.Members) { c.str(path, params.Get("tenant"), false) }

// nonEmpty reads a string that, when present, must not be empty.
func (c *checker) nonEmpty(path string, raw json.RawMessage, required bool) string {
	s, ok := c.str(path, raw, required)
	if ok && s == "" {
		c.add(path, "must not be empty")
	}
	return s
}

// int32V1 reads an optional, non-negative ProtoJSON int32: a JSON number,
// or a string holding one, with no fraction.
func (c *checker) int32V1(path string, raw json.RawMessage) *int {
	if len(raw) == 0 || jsonw.TypeOf(raw) == jsonw.Null {
		return nil
	}
	var s string
	switch jsonw.TypeOf(raw) {
	case jsonw.Number:
		s = string(bytes.TrimSpace(raw))
	case jsonw.String:
		s = jsonw.Unquote(bytes.TrimSpace(raw))
		if s == "" || s != strings.TrimSpace(s) || !json.Valid([]byte(s)) || jsonw.TypeOf(json.RawMessage(s)) != jsonw.Number {
			c.add(path, "must be an integer")
			return nil
		}
	default:
		c.add(path, "must be an integer")
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && !isRangeErr(err), f != math.Trunc(f):
		c.add(path, "must be an integer")
		return nil
	case f < 0:
		c.add(path, "must not be negative")
		return nil
	case f > math.MaxInt32:
		c.add(path, "must be at most 2147483647")
		return nil
	}
	n := int(f)
	return &n
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// roleV1 reads a required ROLE_* enum, by name or number.
func (c *checker) roleV1(path string, raw json.RawMessage) Role {
	const want = `must be "ROLE_USER" or "ROLE_AGENT"`
	if len(raw) == 0 || jsonw.TypeOf(raw) == jsonw.Null {
		c.add(path, "is required")
		return ""
	}
	switch jsonw.TypeOf(raw) {
	case jsonw.String:
		switch jsonw.Unquote(bytes.TrimSpace(raw)) {
		case "ROLE_USER":
			return RoleUser
		case "ROLE_AGENT":
			return RoleAgent
		}
		c.add(path, want)
	case jsonw.Number:
		switch string(bytes.TrimSpace(raw)) {
		case "1":
			return RoleUser
		case "2":
			return RoleAgent
		}
		c.add(path, want)
	default:
		c.add(path, want+", not "+jsonw.Article(jsonw.TypeOf(raw)))
	}
	return ""
}

func (c *checker) messageV1(path string, m jsonw.Members) Message {
	var msg Message
	msg.MessageID = c.nonEmpty(path+"/messageId", m.Get("messageId"), true)
	msg.ContextID, _ = c.str(path+"/contextId", m.Get("contextId"), false)
	msg.TaskID, _ = c.str(path+"/taskId", m.Get("taskId"), false)
	msg.Role = c.roleV1(path+"/role", m.Get("role"))

	parts := m.Get("parts")
	switch {
	case len(parts) == 0 || jsonw.TypeOf(parts) == jsonw.Null:
		c.add(path+"/parts", "is required")
	case jsonw.TypeOf(parts) != jsonw.Array:
		c.add(path+"/parts", "must be an array, not "+jsonw.Article(jsonw.TypeOf(parts)))
	default:
		list := jsonw.ArrayElements(parts)
		if len(list) == 0 {
			c.add(path+"/parts", "must not be empty")
		}
		msg.Parts = make([]Part, 0, len(list))
		for i, pr := range list {
			pp := path + "/parts/" + strconv.Itoa(i)
			if pm := c.object(pp, pr, true); pm != nil {
				msg.Parts = append(msg.Parts, c.partV1(pp, pm))
			}
		}
	}
	msg.Metadata = c.anyMap(path+"/metadata", m.Get("metadata"))
	msg.Extensions = c.strings(path+"/extensions", m.Get("extensions"))
	msg.ReferenceTaskIDs = c.strings(path+"/referenceTaskIds", m.Get("referenceTaskIds"))
	return msg
}

// partV1 reads a 1.0 Part: exactly one of text, raw, url and data.
func (c *checker) partV1(path string, m jsonw.Members) Part {
	var p Part
	text, rawB, url, data := m.Get("text"), m.Get("raw"), m.Get("url"), m.Get("data")
	n := 0
	for _, v := range [...]json.RawMessage{text, rawB, url} {
		if len(v) > 0 && jsonw.TypeOf(v) != jsonw.Null {
			n++
		}
	}
	if len(data) > 0 { // a null data is a google.protobuf.Value holding null
		n++
	}
	switch {
	case n == 0:
		c.add(path, `must have one of "text", "raw", "url" or "data"`)
	case n > 1:
		c.add(path, `must have only one of "text", "raw", "url" and "data"`)
	case len(data) > 0:
		p.Kind = PartData
		if t := jsonw.TypeOf(data); t != jsonw.Object {
			what := jsonw.Article(t)
			if t == jsonw.Null {
				what = "null"
			}
			c.add(path+"/data", "must be an object, not "+what)
		} else {
			p.Data = data
		}
	case len(text) > 0 && jsonw.TypeOf(text) != jsonw.Null:
		p.Kind = PartText
		p.Text, _ = c.str(path+"/text", text, true)
	case len(url) > 0 && jsonw.TypeOf(url) != jsonw.Null:
		p.Kind = PartFile
		p.File = &FileContent{URI: c.nonEmpty(path+"/url", url, true)}
	default:
		p.Kind = PartFile
		b := c.nonEmpty(path+"/raw", rawB, true)
		if b != "" {
			norm, ok := stdBase64(b)
			if !ok {
				c.add(path+"/raw", "must be base64")
			}
			b = norm
		}
		p.File = &FileContent{Bytes: b}
	}
	p.Metadata = c.anyMap(path+"/metadata", m.Get("metadata"))
	filename, _ := c.str(path+"/filename", m.Get("filename"), false)
	mediaType, _ := c.str(path+"/mediaType", m.Get("mediaType"), false)
	if p.File != nil {
		p.File.Name, p.File.MimeType = filename, mediaType
	}
	return p
}

// stdBase64 returns s, base64 in any of the forms ProtoJSON reads, in
// standard padded form.
func stdBase64(s string) (string, bool) {
	for _, enc := range [...]*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if enc == base64.StdEncoding && len(s) == base64.StdEncoding.EncodedLen(len(b)) {
				return s, true // already canonical: keep it, no copy
			}
			return base64.StdEncoding.EncodeToString(b), true
		}
	}
	return "", false
}

// pushConfigV1 reads a flattened 1.0 TaskPushNotificationConfig and
// returns the config and its taskId; path is the object's pointer ("" for
// the params themselves).
func (c *checker) pushConfigV1(path string, m jsonw.Members, needTask bool) (PushConfig, string) {
	var pc PushConfig
	c.tenant(path+"/tenant", m)
	var taskID string
	if needTask {
		taskID = c.nonEmpty(path+"/taskId", m.Get("taskId"), true)
	} else {
		taskID, _ = c.str(path+"/taskId", m.Get("taskId"), false)
	}
	pc.ID, _ = c.str(path+"/id", m.Get("id"), false)
	pc.URL = c.nonEmpty(path+"/url", m.Get("url"), true)
	c.maxLen(path+"/url", pc.URL, MaxPushURLBytes)
	pc.Token, _ = c.str(path+"/token", m.Get("token"), false)
	c.maxLen(path+"/token", pc.Token, MaxPushTokenBytes)
	if a := c.object(path+"/authentication", m.Get("authentication"), false); a != nil {
		var auth PushAuth
		if s := c.nonEmpty(path+"/authentication/scheme", a.Get("scheme"), true); s != "" {
			auth.Schemes = []string{s}
		}
		auth.Credentials, _ = c.str(path+"/authentication/credentials", a.Get("credentials"), false)
		c.maxLen(path+"/authentication/credentials", auth.Credentials, MaxPushCredentialsBytes)
		pc.Authentication = &auth
	}
	return pc, taskID
}
