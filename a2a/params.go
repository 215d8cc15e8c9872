package a2a

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/a2ad/a2ad/internal/jsonw"
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
func (c *checker) object(path string, raw json.RawMessage, required bool) jsonw.Members {
	if len(raw) == 0 || jsonw.TypeOf(raw) == jsonw.Null {
		if required {
			c.add(path, "is required")
		}
		return nil
	}
	if t := jsonw.TypeOf(raw); t != jsonw.Object {
		c.add(path, "must be an object, not "+jsonw.Article(t))
		return nil
	}
	return jsonw.ObjectMembers(raw)
}

// root reads params, which must be a JSON object.
func (c *checker) root(raw json.RawMessage) jsonw.Members {
	if len(raw) > 0 && !json.Valid(raw) {
		c.add("/", "must be an object")
		return nil
	}
	return c.object("/", raw, true)
}

func (c *checker) str(path string, raw json.RawMessage, required bool) (string, bool) {
	if len(raw) == 0 || jsonw.TypeOf(raw) == jsonw.Null {
		if required {
			c.add(path, "is required")
		}
		return "", false
	}
	if jsonw.TypeOf(raw) != jsonw.String {
		c.add(path, "must be a string, not "+jsonw.Article(jsonw.TypeOf(raw)))
		return "", false
	}
	return jsonw.Unquote(bytes.TrimSpace(raw)), true
}

func (c *checker) nonNegInt(path string, raw json.RawMessage) *int {
	if len(raw) == 0 || jsonw.TypeOf(raw) == jsonw.Null {
		return nil
	}
	var n int
	if jsonw.TypeOf(raw) != jsonw.Number || json.Unmarshal(raw, &n) != nil {
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
	if len(raw) == 0 || jsonw.TypeOf(raw) == jsonw.Null {
		return nil
	}
	if jsonw.TypeOf(raw) != jsonw.Bool {
		c.add(path, "must be a boolean, not "+jsonw.Article(jsonw.TypeOf(raw)))
		return nil
	}
	b := string(raw) == "true"
	return &b
}

func (c *checker) anyMap(path string, raw json.RawMessage) map[string]any {
	if len(raw) == 0 || jsonw.TypeOf(raw) == jsonw.Null {
		return nil
	}
	if jsonw.TypeOf(raw) != jsonw.Object {
		c.add(path, "must be an object, not "+jsonw.Article(jsonw.TypeOf(raw)))
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
	if len(raw) == 0 || jsonw.TypeOf(raw) == jsonw.Null {
		return nil
	}
	var s []string
	if jsonw.TypeOf(raw) != jsonw.Array || json.Unmarshal(raw, &s) != nil {
		c.add(path, "must be an array of strings")
		return nil
	}
	return s
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
	if m := c.object("/message", params.Get("message"), true); m != nil {
		p.Message = c.message("/message", m)
	}
	if conf := c.object("/configuration", params.Get("configuration"), false); conf != nil {
		p.Blocking = c.boolean("/configuration/blocking", conf.Get("blocking"))
		p.HistoryLength = c.nonNegInt("/configuration/historyLength", conf.Get("historyLength"))
		p.AcceptedOutputModes = c.strings("/configuration/acceptedOutputModes", conf.Get("acceptedOutputModes"))
		if pc := c.object("/configuration/pushNotificationConfig", conf.Get("pushNotificationConfig"), false); pc != nil {
			cfg := c.pushConfig("/configuration/pushNotificationConfig", pc)
			p.PushConfig = &cfg
		}
	}
	p.Metadata = c.anyMap("/metadata", params.Get("metadata"))
	return p, c.err()
}

func (c *checker) message(path string, m jsonw.Members) Message {
	var msg Message
	if k, ok := c.str(path+"/kind", m.Get("kind"), false); ok && k != "message" {
		c.add(path+"/kind", `must be "message"`)
	}
	if id, ok := c.str(path+"/messageId", m.Get("messageId"), true); ok {
		if id == "" {
			c.add(path+"/messageId", "must not be empty")
		}
		msg.MessageID = id
	}
	if r, ok := c.str(path+"/role", m.Get("role"), true); ok {
		switch Role(r) {
		case RoleUser, RoleAgent:
			msg.Role = Role(r)
		default:
			c.add(path+"/role", `must be "user" or "agent"`)
		}
	}
	msg.ContextID, _ = c.str(path+"/contextId", m.Get("contextId"), false)
	msg.TaskID, _ = c.str(path+"/taskId", m.Get("taskId"), false)
	msg.ReferenceTaskIDs = c.strings(path+"/referenceTaskIds", m.Get("referenceTaskIds"))
	msg.Extensions = c.strings(path+"/extensions", m.Get("extensions"))
	msg.Metadata = c.anyMap(path+"/metadata", m.Get("metadata"))

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
				msg.Parts = append(msg.Parts, c.part(pp, pm))
			}
		}
	}
	return msg
}

func (c *checker) part(path string, m jsonw.Members) Part {
	var p Part
	kind, ok := c.str(path+"/kind", m.Get("kind"), true)
	if !ok {
		return p
	}
	p.Kind = PartKind(kind)
	p.Metadata = c.anyMap(path+"/metadata", m.Get("metadata"))
	switch p.Kind {
	case PartText:
		p.Text, _ = c.str(path+"/text", m.Get("text"), true)
	case PartData:
		if d := m.Get("data"); len(d) == 0 || jsonw.TypeOf(d) == jsonw.Null {
			c.add(path+"/data", "is required")
		} else if jsonw.TypeOf(d) != jsonw.Object {
			c.add(path+"/data", "must be an object, not "+jsonw.Article(jsonw.TypeOf(d)))
		} else {
			p.Data = d
		}
	case PartFile:
		f := c.object(path+"/file", m.Get("file"), true)
		if f == nil {
			break
		}
		var fc FileContent
		fc.Name, _ = c.str(path+"/file/name", f.Get("name"), false)
		fc.MimeType, _ = c.str(path+"/file/mimeType", f.Get("mimeType"), false)
		b, hasBytes := c.str(path+"/file/bytes", f.Get("bytes"), false)
		u, hasURI := c.str(path+"/file/uri", f.Get("uri"), false)
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
	q.HistoryLength = c.nonNegInt("/historyLength", params.Get("historyLength"))
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
	p.Metadata = c.anyMap("/metadata", params.Get("metadata"))
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

func (c *checker) pushConfig(path string, m jsonw.Members) PushConfig {
	var pc PushConfig
	pc.ID, _ = c.str(path+"/id", m.Get("id"), false)
	pc.URL, _ = c.str(path+"/url", m.Get("url"), true)
	c.maxLen(path+"/url", pc.URL, MaxPushURLBytes)
	pc.Token, _ = c.str(path+"/token", m.Get("token"), false)
	c.maxLen(path+"/token", pc.Token, MaxPushTokenBytes)
	if a := c.object(path+"/authentication", m.Get("authentication"), false); a != nil {
		auth := PushAuth{Schemes: c.strings(path+"/authentication/schemes", a.Get("schemes"))}
		if len(auth.Schemes) == 0 {
			c.add(path+"/authentication/schemes", "must list at least one scheme")
		}
		auth.Credentials, _ = c.str(path+"/authentication/credentials", a.Get("credentials"), false)
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
	p.TaskID, _ = c.str("/taskId", params.Get("taskId"), true)
	if pc := c.object("/pushNotificationConfig", params.Get("pushNotificationConfig"), true); pc != nil {
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
	p.ConfigID, _ = c.str("/pushNotificationConfigId", params.Get("pushNotificationConfigId"), needConfig)
	return p, c.err()
}

// DecodeTaskID reads and checks params that name one task (tasks/cancel).
func DecodeTaskID(raw json.RawMessage) (string, *Error) {
	p, err := DecodeTaskIDParams(raw)
	return p.ID, err
}

func (c *checker) taskID(params jsonw.Members) string {
	id, ok := c.str("/id", params.Get("id"), true)
	if ok && id == "" {
		c.add("/id", "must not be empty")
	}
	return id
}
