package a2a

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// SendParams are the params of message/send (0.3 MessageSendParams).
type SendParams struct {
	Message Message
	// Blocking is configuration.blocking; nil means unset (blocking).
	Blocking *bool
	// HistoryLength is configuration.historyLength; nil means unset.
	HistoryLength       *int
	AcceptedOutputModes []string
	// PushConfig is configuration.pushNotificationConfig, or nil.
	PushConfig *PushConfig
	Metadata   map[string]any
}

// TaskQuery are the params of tasks/get.
type TaskQuery struct {
	ID            string
	HistoryLength *int
}

// The JSON types, as their first byte tells them.
const (
	jsonObject = "object"
	jsonArray  = "array"
	jsonString = "string"
	jsonNumber = "number"
	jsonBool   = "boolean"
	jsonNull   = "null"
)

func jsonType(raw json.RawMessage) string {
	switch firstByte(raw) {
	case '{':
		return jsonObject
	case '[':
		return jsonArray
	case '"':
		return jsonString
	case 't', 'f':
		return jsonBool
	case 'n':
		return jsonNull
	}
	return jsonNumber
}

// checker collects problems while params are read field by field.
type checker struct{ problems []Problem }

func (c *checker) add(path, msg string) {
	c.problems = append(c.problems, Problem{Path: path, Message: msg})
}

func (c *checker) err() *Error {
	if len(c.problems) == 0 {
		return nil
	}
	return InvalidParams(c.problems...)
}

// object reads raw, valid JSON, as an object's members. A missing or
// null raw gives nil without a problem when optional.
func (c *checker) object(path string, raw json.RawMessage, required bool) members {
	if len(raw) == 0 || jsonType(raw) == jsonNull {
		if required {
			c.add(path, "is required")
		}
		return nil
	}
	if t := jsonType(raw); t != jsonObject {
		c.add(path, "must be an object, not "+article(t))
		return nil
	}
	return objectMembers(raw)
}

// root reads params, which must be a JSON object.
func (c *checker) root(raw json.RawMessage) members {
	if len(raw) > 0 && !json.Valid(raw) {
		c.add("/", "must be an object")
		return nil
	}
	return c.object("/", raw, true)
}

func (c *checker) str(path string, raw json.RawMessage, required bool) (string, bool) {
	if len(raw) == 0 || jsonType(raw) == jsonNull {
		if required {
			c.add(path, "is required")
		}
		return "", false
	}
	if jsonType(raw) != jsonString {
		c.add(path, "must be a string, not "+article(jsonType(raw)))
		return "", false
	}
	return unquote(bytes.TrimSpace(raw)), true
}

func (c *checker) nonNegInt(path string, raw json.RawMessage) *int {
	if len(raw) == 0 || jsonType(raw) == jsonNull {
		return nil
	}
	var n int
	if jsonType(raw) != jsonNumber || json.Unmarshal(raw, &n) != nil {
		c.add(path, "must be an integer")
		return nil
	}
	if n < 0 {
		c.add(path, "must not be negative")
		return nil
	}
	return &n
}

func (c *checker) boolean(path string, raw json.RawMessage) *bool {
	if len(raw) == 0 || jsonType(raw) == jsonNull {
		return nil
	}
	if jsonType(raw) != jsonBool {
		c.add(path, "must be a boolean, not "+article(jsonType(raw)))
		return nil
	}
	b := string(raw) == "true"
	return &b
}

func (c *checker) anyMap(path string, raw json.RawMessage) map[string]any {
	if len(raw) == 0 || jsonType(raw) == jsonNull {
		return nil
	}
	if jsonType(raw) != jsonObject {
		c.add(path, "must be an object, not "+article(jsonType(raw)))
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		c.add(path, "must be an object")
		return nil
	}
	return m
}

func (c *checker) strings(path string, raw json.RawMessage) []string {
	if len(raw) == 0 || jsonType(raw) == jsonNull {
		return nil
	}
	var s []string
	if jsonType(raw) != jsonArray || json.Unmarshal(raw, &s) != nil {
		c.add(path, "must be an array of strings")
		return nil
	}
	return s
}

func article(t string) string {
	switch t {
	case jsonObject, jsonArray:
		return "an " + t
	}
	return "a " + t
}

// DecodeSendParams reads and checks message/send params. Every problem is
// reported, each with the JSON pointer of its field.
func DecodeSendParams(raw json.RawMessage) (SendParams, *Error) {
	var c checker
	var p SendParams
	params := c.root(raw)
	if params == nil {
		return p, c.err()
	}
	if m := c.object("/message", params.get("message"), true); m != nil {
		p.Message = c.message("/message", m)
	}
	if conf := c.object("/configuration", params.get("configuration"), false); conf != nil {
		p.Blocking = c.boolean("/configuration/blocking", conf.get("blocking"))
		p.HistoryLength = c.nonNegInt("/configuration/historyLength", conf.get("historyLength"))
		p.AcceptedOutputModes = c.strings("/configuration/acceptedOutputModes", conf.get("acceptedOutputModes"))
		if pc := c.object("/configuration/pushNotificationConfig", conf.get("pushNotificationConfig"), false); pc != nil {
			cfg := c.pushConfig("/configuration/pushNotificationConfig", pc)
			p.PushConfig = &cfg
		}
	}
	p.Metadata = c.anyMap("/metadata", params.get("metadata"))
	return p, c.err()
}

func (c *checker) message(path string, m members) Message {
	var msg Message
	if k, ok := c.str(path+"/kind", m.get("kind"), false); ok && k != "message" {
		c.add(path+"/kind", `must be "message"`)
	}
	if id, ok := c.str(path+"/messageId", m.get("messageId"), true); ok {
		if id == "" {
			c.add(path+"/messageId", "must not be empty")
		}
		msg.MessageID = id
	}
	if r, ok := c.str(path+"/role", m.get("role"), true); ok {
		switch Role(r) {
		case RoleUser, RoleAgent:
			msg.Role = Role(r)
		default:
			c.add(path+"/role", `must be "user" or "agent"`)
		}
	}
	msg.ContextID, _ = c.str(path+"/contextId", m.get("contextId"), false)
	msg.TaskID, _ = c.str(path+"/taskId", m.get("taskId"), false)
	msg.ReferenceTaskIDs = c.strings(path+"/referenceTaskIds", m.get("referenceTaskIds"))
	msg.Extensions = c.strings(path+"/extensions", m.get("extensions"))
	msg.Metadata = c.anyMap(path+"/metadata", m.get("metadata"))

	parts := m.get("parts")
	switch {
	case len(parts) == 0 || jsonType(parts) == jsonNull:
		c.add(path+"/parts", "is required")
	case jsonType(parts) != jsonArray:
		c.add(path+"/parts", "must be an array, not "+article(jsonType(parts)))
	default:
		list := arrayElements(parts)
		if len(list) == 0 {
			c.add(path+"/parts", "must not be empty")
		}
		msg.Parts = make([]Part, 0, len(list))
		for i, pr := range list {
			pp := path + "/parts/" + strconv.Itoa(i)
			if pm := c.object(pp, pr, true); pm != nil {
				msg.Parts = append(msg.Parts, c.part(pp, pm))
			}
		}
	}
	return msg
}

func (c *checker) part(path string, m members) Part {
	var p Part
	kind, ok := c.str(path+"/kind", m.get("kind"), true)
	if !ok {
		return p
	}
	p.Kind = PartKind(kind)
	p.Metadata = c.anyMap(path+"/metadata", m.get("metadata"))
	switch p.Kind {
	case PartText:
		p.Text, _ = c.str(path+"/text", m.get("text"), true)
	case PartData:
		if d := m.get("data"); len(d) == 0 || jsonType(d) == jsonNull {
			c.add(path+"/data", "is required")
		} else if jsonType(d) != jsonObject {
			c.add(path+"/data", "must be an object, not "+article(jsonType(d)))
		} else {
			p.Data = d
		}
	case PartFile:
		f := c.object(path+"/file", m.get("file"), true)
		if f == nil {
			break
		}
		var fc FileContent
		fc.Name, _ = c.str(path+"/file/name", f.get("name"), false)
		fc.MimeType, _ = c.str(path+"/file/mimeType", f.get("mimeType"), false)
		b, hasBytes := c.str(path+"/file/bytes", f.get("bytes"), false)
		u, hasURI := c.str(path+"/file/uri", f.get("uri"), false)
		if hasBytes && b == "" {
			c.add(path+"/file/bytes", "must not be empty")
		} else if hasBytes {
			// As 1.0's "raw": any form ProtoJSON reads, kept in standard
			// padded form, so that what a2ad stores reads back in both
			// versions.
			norm, ok := stdBase64(b)
			if !ok {
				c.add(path+"/file/bytes", "must be base64")
			}
			b = norm
		}
		if hasURI && u == "" {
			c.add(path+"/file/uri", "must not be empty")
		}
		switch {
		case hasBytes && hasURI:
			c.add(path+"/file", `must have either "bytes" or "uri", not both`)
		case !hasBytes && !hasURI:
			c.add(path+"/file", `must have "bytes" or "uri"`)
		}
		fc.Bytes, fc.URI = b, u
		p.File = &fc
	default:
		c.add(path+"/kind", `must be "text", "file" or "data"`)
	}
	return p
}

// DecodeTaskQuery reads and checks tasks/get params.
func DecodeTaskQuery(raw json.RawMessage) (TaskQuery, *Error) {
	var c checker
	var q TaskQuery
	params := c.root(raw)
	if params == nil {
		return q, c.err()
	}
	q.ID = c.taskID(params)
	q.HistoryLength = c.nonNegInt("/historyLength", params.get("historyLength"))
	return q, c.err()
}

// TaskIDParams are the params of a method that names one task
// (tasks/cancel, tasks/resubscribe).
type TaskIDParams struct {
	ID       string
	Metadata map[string]any
}

// DecodeTaskIDParams reads and checks params that name one task, with
// their metadata.
func DecodeTaskIDParams(raw json.RawMessage) (TaskIDParams, *Error) {
	var c checker
	var p TaskIDParams
	params := c.root(raw)
	if params == nil {
		return p, c.err()
	}
	p.ID = c.taskID(params)
	p.Metadata = c.anyMap("/metadata", params.get("metadata"))
	return p, c.err()
}

// The longest push config strings a2ad takes, in bytes: each is stored
// with the task and sent with every notification.
const (
	MaxPushURLBytes         = 2 << 10
	MaxPushTokenBytes       = 4 << 10
	MaxPushCredentialsBytes = 4 << 10
)

// maxLen adds a problem when s is longer than max bytes.
func (c *checker) maxLen(path, s string, max int) {
	if len(s) > max {
		c.add(path, "must be at most "+strconv.Itoa(max)+" bytes")
	}
}

func (c *checker) pushConfig(path string, m members) PushConfig {
	var pc PushConfig
	pc.ID, _ = c.str(path+"/id", m.get("id"), false)
	pc.URL, _ = c.str(path+"/url", m.get("url"), true)
	c.maxLen(path+"/url", pc.URL, MaxPushURLBytes)
	pc.Token, _ = c.str(path+"/token", m.get("token"), false)
	c.maxLen(path+"/token", pc.Token, MaxPushTokenBytes)
	if a := c.object(path+"/authentication", m.get("authentication"), false); a != nil {
		auth := PushAuth{Schemes: c.strings(path+"/authentication/schemes", a.get("schemes"))}
		if len(auth.Schemes) == 0 {
			c.add(path+"/authentication/schemes", "must list at least one scheme")
		}
		auth.Credentials, _ = c.str(path+"/authentication/credentials", a.get("credentials"), false)
		c.maxLen(path+"/authentication/credentials", auth.Credentials, MaxPushCredentialsBytes)
		pc.Authentication = &auth
	}
	return pc
}

// PushConfigParams are the params of the push config methods: the task,
// a config id (get, delete) and the config (set).
type PushConfigParams struct {
	TaskID   string
	ConfigID string
	Config   PushConfig
}

// DecodePushSet reads tasks/pushNotificationConfig/set params
// (TaskPushNotificationConfig).
func DecodePushSet(raw json.RawMessage) (PushConfigParams, *Error) {
	var c checker
	var p PushConfigParams
	params := c.root(raw)
	if params == nil {
		return p, c.err()
	}
	p.TaskID, _ = c.str("/taskId", params.get("taskId"), true)
	if pc := c.object("/pushNotificationConfig", params.get("pushNotificationConfig"), true); pc != nil {
		p.Config = c.pushConfig("/pushNotificationConfig", pc)
	}
	return p, c.err()
}

// DecodePushRef reads the params of push get, list and delete: {id,
// pushNotificationConfigId}; the config id is required when
// needConfig.
func DecodePushRef(raw json.RawMessage, needConfig bool) (PushConfigParams, *Error) {
	var c checker
	var p PushConfigParams
	params := c.root(raw)
	if params == nil {
		return p, c.err()
	}
	p.TaskID = c.taskID(params)
	p.ConfigID, _ = c.str("/pushNotificationConfigId", params.get("pushNotificationConfigId"), needConfig)
	return p, c.err()
}

// DecodeTaskID reads and checks params that name one task (tasks/cancel).
func DecodeTaskID(raw json.RawMessage) (string, *Error) {
	p, err := DecodeTaskIDParams(raw)
	return p.ID, err
}

func (c *checker) taskID(params members) string {
	id, ok := c.str("/id", params.get("id"), true)
	if ok && id == "" {
		c.add("/id", "must not be empty")
	}
	return id
}
