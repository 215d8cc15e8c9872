package boltstore

import "testing"

// SetBeforeSwap makes Compact call fn once the copy is written and
// locked, before it takes the store's name, until the test ends.
func SetBeforeSwap(tb testing.TB, fn func()) {
	testHookBeforeSwap = fn
	tb.Cleanup(func() { testHookBeforeSwap = nil })
}
