package v1

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wire"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// The readers of 1.0's own shapes: ProtoJSON int32s and enums, Message,
// Part and the flattened TaskPushNotificationConfig.

// protoInt32 reads an optional, non-negative ProtoJSON int32: a JSON
// number, or a string holding one, with no fraction.
func protoInt32(c *wire.Checker, path string, raw json.RawMessage) *int {
	if jsonw.Absent(raw) {
		return nil
	}
	var s string
	switch jsonw.TypeOf(raw) {
	case jsonw.Number:
		s = string(bytes.TrimSpace(raw))
	case jsonw.String:
		s = jsonw.Unquote(bytes.TrimSpace(raw))
		if s == "" || s != strings.TrimSpace(s) || !json.Valid([]byte(s)) || jsonw.TypeOf(json.RawMessage(s)) != jsonw.Number {
			c.Add(path, "must be an integer")
			return nil
		}
	default:
		c.Add(path, "must be an integer")
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && !isRangeErr(err), f != math.Trunc(f):
		c.Add(path, "must be an integer")
		return nil
	case f < 0:
		c.Add(path, "must not be negative")
		return nil
	case f > math.MaxInt32:
		c.Add(path, "must be at most 2147483647")
		return nil
	}
	n := int(f)
	return &n
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// role reads a required ROLE_* enum, by name or number.
func role(c *wire.Checker, path string, raw json.RawMessage) a2a.Role {
	const want = `must be "ROLE_USER" or "ROLE_AGENT"`
	if jsonw.Absent(raw) {
		c.Add(path, "is required")
		return ""
	}
	switch t := jsonw.TypeOf(raw); t {
	case jsonw.String:
		switch jsonw.Unquote(bytes.TrimSpace(raw)) {
		case "ROLE_USER":
			return a2a.RoleUser
		case "ROLE_AGENT":
			return a2a.RoleAgent
		}
		c.Add(path, want)
	case jsonw.Number:
		switch string(bytes.TrimSpace(raw)) {
		case "1":
			return a2a.RoleUser
		case "2":
			return a2a.RoleAgent
		}
		c.Add(path, want)
	default:
		c.Add(path, want+", not "+jsonw.Article(t))
	}
	return ""
}

// stateFilter reads an optional TaskState filter, by name or number.
func stateFilter(c *wire.Checker, path string, raw json.RawMessage) a2a.TaskState {
	if len(raw) == 0 {
		return ""
	}
	switch jsonw.TypeOf(raw) {
	case jsonw.Null:
		return ""
	case jsonw.String:
		name := jsonw.Unquote(bytes.TrimSpace(raw))
		if name == "UNRECOGNIZED" {
			// The JS SDK 1.x (ts-proto) sends this when its caller set
			// no status: read it as no filter.
			return ""
		}
		if st, ok := StateFromName(name); ok {
			if st == a2a.StateUnknown { // TASK_STATE_UNSPECIFIED
				return ""
			}
			return st
		}
	case jsonw.Number:
		if n, err := strconv.Atoi(string(bytes.TrimSpace(raw))); err == nil && n >= 0 && n < len(states) {
			if n == 0 { // UNSPECIFIED, the proto default
				return ""
			}
			return states[n].state
		}
	}
	c.Add(path, "must be a TaskState: a TASK_STATE_* name (such as \"TASK_STATE_WORKING\") or its number from 0 to 8")
	return ""
}

func message(c *wire.Checker, path string, m jsonw.Members) a2a.Message {
	var msg a2a.Message
	msg.MessageID = c.NonEmptyID(path+"/messageId", field(c, path, m, "messageId"), true)
	msg.ContextID, _ = c.ID(path+"/contextId", field(c, path, m, "contextId"), false)
	msg.TaskID, _ = c.ID(path+"/taskId", field(c, path, m, "taskId"), false)
	msg.Role = role(c, path+"/role", m.Get("role"))
	msg.Parts = c.Parts(path, m, func(path string, pm jsonw.Members) a2a.Part { return part(c, path, pm) })
	msg.Metadata = c.AnyMap(path+"/metadata", m.Get("metadata"))
	msg.Extensions = c.Names(path+"/extensions", m.Get("extensions"), a2a.MaxListNames, a2a.MaxNameBytes)
	msg.ReferenceTaskIDs = c.IDs(path+"/referenceTaskIds", field(c, path, m, "referenceTaskIds"))
	return msg
}

// part reads a Part: exactly one of text, raw, url and data.
func part(c *wire.Checker, path string, m jsonw.Members) a2a.Part {
	var p a2a.Part
	text, rawB, url, data := m.Get("text"), m.Get("raw"), m.Get("url"), m.Get("data")
	n := 0
	for _, v := range [...]json.RawMessage{text, rawB, url} {
		if !jsonw.Absent(v) {
			n++
		}
	}
	if len(data) > 0 { // a null data is a google.protobuf.Value holding null
		n++
	}
	switch {
	case n == 0:
		c.Add(path, `must have one of "text", "raw", "url" or "data"`)
	case n > 1:
		c.Add(path, `must have only one of "text", "raw", "url" and "data"`)
	case len(data) > 0:
		p.Kind = a2a.PartData
		if t := jsonw.TypeOf(data); t != jsonw.Object {
			what := jsonw.Article(t)
			if t == jsonw.Null {
				what = "null"
			}
			c.Add(path+"/data", "must be an object, not "+what)
		} else {
			// A copy: data is the request's pooled buffer (see v03's part).
			p.Data = append(json.RawMessage(nil), data...)
		}
	case !jsonw.Absent(text):
		p.Kind = a2a.PartText
		p.Text, _ = c.Str(path+"/text", text, true)
	case !jsonw.Absent(url):
		p.Kind = a2a.PartFile
		p.File = &a2a.FileContent{URI: c.NonEmpty(path+"/url", url, true)}
	default:
		p.Kind = a2a.PartFile
		b := c.NonEmpty(path+"/raw", rawB, true)
		if b != "" {
			b = c.Base64(path+"/raw", b)
		}
		p.File = &a2a.FileContent{Bytes: b}
	}
	p.Metadata = c.AnyMap(path+"/metadata", m.Get("metadata"))
	filename, _ := c.Str(path+"/filename", m.Get("filename"), false)
	mediaType, _ := c.Str(path+"/mediaType", field(c, path, m, "mediaType"), false)
	if p.File != nil {
		p.File.Name, p.File.MimeType = filename, mediaType
	}
	return p
}

// pushConfig reads a flattened TaskPushNotificationConfig and returns the
// config and its taskId; path is the object's pointer ("" for the params
// themselves).
func pushConfig(c *wire.Checker, path string, m jsonw.Members, needTask bool) (a2a.PushConfig, string) {
	tenant(c, path+"/tenant", m)
	var taskID string
	if needTask {
		taskID = c.NonEmptyID(path+"/taskId", field(c, path, m, "taskId"), true)
	} else {
		taskID, _ = c.ID(path+"/taskId", field(c, path, m, "taskId"), false)
	}
	return c.PushConfig(path, m, true, func(path string, auth jsonw.Members) []string { return scheme(c, path, auth) }), taskID
}

// scheme reads the single scheme of a push config's authentication.
func scheme(c *wire.Checker, path string, auth jsonw.Members) []string {
	s := c.NonEmpty(path+"/scheme", auth.Get("scheme"), true)
	c.MaxLen(path+"/scheme", s, a2a.MaxPushSchemeBytes)
	if s != "" {
		return []string{s}
	}
	return nil
}
