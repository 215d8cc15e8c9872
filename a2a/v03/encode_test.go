package v03_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
)

// mustEncode returns the 0.3 JSON of v, a core value or a pointer to one.
func mustEncode(tb testing.TB, v any) string {
	tb.Helper()
	b, err := encode(v)
	if err != nil {
		tb.Fatalf("encoding %#v: %v", v, err)
	}
	return string(b)
}

// encode writes v, a core value or a pointer to one, with its encoder.
func encode(v any) ([]byte, error) {
	if rv := reflect.ValueOf(v); rv.Kind() != reflect.Pointer {
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		v = p.Interface()
	}
	switch v := v.(type) {
	case *a2a.Part:
		return v03.AppendPart(nil, v)
	case *a2a.Message:
		return v03.AppendMessage(nil, v)
	case *a2a.Task:
		return v03.AppendTask(nil, v)
	case *a2a.StatusUpdateEvent:
		return v03.AppendStatusUpdate(nil, v)
	case *a2a.ArtifactUpdateEvent:
		return v03.AppendArtifactUpdate(nil, v)
	}
	return nil, fmt.Errorf("no encoder for %T", v)
}

func TestAppendPart(t *testing.T) {
	tests := []struct {
		name string
		part a2a.Part
		want string
	}{
		{"text", a2a.TextPart("hello"), `{"kind":"text","text":"hello"}`},
		{"empty text keeps the field", a2a.TextPart(""), `{"kind":"text","text":""}`},
		{"text with metadata", a2a.Part{Kind: a2a.PartText, Text: "x", Metadata: map[string]any{"a": 1}},
			`{"kind":"text","text":"x","metadata":{"a":1}}`},
		{"text ignores other fields", a2a.Part{Kind: a2a.PartText, Text: "x", Data: json.RawMessage(`{"a":1}`), File: &a2a.FileContent{URI: "u"}},
			`{"kind":"text","text":"x"}`},
		{"data", a2a.DataPart(json.RawMessage(`{"a":[1,2]}`)), `{"kind":"data","data":{"a":[1,2]}}`},
		{"empty data is an empty object", a2a.DataPart(nil), `{"kind":"data","data":{}}`},
		{"file bytes", a2a.Part{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "a.txt", MimeType: "text/plain", Bytes: "aGk="}},
			`{"kind":"file","file":{"name":"a.txt","mimeType":"text/plain","bytes":"aGk="}}`},
		{"file uri", a2a.Part{Kind: a2a.PartFile, File: &a2a.FileContent{URI: "https://example.com/a"}},
			`{"kind":"file","file":{"uri":"https://example.com/a"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustEncode(t, tc.part); got != tc.want {
				t.Errorf("AppendPart = %s, want %s", got, tc.want)
			}
		})
	}

	for _, kind := range []a2a.PartKind{"", "image"} {
		if b, err := encode(a2a.Part{Kind: kind}); err == nil {
			t.Errorf("AppendPart(Part{Kind: %q}) = %s, want an error", kind, b)
		}
	}
}

func TestPartRoundTrip(t *testing.T) {
	parts := []a2a.Part{
		a2a.TextPart("hello"),
		a2a.TextPart(""),
		{Kind: a2a.PartText, Text: "x", Metadata: map[string]any{"n": float64(1), "s": "v"}},
		a2a.DataPart(json.RawMessage(`{"a":[1,2],"b":{"c":null}}`)),
		{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "a.txt", MimeType: "text/plain", Bytes: "aGk="}},
		{Kind: a2a.PartFile, File: &a2a.FileContent{URI: "https://example.com/a"}},
	}
	for _, p := range parts {
		b := mustEncode(t, p)
		var got a2a.Part
		if err := json.Unmarshal([]byte(b), &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Errorf("round trip of %s = %#v, want %#v", b, got, p)
		}
	}

	// Parts in a slice round-trip too, through a message.
	var m struct{ Parts []a2a.Part }
	if err := json.Unmarshal([]byte(`{"Parts":[{"kind":"text","text":"a"},{"kind":"data","data":{"x":1}}]}`), &m); err != nil {
		t.Fatal(err)
	}
	want := []a2a.Part{a2a.TextPart("a"), a2a.DataPart(json.RawMessage(`{"x":1}`))}
	if !reflect.DeepEqual(m.Parts, want) {
		t.Errorf("Unmarshal parts = %#v, want %#v", m.Parts, want)
	}

	var bad a2a.Part
	if err := json.Unmarshal([]byte(`{"kind":"text","text":5}`), &bad); err == nil {
		t.Errorf("Unmarshal of a number text = %#v, want an error", bad)
	}
}

func TestAppendMessage(t *testing.T) {
	m := a2a.Message{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}
	want := `{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}`
	if got := mustEncode(t, m); got != want {
		t.Errorf("AppendMessage = %s\nwant %s", got, want)
	}

	full := a2a.Message{
		MessageID: "m2", ContextID: "c", TaskID: "t", Role: a2a.RoleAgent,
		Parts:            []a2a.Part{a2a.DataPart(json.RawMessage(`{"a":1}`))},
		ReferenceTaskIDs: []string{"t0"}, Extensions: []string{"urn:x"}, Metadata: map[string]any{"k": "v"},
	}
	want = `{"kind":"message","messageId":"m2","contextId":"c","taskId":"t","role":"agent","parts":[{"kind":"data","data":{"a":1}}],` +
		`"referenceTaskIds":["t0"],"extensions":["urn:x"],"metadata":{"k":"v"}}`
	if got := mustEncode(t, full); got != want {
		t.Errorf("AppendMessage = %s\nwant %s", got, want)
	}

	// A pointer encodes the same way.
	if got, want := mustEncode(t, &m), mustEncode(t, m); got != want {
		t.Errorf("AppendMessage = %s, want %s", got, want)
	}

	// Messages round-trip: the kind is ignored on the way in.
	var back a2a.Message
	if err := json.Unmarshal([]byte(mustEncode(t, full)), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, full) {
		t.Errorf("round trip = %#v, want %#v", back, full)
	}
}

func TestAppendTask(t *testing.T) {
	task := a2a.Task{
		ID:        "t1",
		ContextID: "c1",
		Status: a2a.TaskStatus{
			State:     a2a.StateCompleted,
			Message:   &a2a.Message{MessageID: "m2", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("done")}},
			Timestamp: "2025-01-02T03:04:05.006Z",
		},
		History:   []a2a.Message{{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("go")}}},
		Artifacts: []a2a.Artifact{{ArtifactID: "a1", Name: "result", Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"x":1}`))}}},
		Metadata:  map[string]any{"function": "f"},
	}
	want := `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed",` +
		`"message":{"kind":"message","messageId":"m2","role":"agent","parts":[{"kind":"text","text":"done"}]},` +
		`"timestamp":"2025-01-02T03:04:05.006Z"},` +
		`"history":[{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"go"}]}],` +
		`"artifacts":[{"artifactId":"a1","name":"result","parts":[{"kind":"data","data":{"x":1}}]}],` +
		`"metadata":{"function":"f"}}`
	if got := mustEncode(t, task); got != want {
		t.Errorf("AppendTask = %s\nwant %s", got, want)
	}
	if got := mustEncode(t, &task); got != want {
		t.Errorf("AppendTask = %s\nwant %s", got, want)
	}

	bare := a2a.Task{ID: "t2", ContextID: "c2", Status: a2a.TaskStatus{State: a2a.StateSubmitted}}
	want = `{"kind":"task","id":"t2","contextId":"c2","status":{"state":"submitted"}}`
	if got := mustEncode(t, bare); got != want {
		t.Errorf("AppendTask = %s\nwant %s", got, want)
	}

	var back a2a.Task
	if err := json.Unmarshal([]byte(mustEncode(t, task)), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, task) {
		t.Errorf("round trip = %#v\nwant %#v", back, task)
	}
}

func TestAppendEvents(t *testing.T) {
	st := a2a.StatusUpdateEvent{TaskID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.StateWorking}}
	want := `{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"working"},"final":false}`
	if got := mustEncode(t, st); got != want {
		t.Errorf("AppendStatusUpdate = %s\nwant %s", got, want)
	}
	st.Final, st.Metadata = true, map[string]any{"a": "b"}
	st.Status.State = a2a.StateFailed
	want = `{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"failed"},"final":true,"metadata":{"a":"b"}}`
	if got := mustEncode(t, &st); got != want {
		t.Errorf("AppendStatusUpdate = %s\nwant %s", got, want)
	}

	ar := a2a.ArtifactUpdateEvent{TaskID: "t1", ContextID: "c1",
		Artifact: a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{a2a.TextPart("x")}}}
	want = `{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"kind":"text","text":"x"}]}}`
	if got := mustEncode(t, ar); got != want {
		t.Errorf("AppendArtifactUpdate = %s\nwant %s", got, want)
	}
	ar.Append, ar.LastChunk = true, true
	want = `{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"kind":"text","text":"x"}]},"append":true,"lastChunk":true}`
	if got := mustEncode(t, &ar); got != want {
		t.Errorf("AppendArtifactUpdate = %s\nwant %s", got, want)
	}
}

// TestAppendTaskRoundTrip encodes a task with every field set both
// ways: through the hand-written encoder and through encoding/json on
// plain mirror types.
func TestAppendTaskRoundTrip(t *testing.T) {
	msg := a2a.Message{
		MessageID: "m", ContextID: "c", TaskID: "t", Role: a2a.RoleUser,
		Parts: []a2a.Part{
			a2a.TextPart("hi <there>"),
			{Kind: a2a.PartData, Data: json.RawMessage(`{ "a" : [1, 2] }`), Metadata: map[string]any{"k": "v"}},
			{Kind: a2a.PartFile, File: &a2a.FileContent{Name: "f.txt", MimeType: "text/plain", URI: "https://x/f"}},
		},
		ReferenceTaskIDs: []string{"r1"}, Extensions: []string{"urn:x"}, Metadata: map[string]any{"n": 1.5},
	}
	task := a2a.Task{
		ID: "t", ContextID: "c",
		Status:    a2a.TaskStatus{State: a2a.StateCompleted, Message: &msg, Timestamp: "2026-11-22T00:00:00.000Z"},
		History:   []a2a.Message{msg, msg},
		Artifacts: []a2a.Artifact{{ArtifactID: "a", Name: "n", Description: "d", Parts: msg.Parts, Metadata: map[string]any{"x": true}}},
		Metadata:  map[string]any{"m": []any{"v"}},
	}
	got, err := v03.AppendTask(nil, &task)
	if err != nil {
		t.Fatal(err)
	}
	var back a2a.Task
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := v03.AppendTask(nil, &back)
	if !bytes.Equal(got, again) {
		t.Fatalf("round trip changed the task:\n%s\n%s", got, again)
	}
	if !json.Valid(got) || !bytes.Contains(got, []byte(`"data":{"a":[1,2]}`)) || !bytes.Contains(got, []byte(`hi \u003cthere\u003e`)) {
		t.Fatalf("encoding: %s", got)
	}
	// An invalid data part is an error, not broken JSON.
	bad := a2a.Task{ID: "t", Artifacts: []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`{`)}}}}}
	if _, err := v03.AppendTask(nil, &bad); err == nil {
		t.Fatal("invalid raw data encoded without error")
	}
}
