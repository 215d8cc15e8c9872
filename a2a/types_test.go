package a2a_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

func mustMarshal(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("json.Marshal(%#v): %v", v, err)
	}
	return string(b)
}

func TestPartMarshalJSON(t *testing.T) {
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
			if got := mustMarshal(t, tc.part); got != tc.want {
				t.Errorf("Marshal = %s, want %s", got, tc.want)
			}
		})
	}

	for _, kind := range []a2a.PartKind{"", "image"} {
		if b, err := json.Marshal(a2a.Part{Kind: kind}); err == nil {
			t.Errorf("Marshal(Part{Kind: %q}) = %s, want an error", kind, b)
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
		b := mustMarshal(t, p)
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

func TestMessageMarshalJSON(t *testing.T) {
	m := a2a.Message{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}
	want := `{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}`
	if got := mustMarshal(t, m); got != want {
		t.Errorf("Marshal(Message) = %s\nwant %s", got, want)
	}

	full := a2a.Message{
		MessageID: "m2", ContextID: "c", TaskID: "t", Role: a2a.RoleAgent,
		Parts:            []a2a.Part{a2a.DataPart(json.RawMessage(`{"a":1}`))},
		ReferenceTaskIDs: []string{"t0"}, Extensions: []string{"urn:x"}, Metadata: map[string]any{"k": "v"},
	}
	want = `{"kind":"message","messageId":"m2","contextId":"c","taskId":"t","role":"agent","parts":[{"kind":"data","data":{"a":1}}],` +
		`"referenceTaskIds":["t0"],"extensions":["urn:x"],"metadata":{"k":"v"}}`
	if got := mustMarshal(t, full); got != want {
		t.Errorf("Marshal(Message) = %s\nwant %s", got, want)
	}

	// A pointer marshals the same way, as TaskStatus.Message does.
	if got, want := mustMarshal(t, &m), mustMarshal(t, m); got != want {
		t.Errorf("Marshal(*Message) = %s, want %s", got, want)
	}

	// Messages round-trip: the kind is ignored on the way in.
	var back a2a.Message
	if err := json.Unmarshal([]byte(mustMarshal(t, full)), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, full) {
		t.Errorf("round trip = %#v, want %#v", back, full)
	}
}

func TestTaskMarshalJSON(t *testing.T) {
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
	if got := mustMarshal(t, task); got != want {
		t.Errorf("Marshal(Task) = %s\nwant %s", got, want)
	}
	if got := mustMarshal(t, &task); got != want {
		t.Errorf("Marshal(*Task) = %s\nwant %s", got, want)
	}

	bare := a2a.Task{ID: "t2", ContextID: "c2", Status: a2a.TaskStatus{State: a2a.StateSubmitted}}
	want = `{"kind":"task","id":"t2","contextId":"c2","status":{"state":"submitted"}}`
	if got := mustMarshal(t, bare); got != want {
		t.Errorf("Marshal(Task) = %s\nwant %s", got, want)
	}

	var back a2a.Task
	if err := json.Unmarshal([]byte(mustMarshal(t, task)), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, task) {
		t.Errorf("round trip = %#v\nwant %#v", back, task)
	}
}

func TestEventMarshalJSON(t *testing.T) {
	st := a2a.StatusUpdateEvent{TaskID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.StateWorking}}
	want := `{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"working"},"final":false}`
	if got := mustMarshal(t, st); got != want {
		t.Errorf("Marshal(StatusUpdateEvent) = %s\nwant %s", got, want)
	}
	st.Final, st.Metadata = true, map[string]any{"a": "b"}
	st.Status.State = a2a.StateFailed
	want = `{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"failed"},"final":true,"metadata":{"a":"b"}}`
	if got := mustMarshal(t, &st); got != want {
		t.Errorf("Marshal(*StatusUpdateEvent) = %s\nwant %s", got, want)
	}

	ar := a2a.ArtifactUpdateEvent{TaskID: "t1", ContextID: "c1",
		Artifact: a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{a2a.TextPart("x")}}}
	want = `{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"kind":"text","text":"x"}]}}`
	if got := mustMarshal(t, ar); got != want {
		t.Errorf("Marshal(ArtifactUpdateEvent) = %s\nwant %s", got, want)
	}
	ar.Append, ar.LastChunk = true, true
	want = `{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"kind":"text","text":"x"}]},"append":true,"lastChunk":true}`
	if got := mustMarshal(t, &ar); got != want {
		t.Errorf("Marshal(*ArtifactUpdateEvent) = %s\nwant %s", got, want)
	}
}

func historyOf(ids ...string) []a2a.Message {
	h := make([]a2a.Message, len(ids))
	for i, id := range ids {
		h[i] = a2a.Message{MessageID: id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(id)}}
	}
	return h
}

func messageIDs(h []a2a.Message) []string {
	if h == nil {
		return nil
	}
	ids := make([]string, len(h))
	for i, m := range h {
		ids[i] = m.MessageID
	}
	return ids
}

func TestTaskWithHistoryLength(t *testing.T) {
	tests := []struct {
		n    int
		want []string
	}{
		{-1, []string{"m1", "m2", "m3"}},
		{-100, []string{"m1", "m2", "m3"}},
		{0, nil},
		{1, []string{"m3"}},
		{2, []string{"m2", "m3"}},
		{3, []string{"m1", "m2", "m3"}},
		{4, []string{"m1", "m2", "m3"}},
	}
	for _, tc := range tests {
		orig := a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.StateWorking},
			History: historyOf("m1", "m2", "m3"), Metadata: map[string]any{"k": "v"}}
		got := orig.WithHistoryLength(tc.n)
		if ids := messageIDs(got.History); !reflect.DeepEqual(ids, tc.want) {
			t.Errorf("WithHistoryLength(%d) history = %v, want %v", tc.n, ids, tc.want)
		}
		if got.ID != "t1" || got.ContextID != "c1" || got.Status.State != a2a.StateWorking || got.Metadata["k"] != "v" {
			t.Errorf("WithHistoryLength(%d) changed other fields: %+v", tc.n, got)
		}
		if ids := messageIDs(orig.History); !reflect.DeepEqual(ids, []string{"m1", "m2", "m3"}) {
			t.Errorf("after WithHistoryLength(%d) the original history = %v, want [m1 m2 m3]", tc.n, ids)
		}
		if tc.n == 0 {
			if b := mustMarshal(t, got); b != `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"},"metadata":{"k":"v"}}` {
				t.Errorf("WithHistoryLength(0) marshals to %s, want no history", b)
			}
		}
	}

	empty := a2a.Task{ID: "t"}
	for _, n := range []int{-1, 0, 1} {
		if got := empty.WithHistoryLength(n); len(got.History) != 0 {
			t.Errorf("empty.WithHistoryLength(%d) history = %v, want none", n, got.History)
		}
	}
}

func TestTaskStatePredicates(t *testing.T) {
	tests := []struct {
		state       a2a.TaskState
		terminal    bool
		interrupted bool
	}{
		{a2a.StateSubmitted, false, false},
		{a2a.StateWorking, false, false},
		{a2a.StateInputRequired, false, true},
		{a2a.StateAuthRequired, false, true},
		{a2a.StateCompleted, true, false},
		{a2a.StateCanceled, true, false},
		{a2a.StateFailed, true, false},
		{a2a.StateRejected, true, false},
		{a2a.StateUnknown, false, false},
		{"", false, false},
		{"TASK_STATE_COMPLETED", false, false},
	}
	for _, tc := range tests {
		if got := tc.state.Terminal(); got != tc.terminal {
			t.Errorf("TaskState(%q).Terminal() = %v, want %v", tc.state, got, tc.terminal)
		}
		if got := tc.state.Interrupted(); got != tc.interrupted {
			t.Errorf("TaskState(%q).Interrupted() = %v, want %v", tc.state, got, tc.interrupted)
		}
	}

	// The constants are the 0.3 spellings.
	spellings := map[a2a.TaskState]string{
		a2a.StateSubmitted: "submitted", a2a.StateWorking: "working", a2a.StateInputRequired: "input-required",
		a2a.StateAuthRequired: "auth-required", a2a.StateCompleted: "completed", a2a.StateCanceled: "canceled",
		a2a.StateFailed: "failed", a2a.StateRejected: "rejected", a2a.StateUnknown: "unknown",
	}
	for s, want := range spellings {
		if string(s) != want {
			t.Errorf("state %q, want %q", s, want)
		}
	}
}

func TestTimestamp(t *testing.T) {
	loc := time.FixedZone("X", 2*3600)
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2025, 1, 2, 5, 4, 5, 6_000_000, loc), "2025-01-02T03:04:05.006Z"},
		{time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), "2025-01-02T03:04:05.000Z"},
		{time.Date(2025, 1, 2, 3, 4, 5, 999_999_999, time.UTC), "2025-01-02T03:04:05.999Z"},
	}
	for _, tc := range tests {
		if got := a2a.Timestamp(tc.in); got != tc.want {
			t.Errorf("Timestamp(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
