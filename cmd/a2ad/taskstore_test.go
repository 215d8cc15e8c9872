package main

import (
	"testing"

	"github.com/a2ad/a2ad/tasks/boltstore"
)

// boltOf is m's store, which tb expects to be a bbolt file.
func boltOf(tb testing.TB, m *Main) *boltstore.Store {
	tb.Helper()
	s, ok := m.store.(*boltstore.Store)
	if !ok {
		tb.Fatalf("the store is a %T, not a bbolt file", m.store)
	}
	return s
}
