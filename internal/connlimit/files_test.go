package connlimit_test

import (
	"testing"

	"github.com/a2ad/a2ad/internal/connlimit"
)

func TestMaxFor(t *testing.T) {
	for _, tc := range []struct {
		want    int
		nofile  uint64
		n       int
		lowered bool
	}{
		{4096, 1 << 20, 4096, false}, // systemd's and Docker's usual hard limits
		{4096, 4096 + connlimit.FDReserve, 4096, false},
		{4096, 4096, 4096 - connlimit.FDReserve, true},
		{4096, 1024, 512, true}, // a shell's default soft limit
		{4096, 256, 128, true},  // never below half the limit
		{0, 1024, 0, false},     // no cap stays no cap
		{100, 0, 100, false},    // the limit could not be read
	} {
		n, lowered := connlimit.MaxFor(tc.want, tc.nofile)
		if n != tc.n || lowered != tc.lowered {
			t.Errorf("connlimit.MaxFor(%d, %d) = %d, %v; want %d, %v", tc.want, tc.nofile, n, lowered, tc.n, tc.lowered)
		}
	}
}
