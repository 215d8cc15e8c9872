package stores_test

import (
	"testing"

	"github.com/a2ad/a2ad/tasks/stores"
)

// TestOf: the opener table finds a store's kind by the scheme of
// --store; anything else is a bbolt file's path.
func TestOf(t *testing.T) {
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
		k, target := stores.Of(c.store)
		if k.Noun != c.noun || target != c.target || stores.Name(c.store) != c.name {
			t.Errorf("stores.Of(%q) = %s, %q, named %q; want %s, %q, named %q", c.store, k.Noun, target, stores.Name(c.store), c.noun, c.target, c.name)
		}
	}
}
