package tasks

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// The parts envelope: the output of a function declared "output: parts".
// It is a JSON object with two optional members:
//
//	{"artifacts": [{"name": "...", "description": "...", "parts": [PART, ...]}, ...],
//	 "message":   [PART, ...],
//	 "reply":     "message" | "task"}
//
// Each artifact becomes one of the task's artifacts (the function's id is
// its name if it gives none); "message" is the agent message of the
// completed status, or the Message a "reply: message" function answers
// with; "reply", for a function declared "reply: either" only, chooses how
// this call is answered ("message" needs "message"; the default is the
// task). A PART is in A2A 1.0's JSON form, with exactly one of
//
//	{"text": "..."}                    a text part
//	{"data": {...}}                    a data part (a JSON object)
//	{"raw": "<base64>"}                a file part, its bytes inline
//	{"url": "https://..."}             a file part by reference
//
// and, on a raw or url part, optional "filename" and "mediaType"; any
// part may carry "metadata" (an object). Both versions of A2A get them in
// their own form (0.3: kind text/data/file with bytes or uri).

// envelopePart is a PART of the parts envelope.
type envelopePart struct {
	Text      *string         `json:"text"`
	Data      json.RawMessage `json:"data"`
	Raw       *string         `json:"raw"`
	URL       *string         `json:"url"`
	Filename  string          `json:"filename"`
	MediaType string          `json:"mediaType"`
	Metadata  map[string]any  `json:"metadata"`
}

// envelope is the parts envelope, decoded.
type envelope struct {
	Artifacts []struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Parts       []json.RawMessage `json:"parts"`
	} `json:"artifacts"`
	Message []json.RawMessage `json:"message"`
	Reply   string            `json:"reply"`
}

// ReplyKey is the status message metadata key that marks the message of
// a completed task as the call's reply (a function declared "reply:
// either" chose a Message; see reply).
const ReplyKey = "a2ad.reply"

// partsOf reads out, a parts envelope of fn, into the artifacts and the
// message parts it holds, and whether it chose to answer with a Message
// (fn's reply is either); artifacts without a name are named fn's id. A
// malformed envelope returns the JSON pointer of the first problem and
// what it is.
func partsOf(out json.RawMessage, fn *functions.Function) (arts []a2a.Artifact, msg []a2a.Part, asMessage bool, path, problem string) {
	if firstNonSpace(out) != '{' {
		return nil, nil, false, "", "must be an object with artifacts and/or message"
	}
	for _, m := range jsonw.ObjectMembers(out) {
		switch m.Key {
		case "artifacts", "message":
		case "reply":
			if fn.Reply != functions.ReplyEither {
				return nil, nil, false, "/reply", "is allowed only for a function declared reply: either"
			}
		default:
			return nil, nil, false, "/" + m.Key, "is not a member of the parts envelope (artifacts, message, reply)"
		}
	}
	var env envelope
	if err := json.Unmarshal(out, &env); err != nil {
		return nil, nil, false, "", "does not have the parts envelope's shape: " + err.Error()
	}
	switch env.Reply {
	case "", "task":
	case "message":
		if len(env.Message) == 0 {
			return nil, nil, false, "/reply", "a message reply needs the message's parts in message"
		}
		asMessage = true
	default:
		return nil, nil, false, "/reply", `must be "message" or "task"`
	}
	name := fn.ID
	for i, a := range env.Artifacts {
		at := "/artifacts/" + strconv.Itoa(i)
		if len(a.Parts) == 0 {
			return nil, nil, false, at + "/parts", "must hold at least one part"
		}
		art := a2a.Artifact{ArtifactID: newID(), Name: a.Name, Description: a.Description}
		if art.Name == "" {
			art.Name = name
		}
		for j, raw := range a.Parts {
			p, problem := envelopePartOf(raw)
			if problem != "" {
				return nil, nil, false, at + "/parts/" + strconv.Itoa(j), problem
			}
			art.Parts = append(art.Parts, p)
		}
		arts = append(arts, art)
	}
	for j, raw := range env.Message {
		p, problem := envelopePartOf(raw)
		if problem != "" {
			return nil, nil, false, "/message/" + strconv.Itoa(j), problem
		}
		msg = append(msg, p)
	}
	return arts, msg, asMessage, "", ""
}

// envelopePartOf reads one PART of the envelope.
func envelopePartOf(raw json.RawMessage) (a2a.Part, string) {
	var ep envelopePart
	if firstNonSpace(raw) != '{' || json.Unmarshal(raw, &ep) != nil {
		return a2a.Part{}, "must be an object with one of text, data, raw, url"
	}
	for _, m := range jsonw.ObjectMembers(raw) {
		switch m.Key {
		case "text", "data", "raw", "url", "filename", "mediaType", "metadata":
		default:
			return a2a.Part{}, strconv.Quote(m.Key) + " is not a member of a part (text, data, raw, url, filename, mediaType, metadata)"
		}
	}
	n := 0
	for _, set := range []bool{ep.Text != nil, ep.Data != nil, ep.Raw != nil, ep.URL != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return a2a.Part{}, "must have exactly one of text, data, raw, url"
	}
	var p a2a.Part
	switch {
	case ep.Text != nil:
		p = a2a.TextPart(*ep.Text)
	case ep.Data != nil:
		if firstNonSpace(ep.Data) != '{' {
			return a2a.Part{}, "data must be a JSON object"
		}
		p = a2a.DataPart(compactJSON(bytes.Clone(ep.Data)))
	case ep.Raw != nil:
		if _, err := base64.StdEncoding.DecodeString(*ep.Raw); err != nil {
			return a2a.Part{}, "raw must be base64 (standard, padded)"
		}
		p = a2a.Part{Kind: a2a.PartFile, File: &a2a.FileContent{Bytes: *ep.Raw}}
	default:
		if *ep.URL == "" {
			return a2a.Part{}, "url must not be empty"
		}
		p = a2a.Part{Kind: a2a.PartFile, File: &a2a.FileContent{URI: *ep.URL}}
	}
	if p.File != nil {
		p.File.Name, p.File.MimeType = ep.Filename, ep.MediaType
	} else if ep.Filename != "" || ep.MediaType != "" {
		return a2a.Part{}, "filename and mediaType go with raw or url only"
	}
	p.Metadata = ep.Metadata
	return p, ""
}
