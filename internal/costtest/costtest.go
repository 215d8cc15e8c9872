// Package costtest compares what two operations cost, for tests that show
// an answer's cost tells nothing (a foreign task costs what a missing one
// does). It measures medians of interleaved runs, which a loaded machine
// skews least, and allocations, which it does not skew at all.
package costtest

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

// Budget bounds one measurement of Medians: a case that has gone wrong
// (one operation a hundred times slower) ends early, on fewer samples.
const Budget = 20 * time.Second

// Medians times up to n runs of a and n of b, interleaved in random order
// (so that drifts of the machine's load hit both alike), and returns the
// median of each and how many pairs it ran.
func Medians(n int, a, b func()) (ma, mb time.Duration, pairs int) {
	ta, tb := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13))
	deadline := time.Now().Add(Budget)
	for i := 0; i < n && (i < 10 || time.Now().Before(deadline)); i++ {
		first, second := a, b
		swap := rng.IntN(2) == 0
		if swap {
			first, second = b, a
		}
		start := time.Now()
		first()
		d1 := time.Since(start)
		start = time.Now()
		second()
		d2 := time.Since(start)
		if swap {
			d1, d2 = d2, d1
		}
		ta, tb = append(ta, d1), append(tb, d2)
	}
	slices.Sort(ta)
	slices.Sort(tb)
	return ta[len(ta)/2], tb[len(tb)/2], len(ta)
}

// SameTime fails tb unless the medians of n interleaved runs of foreign
// and missing are within bound (0.10: 10%) of each other. A miss is
// measured once more before it counts, as one measurement on a loaded
// machine can be skewed; a miss by more than twice is not.
func SameTime(tb testing.TB, what string, n int, bound float64, foreign, missing func()) {
	tb.Helper()
	for try := 1; ; try++ {
		mf, mm, pairs := Medians(n, foreign, missing)
		ratio := float64(mf) / float64(mm)
		tb.Logf("%s: median foreign %v, missing %v (ratio %.3f, %d pairs, try %d)", what, mf, mm, ratio, pairs, try)
		if ratio <= 1+bound && ratio >= 1/(1+bound) {
			return
		}
		if try == 2 || ratio > 2 || ratio < 0.5 {
			tb.Errorf("%s: a foreign task's median %v, a missing one's %v: %.0f%% apart, want within %.0f%%",
				what, mf, mm, 100*(max(ratio, 1/ratio)-1), 100*bound)
			return
		}
	}
}

// Allocs returns the allocations and bytes allocated per run of fn,
// averaged over n runs (after one run to warm up).
func Allocs(n int, fn func()) (allocs, bytes float64) {
	fn()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		fn()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(n), float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
}

// SameAllocs fails tb unless foreign allocates what missing does, within
// slack allocations and slack*64 bytes per run: the allocations of the
// work done, which the machine's load cannot skew. A read that decodes
// the foreign task before answering allocates its size.
func SameAllocs(tb testing.TB, what string, slack float64, foreign, missing func()) {
	tb.Helper()
	bslack := slack * 64
	if raceBuild { // pools drop at random: a transaction's 1 KB now and then
		bslack = slack * 2048
	}
	SameAllocsBy(tb, what, 200, Allocs, slack, bslack, foreign, missing)
}

// SameAllocsBy is SameAllocs with the allocations measured by allocs over
// n runs of each side a round: allocs returns the allocations and bytes
// per run of fn over n runs (Allocs for this process's; another
// process's, read from its counters). foreign must allocate what missing
// does within slack allocations and bslack bytes per run.
func SameAllocsBy(tb testing.TB, what string, n int, allocs func(n int, fn func()) (allocs, bytes float64), slack, bslack float64, foreign, missing func()) {
	tb.Helper()
	same := func(af, bf, am, bm float64) bool {
		return af <= am+slack && af >= am-slack && bf <= bm+bslack && bf >= bm-bslack
	}
	// Three rounds, alternating. A pool emptied by a GC (the store's
	// transactions, the bindings' buffers) only adds to a round, never
	// takes from it: the least of each side's rounds is its cost. A
	// change of the store's state between rounds (a checkpoint that
	// empties its layers makes every read of it cost one allocation
	// more) changes both sides from then on: one round in which both
	// agree shows there is no oracle, which would show in every round.
	var (
		af, bf, am, bm = math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1)
		agreed         bool
	)
	for range 3 {
		a, b := allocs(n, foreign)
		c, d := allocs(n, missing)
		agreed = agreed || same(a, b, c, d)
		af, bf, am, bm = min(af, a), min(bf, b), min(am, c), min(bm, d)
	}
	tb.Logf("%s: foreign %.1f allocs %.0f B, missing %.1f allocs %.0f B per call", what, af, bf, am, bm)
	if !agreed && !same(af, bf, am, bm) {
		tb.Errorf("%s: a foreign task costs %.1f allocations (%.0f B), a missing one %.1f (%.0f B)", what, af, bf, am, bm)
	}
}

// Neighbour returns an id beside id in key order (its last character
// changed), which no task has when id is a task's: a store's lookups of
// the two walk the same pages.
func Neighbour(id string) string {
	repl := byte('0')
	if id[len(id)-1] == '0' {
		repl = '1'
	}
	return id[:len(id)-1] + string(repl)
}
