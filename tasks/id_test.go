package tasks

import (
	"regexp"
	"testing"
	"time"
)

func TestNewIDIsATimeOrderedUUID(t *testing.T) {
	v7 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	prev := newID()
	for range 1000 {
		id := newID()
		if !v7.MatchString(id) {
			t.Fatalf("%q is not a version 7 UUID", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		if id[:13] < prev[:13] { // the millisecond prefix never goes back
			t.Fatalf("id %s sorts before the earlier %s", id, prev)
		}
		prev = id
	}
	a := newID()
	time.Sleep(2 * time.Millisecond)
	if b := newID(); b <= a {
		t.Fatalf("an id made later (%s) does not sort after %s", b, a)
	}
}
