package v03

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wire"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// The decoders read and check the params of the 0.3 methods. Every
// problem is reported in one -32602 error, each with the JSON pointer of
// its field.

// DecodeSendParams reads and checks message/send and message/stream
// params (MessageSendParams).
func DecodeSendParams(raw json.RawMessage) (a2a.SendParams, *a2a.Error) {
	var c wire.Checker
	return wire.Read(&c, raw, func(params jsonw.Members) (p a2a.SendParams) {
		if m := c.Object("/message", params.Get("message"), true); m != nil {
			p.Message = message(&c, "/message", m)
		}
		if conf := c.Object("/configuration", params.Get("configuration"), false); conf != nil {
			p.Blocking = c.Boolean("/configuration/blocking", conf.Get("blocking"))
			p.HistoryLength = c.NonNegInt("/configuration/historyLength", conf.Get("historyLength"))
			p.AcceptedOutputModes = c.Names("/configuration/acceptedOutputModes", conf.Get("acceptedOutputModes"), a2a.MaxListNames, a2a.MaxNameBytes)
			const pushPath = "/configuration/pushNotificationConfig"
			if pc := c.Object(pushPath, conf.Get("pushNotificationConfig"), false); pc != nil {
				cfg := pushConfig(&c, pushPath, pc)
				p.PushConfig = &cfg
			}
		}
		p.Metadata = c.AnyMap("/metadata", params.Get("metadata"))
		return p
	})
}

func message(c *wire.Checker, path string, m jsonw.Members) a2a.Message {
	var msg a2a.Message
	if k, ok := c.Str(path+"/kind", m.Get("kind"), false); ok && k != "message" {
		c.Add(path+"/kind", `must be "message"`)
	}
	msg.MessageID = c.NonEmptyID(path+"/messageId", m.Get("messageId"), true)
	if r, ok := c.Str(path+"/role", m.Get("role"), true); ok {
		switch a2a.Role(r) {
		case a2a.RoleUser, a2a.RoleAgent:
			msg.Role = a2a.Role(r)
		default:
			c.Add(path+"/role", `must be "user" or "agent"`)
		}
	}
	msg.ContextID, _ = c.ID(path+"/contextId", m.Get("contextId"), false)
	msg.TaskID, _ = c.ID(path+"/taskId", m.Get("taskId"), false)
	msg.ReferenceTaskIDs = c.IDs(path+"/referenceTaskIds", m.Get("referenceTaskIds"))
	msg.Extensions = c.Names(path+"/extensions", m.Get("extensions"), a2a.MaxListNames, a2a.MaxNameBytes)
	msg.Metadata = c.AnyMap(path+"/metadata", m.Get("metadata"))
	msg.Parts = c.Parts(path, m, func(path string, pm jsonw.Members) a2a.Part { return part(c, path, pm) })
	return msg
}

func part(c *wire.Checker, path string, m jsonw.Members) a2a.Part {
	var p a2a.Part
	kind, ok := c.Str(path+"/kind", m.Get("kind"), true)
	if !ok {
		return p
	}
	p.Kind = a2a.PartKind(kind)
	p.Metadata = c.AnyMap(path+"/metadata", m.Get("metadata"))
	switch p.Kind {
	case a2a.PartText:
		p.Text, _ = c.Str(path+"/text", m.Get("text"), true)
	case a2a.PartData:
		if d := m.Get("data"); jsonw.Absent(d) {
			c.Add(path+"/data", "is required")
		} else if t := jsonw.TypeOf(d); t != jsonw.Object {
			c.Add(path+"/data", "must be an object, not "+jsonw.Article(t))
		} else {
			// A copy: d is the request's buffer, which goes back to a pool
			// when the handler returns, while the message lives on in the
			// task (a waiting retry encodes it later).
			p.Data = append(json.RawMessage(nil), d...)
		}
	case a2a.PartFile:
		if f := c.Object(path+"/file", m.Get("file"), true); f != nil {
			p.File = file(c, path+"/file", f)
		}
	default:
		c.Add(path+"/kind", `must be "text", "file" or "data"`)
	}
	return p
}

// file reads a FileContent: exactly one of bytes (base64, kept in
// standard padded form as 1.0's "raw" is, so that what a2ad stores reads
// back in both versions) and uri.
func file(c *wire.Checker, path string, f jsonw.Members) *a2a.FileContent {
	var fc a2a.FileContent
	fc.Name, _ = c.Str(path+"/name", f.Get("name"), false)
	fc.MimeType, _ = c.Str(path+"/mimeType", f.Get("mimeType"), false)
	b, hasBytes := c.Str(path+"/bytes", f.Get("bytes"), false)
	u, hasURI := c.Str(path+"/uri", f.Get("uri"), false)
	if hasBytes && b == "" {
		c.Add(path+"/bytes", "must not be empty")
	} else if hasBytes {
		b = c.Base64(path+"/bytes", b)
	}
	if hasURI && u == "" {
		c.Add(path+"/uri", "must not be empty")
	}
	switch {
	case hasBytes && hasURI:
		c.Add(path, `must have either "bytes" or "uri", not both`)
	case !hasBytes && !hasURI:
		c.Add(path, `must have "bytes" or "uri"`)
	}
	fc.Bytes, fc.URI = b, u
	return &fc
}

// DecodeTaskQuery reads and checks tasks/get params.
func DecodeTaskQuery(raw json.RawMessage) (a2a.TaskQuery, *a2a.Error) {
	var c wire.Checker
	return wire.Read(&c, raw, func(params jsonw.Members) a2a.TaskQuery {
		return a2a.TaskQuery{ID: c.TaskID(params), HistoryLength: c.NonNegInt("/historyLength", params.Get("historyLength"))}
	})
}

// DecodeTaskIDParams reads and checks params that name one task, with
// their metadata (tasks/cancel, tasks/resubscribe).
func DecodeTaskIDParams(raw json.RawMessage) (a2a.TaskIDParams, *a2a.Error) {
	var c wire.Checker
	return wire.Read(&c, raw, func(params jsonw.Members) a2a.TaskIDParams { return c.TaskIDParams(params) })
}

// DecodeTaskID reads and checks params that name one task (tasks/cancel).
func DecodeTaskID(raw json.RawMessage) (string, *a2a.Error) {
	p, err := DecodeTaskIDParams(raw)
	return p.ID, err
}

// pushConfig reads a PushNotificationConfig.
func pushConfig(c *wire.Checker, path string, m jsonw.Members) a2a.PushConfig {
	return c.PushConfig(path, m, false, func(path string, auth jsonw.Members) []string { return schemes(c, path, auth) })
}

// schemes reads the schemes of a push config's authentication.
func schemes(c *wire.Checker, path string, auth jsonw.Members) []string {
	s := c.Names(path+"/schemes", auth.Get("schemes"), a2a.MaxPushSchemes, a2a.MaxPushSchemeBytes)
	if len(s) == 0 {
		c.Add(path+"/schemes", "must list at least one scheme")
	}
	return s
}

// DecodePushSet reads tasks/pushNotificationConfig/set params
// (TaskPushNotificationConfig).
func DecodePushSet(raw json.RawMessage) (a2a.PushConfigParams, *a2a.Error) {
	var c wire.Checker
	return wire.Read(&c, raw, func(params jsonw.Members) (p a2a.PushConfigParams) {
		p.TaskID, _ = c.ID("/taskId", params.Get("taskId"), true)
		if pc := c.Object("/pushNotificationConfig", params.Get("pushNotificationConfig"), true); pc != nil {
			p.Config = pushConfig(&c, "/pushNotificationConfig", pc)
		}
		return p
	})
}

// DecodePushRef reads the params of push get, list and delete: {id,
// pushNotificationConfigId}; the config id is required when needConfig.
func DecodePushRef(raw json.RawMessage, needConfig bool) (a2a.PushConfigParams, *a2a.Error) {
	var c wire.Checker
	return wire.Read(&c, raw, func(params jsonw.Members) (p a2a.PushConfigParams) {
		p.TaskID = c.TaskID(params)
		p.ConfigID, _ = c.ID("/pushNotificationConfigId", params.Get("pushNotificationConfigId"), needConfig)
		return p
	})
}

// DecodeListTasks reads and checks tasks/list params in the shape of the
// a2a-go v0.3 client (a2a.ListTasksRequest): context_id, status (a 0.3
// state), page_size, page_token, history_length, last_updated_after (RFC
// 3339) and include_artifacts, all optional; absent params mean all
// defaults.
//
// Unknown members are refused, each named, unlike in the methods of the
// 0.3 spec, which ignore them as the spec's forward compatibility asks:
// tasks/list is in no 0.3 spec to grow, its one client sends only these
// members, and a misspelt filter (a camelCase pageSize, say) that was
// ignored would list every task as though it had applied.
func DecodeListTasks(raw json.RawMessage) (a2a.ListTasksParams, *a2a.Error) {
	var c wire.Checker
	return wire.ReadOptional(&c, raw, func(params jsonw.Members) (p a2a.ListTasksParams) {
		p.ContextID, _ = c.ID("/context_id", params.Get("context_id"), false)
		if s, ok := c.Str("/status", params.Get("status"), false); ok && s != "" {
			if st, known := states[s]; known {
				p.Status = st
			} else {
				c.Add("/status", `must be a task state: "submitted", "working", "input-required", "auth-required", "completed", "canceled", "failed", "rejected" or "unknown"`)
			}
		}
		if n := c.Integer("/page_size", params.Get("page_size")); n != nil {
			p.PageSize = c.PageRange("/page_size", *n)
		}
		p.PageToken, _ = c.Str("/page_token", params.Get("page_token"), false)
		p.HistoryLength = c.NonNegInt("/history_length", params.Get("history_length"))
		p.StatusTimestampAfter = c.Timestamp("/last_updated_after", params.Get("last_updated_after"))
		if b := c.Boolean("/include_artifacts", params.Get("include_artifacts")); b != nil {
			p.IncludeArtifacts = *b
		}
		unknownListParams(&c, params)
		return p
	})
}

// listParams are the members of tasks/list params, as a2a-go's
// ListTasksRequest spells them.
var listParams = [...]string{"context_id", "status", "page_size", "page_token", "history_length", "last_updated_after", "include_artifacts"}

// listParamsText lists listParams for a problem's message.
const listParamsText = "context_id, status, page_size, page_token, history_length, last_updated_after and include_artifacts"

// unknownListParams adds a problem for each member of params that is not
// one of listParams, with the member it was likely meant as when it is
// one of them in camelCase.
func unknownListParams(c *wire.Checker, params jsonw.Members) {
	for _, m := range params {
		if slices.Contains(listParams[:], m.Key) {
			continue
		}
		path := "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(m.Key)
		if snake := snakeCase(m.Key); snake != m.Key && slices.Contains(listParams[:], snake) {
			c.Add(path, `is not a tasks/list param: did you mean "`+snake+`"? (tasks/list, a2a-go's extension of 0.3, spells its params in snake_case)`)
			continue
		}
		c.Add(path, "is not a tasks/list param; they are "+listParamsText)
	}
}

// snakeCase is s, a camelCase name, in snake_case: pageSize is page_size.
func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// states are the task states by their 0.3 names.
var states = map[string]a2a.TaskState{
	"submitted": a2a.StateSubmitted, "working": a2a.StateWorking, "input-required": a2a.StateInputRequired,
	"auth-required": a2a.StateAuthRequired, "completed": a2a.StateCompleted, "canceled": a2a.StateCanceled,
	"failed": a2a.StateFailed, "rejected": a2a.StateRejected, "unknown": a2a.StateUnknown,
}
