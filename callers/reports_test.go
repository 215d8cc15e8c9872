package callers

import (
	"testing"
	"time"
)

// TestReportsSummarise: one report per key per window, the first at once,
// counting what it stands for; keys apart, and bounded.
func TestReportsSummarise(t *testing.T) {
	now := time.Unix(0, 0)
	r := NewReports(10*time.Second, 2, func() time.Time { return now })
	if n := r.Refused("a"); n != 1 {
		t.Fatalf("the first refusal reports %d, want 1 at once", n)
	}
	for i := range 99 {
		if n := r.Refused("a"); n != 0 {
			t.Fatalf("refusal %d within the window reports %d, want 0", i+2, n)
		}
	}
	if n := r.Refused("b"); n != 1 {
		t.Errorf("another key's first refusal reports %d, want 1", n)
	}
	now = now.Add(10 * time.Second)
	if n := r.Refused("a"); n != 100 {
		t.Errorf("the first refusal after the window reports %d, want the 99 held and itself", n)
	}
	r.Refused("c") // past the cap of 2: the least recently used key, b, goes
	if r.keys.len() != 2 || r.keys.get("b") != nil {
		t.Errorf("%d keys held, b forgotten: %v; want 2 and b forgotten", r.keys.len(), r.keys.get("b") == nil)
	}
	now = now.Add(DefaultMaxIdle)
	if n := r.Sweep(); n != 2 || r.keys.len() != 0 {
		t.Errorf("Sweep forgot %d, %d left; want 2 and none", n, r.keys.len())
	}
}
