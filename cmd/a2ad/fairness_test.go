package main

import (
	"fmt"
	"slices"
	"time"
)

// Speed is measured in benchmarks, not in timed tests; the tests that
// time a victim's calls (TestSlowBodyFlood, TestPushOutboxHoldsUnderAn-
// AnswerLoop, the soak) pin fairness instead: one hostile caller must not
// slow another down. An absolute bound fails whenever the machine is
// busy, so the victim's calls under attack are judged against its own
// calls in the same run without the attack: a call is slow past
// slowFactor times the baseline's median (the median, not a tail, since
// one hiccup of a shared machine must not set the bar) and past
// slowFloor; the attack degrades the victim when more than slowShare of
// its calls are slow. Harm done by the attacker is not a hiccup: it
// holds up most calls, or all of them.
const (
	slowFactor = 10
	slowFloor  = 50 * time.Millisecond
	slowShare  = 0.05
)

// degradation is how a victim's calls fared under an attack.
type degradation struct {
	baseN, n        int
	baseP50, limit  time.Duration // the baseline's median; a slower call than limit is slow
	p50, p99, worst time.Duration // of the calls under attack
	slow            int
}

// measureDegradation compares the calls under attack (during) with the
// same caller's without one (base); neither may be empty.
func measureDegradation(base, during []time.Duration) degradation {
	b, d := slices.Sorted(slices.Values(base)), slices.Sorted(slices.Values(during))
	g := degradation{baseN: len(b), n: len(d), baseP50: b[len(b)/2]}
	g.limit = max(slowFloor, slowFactor*g.baseP50)
	g.p50, g.p99, g.worst = d[len(d)/2], p99(d), d[len(d)-1]
	for _, x := range d {
		if x > g.limit {
			g.slow++
		}
	}
	return g
}

// degraded reports whether more than slowShare of the calls were slow.
func (g degradation) degraded() bool { return float64(g.slow) > slowShare*float64(g.n) }

func (g degradation) String() string {
	return fmt.Sprintf("%d of %d calls over %v (%d× the median %v of %d calls without the attack, at least %v; at most %.0f%% may be); p50 %v, p99 %v, max %v",
		g.slow, g.n, g.limit, slowFactor, g.baseP50, g.baseN, slowFloor, 100*slowShare, g.p50, g.p99, g.worst)
}
