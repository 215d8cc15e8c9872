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

// TestStoreKindOf: the opener table finds a store's kind by the scheme of
// --store; anything else is a bbolt file's path.
func TestStoreKindOf(t *testing.T) {
	for _, c := range []struct {
		store, noun, target, name string
	}{
		{"/var/lib/a2ad/a2ad.db", "a bbolt store file", "/var/lib/a2ad/a2ad.db", "/var/lib/a2ad/a2ad.db"},
		{"a2ad.db", "a bbolt store file", "a2ad.db", "a2ad.db"},
		{"bolt:/var/lib/a2ad/a2ad.db", "a bbolt store file", "/var/lib/a2ad/a2ad.db", "bolt:/var/lib/a2ad/a2ad.db"},
		{"postgres:a2ad.db", "a bbolt store file", "postgres:a2ad.db", "postgres:a2ad.db"},
		{"postgres://a2ad:secret@db.example:5433/a2ad?sslmode=require", "a PostgreSQL database",
			"postgres://a2ad:secret@db.example:5433/a2ad?sslmode=require", "postgres://a2ad@db.example:5433/a2ad"},
		{"postgresql://a2ad@db.example/a2ad", "a PostgreSQL database", "postgresql://a2ad@db.example/a2ad", "postgres://a2ad@db.example:5432/a2ad"},
	} {
		k, target := storeKindOf(c.store)
		if k.noun != c.noun || target != c.target || storeName(c.store) != c.name {
			t.Errorf("storeKindOf(%q) = %s, %q, named %q; want %s, %q, named %q", c.store, k.noun, target, storeName(c.store), c.noun, c.target, c.name)
		}
	}
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
