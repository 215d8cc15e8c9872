package tasks

import (
	"encoding/json"
	"strings"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// defaultSkill is the catalogue's default skill (the function that takes
// messages naming no skill) if there is one and caller may see it; nil
// otherwise, and the message gets the guidance of skillsHint.
func (sk *skills) defaultSkill(caller Caller) *functions.Function {
	cat := sk.catalog()
	if cat == nil || cat.Default == "" {
		return nil
	}
	f, ok := cat.Lookup(cat.Default)
	if !ok || !sk.policy.DecideIn(caller.protocol(), f.ID, f.Metadata, caller.Tiers).Exposed {
		return nil
	}
	return f
}

// messageFile is a file part as the default skill's input holds it.
type messageFile struct {
	Name      string `json:"name,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
	Bytes     string `json:"bytes,omitempty"` // base64
	URI       string `json:"uri,omitempty"`
}

// messageInput is the input the default skill gets for msg, a message of
// task taskID in contextID that names no skill:
//
//	{"text": "<the text parts, joined by newlines>",
//	 "data": [<each data part's value>],      (only if there are any)
//	 "files": [{"name", "mediaType", "bytes" | "uri"}],  (likewise)
//	 "messageId": "...", "contextId": "...", "taskId": "..."}
//
// text is always there, "" for a message without text.
func messageInput(msg *a2a.Message, taskID, contextID string) json.RawMessage {
	in := struct {
		Text      string            `json:"text"`
		Data      []json.RawMessage `json:"data,omitempty"`
		Files     []messageFile     `json:"files,omitempty"`
		MessageID string            `json:"messageId"`
		ContextID string            `json:"contextId"`
		TaskID    string            `json:"taskId"`
	}{MessageID: msg.MessageID, ContextID: contextID, TaskID: taskID}
	var text []string
	for _, p := range msg.Parts {
		switch p.Kind {
		case a2a.PartText:
			text = append(text, p.Text)
		case a2a.PartData:
			in.Data = append(in.Data, p.Data)
		case a2a.PartFile:
			if p.File != nil {
				f := p.File
				in.Files = append(in.Files, messageFile{Name: f.Name, MediaType: f.MimeType, Bytes: f.Bytes, URI: f.URI})
			}
		}
	}
	in.Text = strings.Join(text, "\n")
	b, _ := json.Marshal(in) // strings and valid JSON: cannot fail
	return b
}
