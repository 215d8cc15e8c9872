package tasks

import (
	"encoding/json"
	"strconv"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// AppendCanonical appends the canonical encoding of m to dst: what the
// idempotency hash of KeyFor is computed over. Stores keep those hashes, so the encoding is
// frozen: a change of a byte of it would make every retry of a message
// sent before the change look like a reused messageId. It is the 0.3 wire
// JSON of a message as a2ad wrote it when the hashes were first stored,
// and it stays so whatever becomes of the wire encoders. A new form would
// need a new hash version beside this one, never a change to it.
//
// A message is one JSON object, without insignificant space, its members
// in this order, those in brackets only when not empty:
//
//	{"kind":"message","messageId":S[,"contextId":S][,"taskId":S],
//	 "role":S,"parts":[P,…][,"referenceTaskIds":[S,…]]
//	 [,"extensions":[S,…]][,"metadata":M]}
//
// and a part P, as its Kind says:
//
//	{"kind":"text","text":S[,"metadata":M]}
//	{"kind":"file","file":{F}[,"metadata":M]}
//	{"kind":"data","data":D[,"metadata":M]}
//
// where
//   - S is a string escaped as encoding/json escapes it: `"` and `\` and
//     the control characters escaped (\n, \r, \t, \b, \f, else \u00XX),
//     <, > and & as \u003c, \u003e and \u0026, U+2028 and U+2029 as
//     \u2028 and \u2029, each invalid UTF-8 byte as \ufffd; nothing else.
//   - F is the file's members "name", "mimeType", "bytes" and "uri", in
//     that order, each only when not empty (so {} for a part without a
//     file); bytes are hashed as the message holds them (decoders keep
//     them in standard padded base64).
//   - D is the data's JSON as the message holds it, compacted (space
//     removed; key order, numbers and escapes as sent), or {} when empty.
//   - M is the map as encoding/json writes a map[string]any: keys sorted,
//     strings as S, numbers as it writes a float64.
//
// A part of any other kind, or data that is not valid JSON, has no
// canonical form: AppendCanonical returns an error.
func AppendCanonical(dst []byte, m *a2a.Message) ([]byte, error) {
	dst = jsonw.AppendString(append(dst, `{"kind":"message","messageId":`...), m.MessageID)
	dst = jsonw.AppendStringMember(dst, `,"contextId":`, m.ContextID)
	dst = jsonw.AppendStringMember(dst, `,"taskId":`, m.TaskID)
	dst = jsonw.AppendString(append(dst, `,"role":`...), string(m.Role))
	dst, err := AppendCanonicalParts(append(dst, `,"parts":`...), m.Parts)
	if err != nil {
		return nil, err
	}
	dst = jsonw.AppendStringsMember(dst, `,"referenceTaskIds":`, m.ReferenceTaskIDs)
	dst = jsonw.AppendStringsMember(dst, `,"extensions":`, m.Extensions)
	return jsonw.CloseWithMap(dst, `,"metadata":`, m.Metadata)
}

// AppendStored appends m as a store keeps it in the task whose id and
// context id are taskID and contextID: its canonical encoding without its
// contextId and taskId where they are the task's, so that a task's ids,
// up to 256 bytes each, are stored once with the task rather than with
// each of its messages (record v2; package record). A store reads it back
// with Fill. It is what the stores' history byte budgets count (see
// Scope.HistoryBytes); the idempotency hashes are of the canonical
// encoding, and stored as hashes, so they do not change.
func AppendStored(dst []byte, m *a2a.Message, taskID, contextID string) ([]byte, error) {
	if (m.ContextID == "" || m.ContextID != contextID) && (m.TaskID == "" || m.TaskID != taskID) {
		return AppendCanonical(dst, m)
	}
	s := *m
	if s.ContextID == contextID {
		s.ContextID = ""
	}
	if s.TaskID == taskID {
		s.TaskID = ""
	}
	return AppendCanonical(dst, &s)
}

// Fill gives m, a message read from a store in the task of taskID and
// contextID, the ids AppendStored left out: a message without a contextId
// or taskId gets its task's. (Every message a2ad stores in a task carries
// both: see advance.)
func Fill(m *a2a.Message, taskID, contextID string) {
	if m.ContextID == "" {
		m.ContextID = contextID
	}
	if m.TaskID == "" {
		m.TaskID = taskID
	}
}

// AppendCanonicalParts appends parts as the array of their canonical
// encodings ([P,…]; [] when there are none).
func AppendCanonicalParts(dst []byte, parts []a2a.Part) ([]byte, error) {
	dst = append(dst, '[')
	for i := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendCanonicalPart(dst, &parts[i]); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

func appendCanonicalPart(dst []byte, p *a2a.Part) ([]byte, error) {
	dst = jsonw.AppendString(append(dst, `{"kind":`...), string(p.Kind))
	switch p.Kind {
	case a2a.PartText:
		dst = jsonw.AppendString(append(dst, `,"text":`...), p.Text)
	case a2a.PartFile:
		dst = appendCanonicalFile(append(dst, `,"file":`...), p.File)
	case a2a.PartData:
		dst = append(dst, `,"data":`...)
		if len(p.Data) == 0 {
			dst = append(dst, "{}"...)
		} else {
			var err error
			if dst, err = jsonw.AppendCompact(dst, p.Data); err != nil {
				return nil, err
			}
		}
	default:
		return nil, &json.UnsupportedValueError{Str: "part kind " + strconv.Quote(string(p.Kind))}
	}
	return jsonw.CloseWithMap(dst, `,"metadata":`, p.Metadata)
}

// appendCanonicalFile appends {F}.
func appendCanonicalFile(dst []byte, f *a2a.FileContent) []byte {
	n := len(dst)
	if f != nil {
		dst = jsonw.AppendStringMember(dst, `,"name":`, f.Name)
		dst = jsonw.AppendStringMember(dst, `,"mimeType":`, f.MimeType)
		dst = jsonw.AppendStringMember(dst, `,"bytes":`, f.Bytes)
		dst = jsonw.AppendStringMember(dst, `,"uri":`, f.URI)
	}
	if len(dst) == n {
		return append(dst, "{}"...)
	}
	dst[n] = '{' // the first member's comma opens the object
	return append(dst, '}')
}
