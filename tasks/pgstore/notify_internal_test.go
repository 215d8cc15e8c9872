package pgstore

import (
	"fmt"
	"testing"
)

// TestPayloadsFitANotice: many tasks' notices are packed under
// PostgreSQL's 8000-byte limit, and parse back to each task's span.
func TestPayloadsFitANotice(t *testing.T) {
	pending := make(map[string][2]uint64)
	for i := range 1000 {
		pending[fmt.Sprintf("01a20be2-56c3-7aa5-bc22-%012d", i)] = [2]uint64{uint64(i) + 1, 1 << 62}
	}
	ps := payloads("0123456789abcdef", pending)
	got := make(map[string][2]uint64)
	for _, p := range ps {
		if len(p) >= 8000 {
			t.Fatalf("a payload of %d bytes", len(p))
		}
		parse(p, "another", func(id string, first, last uint64) { got[id] = [2]uint64{first, last} })
		parse(p, "0123456789abcdef", func(id string, _, _ uint64) { t.Fatalf("own notice parsed: %s", id) })
	}
	if len(ps) < 2 || len(got) != len(pending) {
		t.Fatalf("%d payloads hold %d tasks, want %d", len(ps), len(got), len(pending))
	}
	for id, span := range pending {
		if got[id] != span {
			t.Fatalf("%s: %v, want %v", id, got[id], span)
		}
	}
}
