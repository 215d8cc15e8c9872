package boltstore

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// TestCodecMatchesEncodingJSON: the hand-written head and event encoders
// write what encoding/json writes for the same values.
func TestCodecMatchesEncodingJSON(t *testing.T) {
	msg := a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("héllo <&>")}}
	now := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	art := a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("x")}}
	recs := []struct {
		rec  tasks.Record
		arts []artRef
	}{
		{rec: tasks.Record{Task: a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking}}, CreatedAt: now, UpdatedAt: now}},
		{
			rec: tasks.Record{
				Task: a2a.Task{
					ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted, Message: &msg},
					History: []a2a.Message{msg}, Artifacts: []a2a.Artifact{art}, Metadata: map[string]any{"k": "v"},
				},
				Owner: "alice \"a\"", CallerTiers: []string{"partner", "in\"ternal"}, CallerTier: "old", FunctionID: "demo::echo",
				Input: json.RawMessage(`{"a":[1,2]}`), MessageIDs: []string{"m1", "m2"}, Seq: 42,
				PushConfigs: []a2a.PushConfig{{ID: "c", URL: "https://h/x", Token: "t", Authentication: &a2a.PushAuth{Schemes: []string{"Bearer"}, Credentials: "s"}}},
				Group:       &functions.ProcessGroup{ID: 4242, LeaderStart: 1234567, Session: 17, BootID: "e857\"9018"},
				CreatedAt:   now, UpdatedAt: now.Add(time.Second).In(time.FixedZone("x", 3600)),
			},
			arts: []artRef{{ID: "a", Chunks: 3, Bytes: 7}, {ID: "é\"", Chunks: 1}},
		},
	}
	for _, c := range recs {
		got, err := appendHead(nil, &c.rec)
		if err != nil {
			t.Fatal(err)
		}
		r := c.rec
		sh := storedHead{
			Task: r.Task, CallerTiers: r.CallerTiers, CallerTier: r.CallerTier, FunctionID: r.FunctionID,
			PushConfigs: r.PushConfigs, Group: r.Group, Seq: r.Seq, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		}
		sh.Task.History, sh.Task.Artifacts = nil, nil
		want, _ := json.Marshal(&sh)
		if !bytes.Equal(got, want) {
			t.Errorf("head:\n got %s\nwant %s", got, want)
		}
		// The value round-trips: owner, history length and the
		// artifacts' index in the header.
		v, err := appendHeadValue(nil, &c.rec, 7, c.arts)
		if err != nil {
			t.Fatal(err)
		}
		back, arts, err := decodeHead("t", v)
		if err != nil {
			t.Fatal(err)
		}
		if back.Owner != r.Owner || back.Seq != r.Seq || back.HistoryLen != 7 || !slices.Equal(arts, c.arts) ||
			len(back.Task.History) != 0 || len(back.Task.Artifacts) != 0 || back.FunctionID != r.FunctionID {
			t.Errorf("decoded head %+v, index %v", back, arts)
		}
	}
	events := []tasks.Event{
		{Seq: 1, Status: &a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: "2026-11-22T10:00:00.000Z"}},
		{Seq: 2, Artifact: &a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"x":1}`))}}, Append: true, LastChunk: true},
	}
	for _, e := range events {
		got, err := appendEvent(nil, &e)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(&e)
		if !bytes.Equal(got, want) {
			t.Errorf("event:\n got %s\nwant %s", got, want)
		}
	}
	var ops bodyOps
	if err := ops.putInput("t", json.RawMessage(`{`)); err == nil {
		t.Error("invalid input encoded without error")
	}
}
