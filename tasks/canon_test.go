package tasks_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/golden"
	"github.com/a2ad/a2ad/tasks"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// canonMessages cover every member of a message and every kind of part:
// their canonical bytes, and the hashes stores keep, are pinned in
// testdata/canonical.golden.
var canonMessages = []struct {
	name string
	msg  a2a.Message
}{
	{"text", a2a.Message{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hello")}}},
	{"escapes", a2a.Message{MessageID: "m\"2\"", Role: a2a.RoleUser, Parts: []a2a.Part{
		a2a.TextPart("<b>&amp;</b>\n\t\x01 héllo \u2028 \xff"),
	}}},
	{"every member", a2a.Message{
		MessageID: "m3", ContextID: "ctx-1", TaskID: "task-1", Role: a2a.RoleAgent,
		Parts:            []a2a.Part{{Kind: a2a.PartText, Text: "t", Metadata: map[string]any{"z": 1.0, "a": "<x>"}}},
		ReferenceTaskIDs: []string{"r1", "r2"}, Extensions: []string{"https://ext/a"},
		Metadata: map[string]any{"n": 12345678901234567890.0, "f": 0.000001, "l": []any{true, nil, "s"}, "o": map[string]any{"b": 2.5, "a": "&"}},
	}},
	{"data", a2a.Message{MessageID: "m4", Role: a2a.RoleUser, Parts: []a2a.Part{
		a2a.DataPart(json.RawMessage(" {\n \"skill\" : \"demo::echo\",\"input\": {\"b\":1e2, \"a\":\"<\\u0026>\"} } ")),
		{Kind: a2a.PartData},
	}}},
	{"files", a2a.Message{MessageID: "m5", Role: a2a.RoleUser, Parts: []a2a.Part{
		{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "a.txt", MimeType: "text/plain", Bytes: "aGVsbG8="}},
		{Kind: a2a.PartFile, File: &a2a.FileContent{URI: "https://files/x?a=1&b=2"}, Metadata: map[string]any{"k": "v"}},
		{Kind: a2a.PartFile, File: &a2a.FileContent{MimeType: "image/png", URI: "file:///p"}},
		{Kind: a2a.PartFile},
	}}},
	{"empty", a2a.Message{}},
}

// TestCanonicalGolden: the canonical encoding, and so the idempotency
// hash of every message a store has bound, never changes. A failure here
// means retries of messages sent before the change would be refused as
// reused messageIds: fix the change, do not -update.
func TestCanonicalGolden(t *testing.T) {
	var got bytes.Buffer
	for _, c := range canonMessages {
		b, err := tasks.AppendCanonical([]byte("prefix"), &c.msg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b = b[len("prefix"):]
		sum := sha256.Sum256(b)
		if k := tasks.KeyFor("alice", &c.msg); k.Hash != sum || k.MessageID != c.msg.MessageID || k.Owner != "alice" {
			t.Errorf("%s: KeyFor = %+v, want the hash of the canonical bytes", c.name, k)
		}
		fmt.Fprintf(&got, "# %s\n%s\nsha256 %s\n", c.name, b, hex.EncodeToString(sum[:]))
	}
	golden.Check(t, filepath.Join("testdata", "canonical.golden"), got.Bytes(), *update, "canonical encoding changed")
}

// TestCanonicalRefuses: a part of an unknown kind, or data that is not
// JSON, has no canonical form.
func TestCanonicalRefuses(t *testing.T) {
	for _, p := range []a2a.Part{{Kind: "video"}, a2a.DataPart(json.RawMessage(`{"a":`))} {
		m := a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{p}}
		if b, err := tasks.AppendCanonical(nil, &m); err == nil {
			t.Errorf("AppendCanonical(part %+v) = %s, want an error", p, b)
		}
	}
}
