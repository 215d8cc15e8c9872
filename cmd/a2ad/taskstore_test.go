package main

import (
	"path/filepath"
	"strings"
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

// TestStoreToolsTakeABoltURL: the tools take a bbolt file as bolt:PATH too.
func TestStoreToolsTakeABoltURL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	writeTasks(t, path, "t", 3, 100)
	code, stdout, stderr := runA2AD(t, nil, "store", "check", "--store", "bolt:"+path)
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "checked "+path+": ") {
		t.Fatalf("a2ad store check --store bolt:%s = %d\nstdout %q\nstderr %q", path, code, stdout, stderr)
	}
}
