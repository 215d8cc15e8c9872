package testkit

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Layout is where a bbolt file keeps what the damage tests hit, as bbolt
// reads it.
type Layout struct {
	PageSize int64
	Pages    int64 // the high-water mark: pages in use
	Freelist int64 // the freelist's page
	Root     int64 // the root page of the bucket asked for
}

// ReadLayout reads the layout of the bbolt file at path, with the root
// page of bucket.
func ReadLayout(tb testing.TB, path, bucket string) Layout {
	tb.Helper()
	var l Layout
	ViewStore(tb, path, func(tx *bolt.Tx) error {
		l.PageSize = int64(tx.DB().Info().PageSize)
		l.Pages = tx.Size() / l.PageSize
		for id := 2; int64(id) < l.Pages; id++ {
			if pi, err := tx.Page(id); err == nil && pi != nil && pi.Type == "freelist" {
				l.Freelist = int64(id)
			}
		}
		l.Root = int64(tx.Bucket([]byte(bucket)).Root())
		return nil
	})
	return l
}

// Child is an element of a branch page: the first key under a page, and
// the page.
type Child struct {
	Key  string
	Page int64
}

// Children reads the elements of the bucket's root page from the raw
// file at path (bbolt's page header: id(8) flags(2) count(2) overflow(4);
// a branch element: pos(4) ksize(4) pgid(8), its key pos bytes further
// on; in the machine's byte order). The test fails if the root is no
// branch page: the test should write more.
func (l Layout) Children(tb testing.TB, path string) []Child {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	ne := binary.NativeEndian
	p := raw[l.Root*l.PageSize:]
	if ne.Uint16(p[8:]) != 0x01 {
		tb.Fatalf("the bucket's root page %d is no branch page: write more", l.Root)
	}
	var out []Child
	for i := range int(ne.Uint16(p[10:])) {
		e := 16 + i*16
		pos, ksize := int(ne.Uint32(p[e:])), int(ne.Uint32(p[e+4:]))
		out = append(out, Child{Key: string(p[e+pos : e+pos+ksize]), Page: int64(ne.Uint64(p[e+8:]))})
	}
	return out
}

// Garbage is n bytes of 0xA5: as a page id, 11936128518282651045; as
// page flags, 0xa5a5.
func Garbage(n int64) []byte { return bytes.Repeat([]byte{0xA5}, int(n)) }
