// Package crashpoint lets a crash test kill the process at a named step of
// the store's write-ahead log and checkpoint, the way a power cut or a
// SIGKILL would: A2AD_TEST_CRASH_AT=name (or name:n, the nth time the step is
// reached) makes Hit(name) kill the process with SIGKILL there. Without the
// variable Hit is a load and a compare.
package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// Env is the variable read once at start.
const Env = "A2AD_TEST_CRASH_AT"

var (
	target string
	left   atomic.Int64
)

func init() { set(os.Getenv(Env)) }

func set(v string) {
	name, n := v, int64(1)
	if i := strings.LastIndexByte(v, ':'); i >= 0 {
		if c, err := strconv.ParseInt(v[i+1:], 10, 64); err == nil && c > 0 {
			name, n = v[:i], c
		}
	}
	target = name
	left.Store(n)
}

// Hit kills the process if name is the step A2AD_TEST_CRASH_AT names and this
// is the time it names.
func Hit(name string) {
	if target == "" || name != target {
		return
	}
	if left.Add(-1) != 0 {
		return
	}
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill() // SIGKILL: no deferred function, no flush
	}
	select {} // the signal is on its way
}
