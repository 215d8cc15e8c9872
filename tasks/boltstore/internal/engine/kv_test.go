package engine

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCursorMergesLayers compares the merged cursor over random layers
// and a random bbolt bucket with a cursor over the merged map, for random
// walks of First, Last, Seek, Next and Prev, and Get and KeyN.
func TestCursorMergesLayers(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "kv.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const bi = 0 // buckets[0], of testLayout
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return fmt.Appendf(nil, "k%02d", rng.IntN(40)) }
	for round := range 300 {
		file := map[string]string{}
		err := db.Update(func(tx *bolt.Tx) error {
			_ = tx.DeleteBucket(buckets[bi])
			b, err := tx.CreateBucket(buckets[bi])
			if err != nil {
				return err
			}
			for range rng.IntN(30) {
				k, v := key(), fmt.Sprint(rng.IntN(1000))
				file[string(k)] = v
				if err := b.Put(k, []byte(v)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := maps(file)
		var layers [2]*layer // frozen, active
		var w wstate
		for j := range layers {
			if rng.IntN(4) == 0 {
				continue // no such layer
			}
			l := new(layer)
			for range rng.IntN(20) {
				k := key()
				if rng.IntN(3) == 0 {
					w.change(l, bi, item{k: k, del: true})
					delete(want, string(k))
				} else {
					v := fmt.Sprint(rng.IntN(1000))
					w.change(l, bi, item{k: k, v: []byte(v)})
					want[string(k)] = v
				}
			}
			layers[j] = l
		}
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		err = db.View(func(tx *bolt.Tx) error {
			tn := &Tx{tx: tx, l: &testLayout, frozen: layers[0], active: layers[1]}
			b := tn.Bucket(buckets[bi])
			if n := b.KeyN(); n != len(keys) {
				t.Fatalf("round %d: KeyN %d, want %d", round, n, len(keys))
			}
			for range 20 {
				k := key()
				if got, ok := b.Get(k), want[string(k)]; string(got) != ok || (got == nil) != !hasKey(want, k) {
					t.Fatalf("round %d: Get(%s) = %q, want %q", round, k, got, ok)
				}
			}
			c := b.Cursor()
			pos := -1 // index in keys; -1 or len: off the end
			for step := range 40 {
				var gk, gv []byte
				var op string
				switch r := rng.IntN(6); {
				case r == 0:
					op, pos = "First", 0
					gk, gv = c.First()
				case r == 1:
					op, pos = "Last", len(keys)-1
					gk, gv = c.Last()
				case r == 2:
					s := key()
					op = "Seek " + string(s)
					pos, _ = slices.BinarySearch(keys, string(s))
					gk, gv = c.Seek(s)
				case r <= 4:
					if pos < 0 || pos >= len(keys) {
						continue // bbolt's cursor off the end is not specified
					}
					op = "Next"
					pos++
					gk, gv = c.Next()
				default:
					if pos < 0 || pos >= len(keys) {
						continue
					}
					op = "Prev"
					pos--
					gk, gv = c.Prev()
				}
				var wk, wv string
				if pos >= 0 && pos < len(keys) {
					wk, wv = keys[pos], want[keys[pos]]
				}
				if string(gk) != wk || string(gv) != wv || (gk == nil) != (wk == "") {
					t.Fatalf("round %d step %d %s: got %q=%q, want %q=%q (keys %v)", round, step, op, gk, gv, wk, wv, keys)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCursorDeletesAsItWalks deletes keys through the writer's cursor as
// the store does (seek to a prefix, delete, seek again) over a file and a
// frozen layer: every key under the prefix goes, and only those.
func TestCursorDeletesAsItWalks(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "kv.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(buckets[1])
		if err != nil {
			return err
		}
		for _, k := range []string{"a1", "p1", "p3", "p5", "z1"} {
			if err := b.Put([]byte(k), []byte("file")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var w wstate
	frozen, active := new(layer), new(layer)
	w.change(frozen, 1, item{k: []byte("p2"), v: []byte("frozen")})
	w.change(frozen, 1, item{k: []byte("p3"), del: true})
	w.change(active, 1, item{k: []byte("p4"), v: []byte("active")})
	err = db.View(func(tx *bolt.Tx) error {
		tn := &Tx{tx: tx, l: &testLayout, frozen: frozen, active: active, w: &w}
		c := tn.Bucket(buckets[1]).Cursor()
		var gone []string
		for k, _ := c.Seek([]byte("p")); k != nil && k[0] == 'p'; k, _ = c.Seek([]byte("p")) {
			gone = append(gone, string(k))
			if err := c.Delete(); err != nil {
				return err
			}
			if len(gone) > 10 {
				t.Fatalf("deleting does not end: %v", gone)
			}
		}
		if want := []string{"p1", "p2", "p4", "p5"}; !slices.Equal(gone, want) {
			t.Errorf("deleted %v, want %v", gone, want)
		}
		var left []string
		_ = tn.Bucket(buckets[1]).ForEach(func(k, _ []byte) error { left = append(left, string(k)); return nil })
		if want := []string{"a1", "z1"}; !slices.Equal(left, want) {
			t.Errorf("left %v, want %v", left, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func hasKey(m map[string]string, k []byte) bool { _, ok := m[string(k)]; return ok }
