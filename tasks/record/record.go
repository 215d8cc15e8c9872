// Package record is the format a2ad's task stores keep tasks in: the
// JSON they write for a task's head, its history messages, its artifacts
// and their chunks, and its events. The stores own it: it is written and
// read here, not with the A2A wire codecs, so that a change to those
// changes no stored byte.
//
// This is record v2. Its version is each store's schema: record v1 is
// byte for byte what boltstore's schema 5 wrote, and what pgstore's
// schemas 1 to 3 write; record v2 is boltstore's schema 6 and pgstore's
// schema 4. A record of another form is a new schema of each store, with
// a migration to it; boltstore's testdata/record-v1.golden and
// record-v2.golden pin these bytes.
//
// Record v2 differs from v1 in one thing: a message stored in a task (a
// history message, the head's or an event's status message) leaves out
// its contextId and taskId where they are the task's
// (tasks.AppendStored), so that a context id a caller chose, up to 256
// bytes, is stored once with the task and not again with every message
// and event (issue 25). Every read fills them in again (tasks.Fill), so
// records of both versions read alike, and a store of either holds both:
// nothing is rewritten. The functions that write a message take the
// task's IDs for v2, or no IDs (IDs{}) to write v1, as pgstore does while
// a replica that reads only v1 is running.
//
// Every value is JSON without insignificant space, its members in the
// order below; a member in brackets is left out when empty (false, 0):
//
//	head      {"task":TASK[,"callerTiers":[S,…]][,"callerTier":S]
//	           [,"functionId":S][,"pushConfigs":[PUSH,…]]
//	           [,"processGroup":{"pgid":N,"leaderStart":N,"session":N,
//	           "bootId":S}],"seq":N,"createdAt":T,"updatedAt":T}
//	TASK      {"kind":"task","id":S,"contextId":S,"status":STATUS
//	           [,"metadata":M]}   (no history, no artifacts: body keeps them)
//	STATUS    {"state":S[,"message":MSG][,"timestamp":S]}
//	PUSH      {["id":S,]"url":S[,"token":S][,"authentication":
//	           {"schemes":[S,…] or null[,"credentials":S]}]
//	           [,"wireVersion":N]}   (1 is A2A 1.0; absent, 0.3)
//	history   MSG
//	artifact  {"artifactId":S[,"name":S][,"description":S],"parts":[P,…]
//	           [,"extensions":[S,…]][,"metadata":M]}
//	chunk     [P,…]   (parts appended to an artifact)
//	event     {"seq":N[,"status":STATUS][,"artifact":artifact]
//	           [,"append":true][,"lastChunk":true]}
//
// MSG is a message: in v1 its canonical encoding (tasks.AppendCanonical,
// frozen for the idempotency hashes), in v2 that without the ids its task
// holds (tasks.AppendStored); P is a part in the canonical encoding
// (tasks.AppendCanonicalParts); S,
// M and raw data are written as it writes them; T is a time in RFC 3339
// with nanoseconds (time.RFC3339Nano) and its zone offset.
//
// Schemas 2 to 4 kept a whole record, {"task":TASK,"owner":S,…} with the
// task's history and artifacts in TASK and "owner", "input" and
// "messageIds" beside "seq"; it is decoded (Whole) by boltstore's
// migrations and Check, never written.
package record

import (
	"strconv"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/jsonw"
	"github.com/a2ad/a2ad/tasks"
)

// IDs are the ids of the task a stored message belongs to, which record
// v2 leaves out of it: IDsOf the task to write v2, or none (IDs{}) to
// write v1. Reading, they are what a message without ids gets.
type IDs struct{ Task, Context string }

// IDsOf returns t's ids.
func IDsOf(t *a2a.Task) IDs { return IDs{Task: t.ID, Context: t.ContextID} }

// AppendMessage appends a history message of the task of in.
func AppendMessage(dst []byte, m *a2a.Message, in IDs) ([]byte, error) {
	return tasks.AppendStored(dst, m, in.Task, in.Context)
}

// AppendHead appends the JSON of rec's head, without reflection, since a
// head is written with every change; in is IDsOf(&rec.Task) for v2, IDs{}
// for v1. The task's history, artifacts and input, its owner and its
// message ids are kept elsewhere, by each store, and not written.
func AppendHead(dst []byte, rec *tasks.Record, in IDs) ([]byte, error) {
	dst, err := appendTask(append(dst, `{"task":`...), &rec.Task, in)
	if err != nil {
		return nil, err
	}
	dst = jsonw.AppendStringsMember(dst, `,"callerTiers":`, rec.CallerTiers)
	dst = jsonw.AppendStringMember(dst, `,"callerTier":`, rec.CallerTier)
	dst = jsonw.AppendStringMember(dst, `,"functionId":`, rec.FunctionID)
	if len(rec.PushConfigs) > 0 {
		dst = appendPushConfigs(append(dst, `,"pushConfigs":`...), rec.PushConfigs)
	}
	if g := rec.Group; g != nil {
		dst = strconv.AppendInt(append(dst, `,"processGroup":{"pgid":`...), int64(g.ID), 10)
		dst = strconv.AppendUint(append(dst, `,"leaderStart":`...), g.LeaderStart, 10)
		dst = strconv.AppendInt(append(dst, `,"session":`...), int64(g.Session), 10)
		dst = append(jsonw.AppendString(append(dst, `,"bootId":`...), g.BootID), '}')
	}
	dst = strconv.AppendUint(append(dst, `,"seq":`...), rec.Seq, 10)
	dst = appendTime(append(dst, `,"createdAt":`...), rec.CreatedAt)
	dst = appendTime(append(dst, `,"updatedAt":`...), rec.UpdatedAt)
	return append(dst, '}'), nil
}

// appendTask appends TASK: t without its history and artifacts.
func appendTask(dst []byte, t *a2a.Task, in IDs) ([]byte, error) {
	dst = jsonw.AppendString(append(dst, `{"kind":"task","id":`...), t.ID)
	dst = jsonw.AppendString(append(dst, `,"contextId":`...), t.ContextID)
	dst, err := appendStatus(append(dst, `,"status":`...), &t.Status, in)
	if err != nil {
		return nil, err
	}
	return jsonw.CloseWithMap(dst, `,"metadata":`, t.Metadata)
}

// appendStatus appends STATUS, its message in the task of in.
func appendStatus(dst []byte, s *a2a.TaskStatus, in IDs) ([]byte, error) {
	dst = jsonw.AppendString(append(dst, `{"state":`...), string(s.State))
	if s.Message != nil {
		var err error
		if dst, err = AppendMessage(append(dst, `,"message":`...), s.Message, in); err != nil {
			return nil, err
		}
	}
	dst = jsonw.AppendStringMember(dst, `,"timestamp":`, s.Timestamp)
	return append(dst, '}'), nil
}

// AppendArtifact appends an artifact.
func AppendArtifact(dst []byte, a *a2a.Artifact) ([]byte, error) {
	dst = jsonw.AppendString(append(dst, `{"artifactId":`...), a.ArtifactID)
	dst = jsonw.AppendStringMember(dst, `,"name":`, a.Name)
	dst = jsonw.AppendStringMember(dst, `,"description":`, a.Description)
	dst, err := tasks.AppendCanonicalParts(append(dst, `,"parts":`...), a.Parts)
	if err != nil {
		return nil, err
	}
	dst = jsonw.AppendStringsMember(dst, `,"extensions":`, a.Extensions)
	return jsonw.CloseWithMap(dst, `,"metadata":`, a.Metadata)
}

// appendPushConfigs appends [PUSH,…]. Schemes are null when nil, as
// encoding/json wrote them when it wrote these.
func appendPushConfigs(dst []byte, cs []a2a.PushConfig) []byte {
	dst = append(dst, '[')
	for i := range cs {
		c := &cs[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonw.AppendStringMember(append(dst, '{'), `"id":`, c.ID)
		if c.ID != "" {
			dst = append(dst, ',')
		}
		dst = jsonw.AppendString(append(dst, `"url":`...), c.URL)
		dst = jsonw.AppendStringMember(dst, `,"token":`, c.Token)
		if a := c.Authentication; a != nil {
			dst = append(dst, `,"authentication":{"schemes":`...)
			if a.Schemes == nil {
				dst = append(dst, "null"...)
			} else {
				dst = jsonw.AppendStrings(dst, a.Schemes)
			}
			dst = append(jsonw.AppendStringMember(dst, `,"credentials":`, a.Credentials), '}')
		}
		if c.Wire != 0 {
			dst = strconv.AppendUint(append(dst, `,"wireVersion":`...), uint64(c.Wire), 10)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// AppendEvent appends an event of the task of in.
func AppendEvent(dst []byte, e *tasks.Event, in IDs) ([]byte, error) {
	dst = strconv.AppendUint(append(dst, `{"seq":`...), e.Seq, 10)
	var err error
	if e.Status != nil {
		if dst, err = appendStatus(append(dst, `,"status":`...), e.Status, in); err != nil {
			return nil, err
		}
	}
	if e.Artifact != nil {
		if dst, err = AppendArtifact(append(dst, `,"artifact":`...), e.Artifact); err != nil {
			return nil, err
		}
	}
	if e.Append {
		dst = append(dst, `,"append":true`...)
	}
	if e.LastChunk {
		dst = append(dst, `,"lastChunk":true`...)
	}
	return append(dst, '}'), nil
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}
