package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// TestDBMatchesModel runs random writes (puts, deletes, deletes through a
// cursor, failed writes) through a DB, with random checkpoints between
// them, so that reads meet keys in the active layer, the frozen one and
// the file at once; after each step every read (Get, forward and
// backward walks, Seek, KeyN) must match a map of what was committed.
// It then reopens the file and compares again.
func TestDBMatchesModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.db")
	db := mustOpen(t, path, noCheckpoints)
	rng := rand.New(rand.NewPCG(3, 4))
	model := map[string]string{}
	key := func() string { return fmt.Sprintf("m%03d", rng.IntN(120)) }
	errUndo := errors.New("undo")
	for step := range 400 {
		next := maps(model)
		fail := rng.IntN(8) == 0 // the write fails: nothing of it stays
		err := db.Update(context.Background(), func(tx *Tx) error {
			b := tx.Bucket(bucketMore)
			for range 1 + rng.IntN(6) {
				k := key()
				switch rng.IntN(5) {
				case 0:
					if err := b.Delete([]byte(k)); err != nil {
						return err
					}
					delete(next, k)
				case 1: // delete every key under a prefix, walking
					c := b.Cursor()
					p := k[:3]
					for ck, _ := c.Seek([]byte(p)); ck != nil && string(ck[:3]) == p; ck, _ = c.Next() {
						delete(next, string(ck))
						if err := c.Delete(); err != nil {
							return err
						}
					}
				default:
					v := fmt.Sprint(step, rng.IntN(1000))
					if err := b.Put([]byte(k), []byte(v)); err != nil {
						return err
					}
					next[k] = v
				}
			}
			if fail {
				return errUndo
			}
			return nil
		})
		if fail != errors.Is(err, errUndo) || (!fail && err != nil) {
			t.Fatalf("step %d: Update = %v", step, err)
		}
		if !fail {
			model = next
		}
		if rng.IntN(10) == 0 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		compare(t, db, model, rng, step)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = mustOpen(t, path, noCheckpoints)
	defer db.Close()
	compare(t, db, model, rng, -1)
}

// compare fails the test unless every read of bucket more in db matches
// model.
func compare(t *testing.T, db *DB, model map[string]string, rng *rand.Rand, step int) {
	t.Helper()
	want := make([]string, 0, len(model))
	for k := range model {
		want = append(want, k)
	}
	slices.Sort(want)
	err := db.View(func(tx *Tx) error {
		b := tx.Bucket(bucketMore)
		if n := b.KeyN(); n != len(want) {
			t.Fatalf("step %d: KeyN %d, want %d", step, n, len(want))
		}
		var fwd, back []string
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if string(v) != model[string(k)] {
				t.Fatalf("step %d: %s holds %q, want %q", step, k, v, model[string(k)])
			}
			fwd = append(fwd, string(k))
		}
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			back = append(back, string(k))
		}
		slices.Reverse(back)
		if !slices.Equal(fwd, want) || !slices.Equal(back, want) {
			t.Fatalf("step %d: forward %v, backward %v, want %v", step, fwd, back, want)
		}
		for range 10 {
			s := fmt.Sprintf("m%03d", rng.IntN(125))
			i, _ := slices.BinarySearch(want, s)
			k, _ := c.Seek([]byte(s))
			if (i == len(want)) != (k == nil) || (k != nil && string(k) != want[i]) {
				t.Fatalf("step %d: Seek(%s) = %s, want index %d of %v", step, s, k, i, want)
			}
			v, ok := model[s]
			if got := b.Get([]byte(s)); string(got) != v || (got == nil) == ok {
				t.Fatalf("step %d: Get(%s) = %q, want %q", step, s, got, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
