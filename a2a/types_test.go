package a2a_test

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
)

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
			if b, _ := v03.AppendTask(nil, &got); string(b) != `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"},"metadata":{"k":"v"}}` {
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

// TestTimestampAsFormat: Timestamp writes what time.Format writes with
// its layout, over years, zones and fractions.
func TestTimestampAsFormat(t *testing.T) {
	zone := time.FixedZone("x", -7*3600-30*60)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		sec := r.Int64N(400*365*86400) - 200*365*86400 + 1700000000 // 1830 to 2230
		if i%100 == 0 {
			sec = r.Int64N(1<<40) - 1<<39 // years far out, negative ones too
		}
		tm := time.Unix(sec, r.Int64N(1e9)).In(zone)
		if got, want := a2a.Timestamp(tm), tm.UTC().Format("2006-01-02T15:04:05.000Z07:00"); got != want {
			t.Fatalf("Timestamp(%v) = %q, want %q", tm, got, want)
		}
	}
}
