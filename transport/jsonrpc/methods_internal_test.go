package jsonrpc

import (
	"slices"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
)

// TestMethodTable pins the method table: every method once, with its
// version and flags, and one handler: open when it streams, else serve.
func TestMethodTable(t *testing.T) {
	type flags struct {
		version                     a2a.Version
		streams, stateful, authOnly bool
	}
	v03, v10 := a2a.V03, a2a.V10
	want := []struct {
		name string
		flags
	}{
		{"message/send", flags{v03, false, true, false}},
		{"message/stream", flags{v03, true, true, false}},
		{"tasks/get", flags{v03, false, false, false}},
		{"tasks/cancel", flags{v03, false, true, false}},
		{"tasks/resubscribe", flags{v03, true, true, false}},
		{"tasks/list", flags{v03, false, false, false}},
		{"tasks/pushNotificationConfig/set", flags{v03, false, false, false}},
		{"tasks/pushNotificationConfig/get", flags{v03, false, false, false}},
		{"tasks/pushNotificationConfig/list", flags{v03, false, false, false}},
		{"tasks/pushNotificationConfig/delete", flags{v03, false, false, false}},
		{"agent/getAuthenticatedExtendedCard", flags{v03, false, false, true}},
		{"SendMessage", flags{v10, false, true, false}},
		{"SendStreamingMessage", flags{v10, true, true, false}},
		{"GetTask", flags{v10, false, false, false}},
		{"CancelTask", flags{v10, false, true, false}},
		{"SubscribeToTask", flags{v10, true, true, false}},
		{"ListTasks", flags{v10, false, false, false}},
		{"CreateTaskPushNotificationConfig", flags{v10, false, false, false}},
		{"GetTaskPushNotificationConfig", flags{v10, false, false, false}},
		{"ListTaskPushNotificationConfigs", flags{v10, false, false, false}},
		{"DeleteTaskPushNotificationConfig", flags{v10, false, false, false}},
		{"GetExtendedAgentCard", flags{v10, false, false, true}},
	}
	if len(methods) != len(want) {
		t.Fatalf("%d methods, want %d", len(methods), len(want))
	}
	var names []string
	for i, w := range want {
		names = append(names, w.name)
		m := methods[i]
		if m.name != w.name {
			t.Errorf("methods[%d] = %q, want %q", i, m.name, w.name)
			continue
		}
		got := flags{m.version, m.streams(), m.stateful, m.authOnly}
		if got != w.flags {
			t.Errorf("%s: %+v, want %+v", m.name, got, w.flags)
		}
		if (m.serve == nil) == (m.open == nil) {
			t.Errorf("%s: serve set %v, open set %v: want exactly one", m.name, m.serve != nil, m.open != nil)
		}
		if l, ok := lookup(w.name); !ok || l != &methods[i] {
			t.Errorf("lookup(%q) = %v, %v: want methods[%d]", w.name, l, ok, i)
		}
	}
	if got := Methods(); !slices.Equal(got, names) {
		t.Errorf("Methods() = %q, want %q", got, names)
	}
	for _, name := range []string{"", "tasks/Get", "sendMessage", "tasks/pushNotificationConfig/", "tasks/pushNotificationConfig/x"} {
		if m, ok := lookup(name); ok {
			t.Errorf("lookup(%q) = %s, want no method", name, m.name)
		}
	}
}

// TestRequestIDs: a request id is 32 ASCII letters, a new one each time,
// each letter as likely as any other.
func TestRequestIDs(t *testing.T) {
	const n = 4000
	seen := map[string]bool{}
	count := map[rune]int{}
	for range n {
		id := newRequestID()
		if len(id) != 32 || seen[id] {
			t.Fatalf("request id %q: %d bytes, seen before: %v", id, len(id), seen[id])
		}
		seen[id] = true
		for _, r := range id {
			if !strings.ContainsRune(requestIDLetters, r) {
				t.Fatalf("request id %q has %q, not a letter", id, r)
			}
			count[r]++
		}
	}
	// Each letter is expected n*32/52 ≈ 2462 times; a letter's count
	// beyond ±15% would be a bias (as 64 % 52 drawn without rejection
	// gives the first 12 letters twice the share).
	want := n * 32 / len(requestIDLetters)
	for _, r := range requestIDLetters {
		if c := count[r]; c < want*85/100 || c > want*115/100 {
			t.Errorf("letter %q drawn %d times, want about %d", r, c, want)
		}
	}
}
