package costtest

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that keeps what SameAllocs reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Logf(string, ...any)          {}
func (r *recorder) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }

var sink []byte

// TestSameAllocs: a foreign call that allocates more every time fails;
// a change of state between rounds that makes both sides allocate more
// from then on (a checkpoint) passes.
func TestSameAllocs(t *testing.T) {
	alloc := func(n int) func() { return func() { sink = make([]byte, n) } }
	none := func() {}

	var r recorder
	SameAllocs(&r, "oracle", 1, alloc(8192), none)
	if len(r.errs) != 1 || r.errs[0] != "oracle: a foreign task costs 1.0 allocations (8192 B), a missing one 0.0 (0 B)" {
		t.Errorf("an oracle: %q, want one error naming both costs", r.errs)
	}

	// The state changes once foreign's first round (200 calls) is over,
	// before missing's: from then on both allocate. The least of each
	// side's rounds differ (0 against 1024 B); the second round agrees.
	calls := 0
	state := func() {
		if calls >= 200 {
			sink = make([]byte, 1024)
		}
	}
	foreign := func() { state(); calls++ }
	r = recorder{}
	SameAllocs(&r, "checkpoint", 1, foreign, state)
	if len(r.errs) != 0 {
		t.Errorf("a change of state between rounds: %q, want no error", r.errs)
	}
}
