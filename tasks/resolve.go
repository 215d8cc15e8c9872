package tasks

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// call is what a message asks for: a function and its input.
type call struct {
	FunctionID string
	Input      json.RawMessage
	// Named reports whether the message named a function at all.
	Named bool
}

// resolveCall finds the function a message names, and its input:
//
//  1. the first data part carrying "skill" (input in "input") or, in the
//     iii form, "function_id" (input in "payload"); the input defaults
//     to {};
//  2. else the first text part whose first word contains "::": that word
//     is the function id, and the rest of the text is the input, parsed
//     as JSON, else {"text": rest}.
//
// A message that matches neither names no function.
func resolveCall(msg *a2a.Message) (call, *InputError) {
	for i, p := range msg.Parts {
		if p.Kind != a2a.PartData || !json.Valid(p.Data) {
			continue
		}
		// The members as decoding into a map finds them (the last of a
		// repeated key), not copied; none if the data is no object.
		d := jsonw.ObjectMembers(p.Data)
		idKey, inKey := "skill", "input"
		idVal := d.Get(idKey)
		if idVal == nil {
			idKey, inKey = "function_id", "payload"
			if idVal = d.Get(idKey); idVal == nil {
				continue
			}
		}
		path := func() string { return "/message/parts/" + strconv.Itoa(i) + "/data/" + idKey }
		if firstNonSpace(idVal) != '"' {
			return call{}, invalid(path(), "must be a string")
		}
		id := jsonw.Unquote(idVal)
		if id == "" {
			return call{}, invalid(path(), "must not be empty")
		}
		input := d.Get(inKey)
		if len(input) == 0 || string(input) == "null" {
			input = json.RawMessage("{}")
		} else {
			input = bytes.Clone(input) // the call may outlive the message's bytes
		}
		return call{FunctionID: id, Input: input, Named: true}, nil
	}
	for _, p := range msg.Parts {
		if p.Kind != a2a.PartText {
			continue
		}
		text := strings.TrimSpace(p.Text)
		word, rest := text, ""
		if i := strings.IndexFunc(text, unicode.IsSpace); i >= 0 {
			word, rest = text[:i], text[i:]
		}
		if !strings.Contains(word, "::") {
			return call{}, nil
		}
		return call{FunctionID: word, Input: textInput(rest), Named: true}, nil
	}
	return call{}, nil
}

// followUpInput is the input of a message that continues snap's task,
// whose function is already known: the first data part as it is (or its
// "input" if it names the same skill), else the text, parsed as JSON, else
// {"text": text}. A message naming no skill to a task of the default skill
// (one caller may see) gets the default skill's input (messageInput).
func (in *incoming) followUpInput(snap *Record) (json.RawMessage, *InputError) {
	s, caller, msg := in.s, in.caller, in.msg
	functionID := snap.FunctionID
	c, err := resolveCall(msg)
	if err != nil {
		return nil, err
	}
	if !c.Named {
		if f := s.sk.defaultSkill(caller); f != nil && f.ID == functionID {
			return messageInput(msg, snap.Task.ID, snap.Task.ContextID), nil
		}
	}
	if c.Named {
		if c.FunctionID != functionID {
			return nil, invalid("/message/parts",
				"names skill "+strconv.Quote(c.FunctionID)+", but this task calls "+strconv.Quote(functionID))
		}
		return c.Input, nil
	}
	for _, p := range msg.Parts {
		if p.Kind == a2a.PartData {
			return p.Data, nil
		}
	}
	for _, p := range msg.Parts {
		if p.Kind == a2a.PartText {
			return textInput(p.Text), nil
		}
	}
	return nil, invalid("/message/parts", "must hold a data or text part with the input")
}

func textInput(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(s)) == nil {
			return buf.Bytes()
		}
	}
	b, _ := json.Marshal(map[string]string{"text": s})
	return b
}

func firstNonSpace(b []byte) byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}
