package tasks

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

// TestStampsFormatAsA2A: a cached timestamp is a2a.Timestamp's, for
// times in one millisecond, in the next, a second apart, and in other
// locations; which holds only while a2a.Timestamp shows milliseconds at
// most, as times within one always format alike.
func TestStampsFormatAsA2A(t *testing.T) {
	var ss stamps
	east := time.FixedZone("east", 5*3600+1800)
	base := time.Date(2026, 11, 24, 9, 59, 59, 998_000_000, time.UTC)
	for i := 0; i < 2000; i++ {
		at := base.Add(time.Duration(rand.IntN(3_000_000))) // within 3 ms
		if i%3 == 0 {
			at = at.Add(time.Duration(rand.IntN(3)) * time.Second).In(east)
		}
		if got, want := ss.format(at), a2a.Timestamp(at); got != want {
			t.Fatalf("format(%v) = %s, want %s", at, got, want)
		}
		floor := at.Truncate(time.Millisecond)
		if a2a.Timestamp(floor) != a2a.Timestamp(at) {
			t.Fatalf("a2a.Timestamp shows more than milliseconds: %s and %s", a2a.Timestamp(floor), a2a.Timestamp(at))
		}
	}
}
