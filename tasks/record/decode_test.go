package record

import (
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// FuzzHeadIDs: the ids HeadIDs reads from a head without decoding it are
// those DecodeHead reads, whatever bytes the ids hold (escaped quotes and
// backslashes, control characters, U+2028, invalid UTF-8, which is
// written as U+FFFD).
func FuzzHeadIDs(f *testing.F) {
	for _, ids := range [][2]string{{"t1", "ctx"}, {`a"b\`, "c\\\"d"}, {"\x00\n\u2028<&>", "é\xff"}, {"", ""}} {
		f.Add(ids[0], ids[1])
	}
	f.Fuzz(func(t *testing.T, id, ctx string) {
		msg := a2a.Message{MessageID: "m", TaskID: id, ContextID: ctx, Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("x")}}
		rec := &tasks.Record{Task: a2a.Task{ID: id, ContextID: ctx, Status: a2a.TaskStatus{State: a2a.StateWorking, Message: &msg}}}
		b, err := AppendHead(nil, rec, IDsOf(&rec.Task))
		if err != nil {
			t.Fatal(err)
		}
		got, err := HeadIDs(b)
		if err != nil {
			t.Fatalf("HeadIDs(%s): %v", b, err)
		}
		whole, err := DecodeHead(b)
		if err != nil {
			t.Fatal(err)
		}
		if want := IDsOf(&whole.Task); got != want {
			t.Errorf("HeadIDs(%s) = %+v, DecodeHead's %+v", b, got, want)
		}
		if m := whole.Task.Status.Message; m.TaskID != whole.Task.ID || m.ContextID != whole.Task.ContextID {
			t.Errorf("the head's status message read back with %q, %q; want its task's %+v", m.TaskID, m.ContextID, IDsOf(&whole.Task))
		}
	})
}

// TestHeadIDsRefusesOtherValues: what is not a head, or is cut short, is
// an error, not ids.
func TestHeadIDsRefusesOtherValues(t *testing.T) {
	for _, b := range []string{``, `{"task":{"kind":"task","id":"t"}}`, `{"task":{"kind":"task","id":"t\"`, `{"seq":1}`,
		`{"task":{"kind":"task","id":"t","contextId":1}}`} {
		if got, err := HeadIDs([]byte(b)); err == nil {
			t.Errorf("HeadIDs(%s) = %+v, want an error", b, got)
		}
	}
}
