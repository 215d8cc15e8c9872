package boltstore_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// seedWorking writes n working tasks with a 1 KiB input each, so that the
// tasks and active buckets span several pages under a branch page, and
// closes the store.
func seedWorking(tb testing.TB, path string, n int) {
	tb.Helper()
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	input, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", 1024)})
	for i := range n {
		id := fmt.Sprintf("t-%05d", i)
		rec := newRecord(id, "o", a2a.StateWorking, seedTime)
		rec.Input = input
		if _, _, err := s.Create(ctx, key("o", id, id), rec, []tasks.Event{statusEvent(a2a.StateWorking)}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
}

// fileLayout is where a store file keeps what the damages below hit:
// the active bucket's layout (Root is its root page), the root bucket's
// page, and the leaf pages under the active bucket's root.
type fileLayout struct {
	testkit.Layout
	rootBucket int64
	leaves     []int64
}

func readLayout(tb testing.TB, path string) fileLayout {
	tb.Helper()
	l := fileLayout{Layout: testkit.ReadLayout(tb, path, "active")}
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	// The root bucket's page is in the meta with the higher txid; the
	// meta follows the 16-byte page header: root is at 16+16 (in the
	// machine's byte order).
	ne := binary.NativeEndian
	m0, m1 := raw[16:], raw[l.PageSize+16:]
	if ne.Uint64(m1[48:]) > ne.Uint64(m0[48:]) {
		m0 = m1
	}
	l.rootBucket = int64(ne.Uint64(m0[16:]))
	for _, c := range l.Children(tb, path) {
		l.leaves = append(l.leaves, c.Page)
	}
	return l
}

// TestDamagedFiles damages a populated store in the ways issue 13 names
// (cut short, garbage over its last pages and its freelist, garbage in a
// leaf page) and opens, checks, backs up and compacts it: each says the
// file is damaged and what is wrong (*DamagedError), and none panics or
// crashes the test binary (a fault on the mapped file would kill it).
func TestDamagedFiles(t *testing.T) {
	// A compacted store: its root bucket and freelist are its last pages.
	seeded := filepath.Join(t.TempDir(), "seed.db")
	seedWorking(t, seeded, 300)
	if _, err := boltstore.Compact(seeded, "", 0); err != nil {
		t.Fatal(err)
	}
	l := readLayout(t, seeded)
	if l.Freelist == 0 || len(l.leaves) < 2 {
		t.Fatalf("seeded layout %+v: want a freelist page and a branch over the active leaves", l)
	}
	end := l.Pages * l.PageSize
	leaf := l.leaves[1]
	tail := end - 2*l.PageSize
	tailWant := fmt.Sprintf("its freelist page %d is no freelist page (flags 0xa5a5)", l.Freelist)
	if l.rootBucket*l.PageSize >= tail {
		tailWant = fmt.Sprintf("its root bucket page %d is no branch or leaf page (flags 0xa5a5)", l.rootBucket)
	}
	const pastTheMap = "leaf element pointing past the map"
	for _, tc := range []struct {
		name   string
		damage func(path string)
		// atOpen: Open refuses the file (before bbolt maps it, or when
		// bbolt panics at open); otherwise Open succeeds and the start-up
		// scans (ActiveStates, Active) fail.
		atOpen bool
		want   string // DamagedError.What; a prefix when it ends in "..."
		check  string // Check's What, if not want
	}{
		{"cut short", func(path string) {
			if err := os.Truncate(path, end/2); err != nil {
				t.Fatal(err)
			}
		}, true, fmt.Sprintf("the file is %d bytes, but its pages reach to byte %d (it was cut short)", end/2, end), ""},
		{"garbage over its last pages", func(path string) {
			testkit.OverwriteAt(t, path, tail, testkit.Garbage(fileSize(t, path)-tail))
		}, true, tailWant, ""},
		{"garbage freelist", func(path string) {
			testkit.OverwriteAt(t, path, l.Freelist*l.PageSize, testkit.Garbage(l.PageSize))
		}, true, fmt.Sprintf("its freelist page %d is no freelist page (flags 0xa5a5)", l.Freelist), ""},
		{"freelist listing a page past the end", func(path string) {
			// A freelist entry for page 2^40: bbolt would hand it out.
			testkit.OverwriteAt(t, path, l.Freelist*l.PageSize+16, binary.NativeEndian.AppendUint64(nil, 1<<40))
			testkit.OverwriteAt(t, path, l.Freelist*l.PageSize+10, binary.NativeEndian.AppendUint16(nil, 1))
		}, true, fmt.Sprintf("its freelist page %d lists page %d, outside pages 2 to %d", l.Freelist, uint64(1<<40), l.Pages-1), ""},
		{"garbage leaf page", func(path string) {
			testkit.OverwriteAt(t, path, leaf*l.PageSize, testkit.Garbage(l.PageSize))
		}, false, fmt.Sprintf("reading it failed: assertion failed: Page expected to be: %d, but self identifies as 11936128518282651045", leaf), ""},
		{pastTheMap, func(path string) {
			// The first element's key 1 GiB further on: past the file and
			// the map, so reading it faults (SIGSEGV or SIGBUS).
			testkit.OverwriteAt(t, path, leaf*l.PageSize+16+4, binary.NativeEndian.AppendUint32(nil, 1<<30))
		}, false, "reading it failed: a page points outside the file (a fault at ...", fmt.Sprintf("page %d: element 0's key or value lies outside the page", leaf)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a2ad.db")
			testkit.CopyFile(t, seeded, path)
			tc.damage(path)
			wantDamaged := func(what string, err error) {
				t.Helper()
				want := tc.want
				if what == "Check" && tc.check != "" {
					want = tc.check
				}
				var de *boltstore.DamagedError
				if !errors.As(err, &de) || !errors.Is(err, boltstore.ErrDamaged) {
					t.Fatalf("%s: %v, want a DamagedError", what, err)
				}
				if de.Path != path {
					t.Errorf("%s: DamagedError.Path %q, want %q", what, de.Path, path)
				}
				t.Logf("%s: %v", what, err)
				if p, ok := strings.CutSuffix(want, "..."); ok {
					if !strings.HasPrefix(de.What, p) {
						t.Errorf("%s: DamagedError.What %q, want %q", what, de.What, want)
					}
				} else if de.What != want {
					t.Errorf("%s: DamagedError.What %q, want %q", what, de.What, want)
				}
			}

			noFault := false
			// Twice: a refused Open leaves the file unlocked.
			for range 2 {
				s, err := boltstore.Open(path, boltstore.Options{LockTimeout: 200 * time.Millisecond})
				if tc.atOpen {
					wantDamaged("Open", err)
					continue
				}
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				_, err = s.ActiveStates(ctx)
				if tc.name == pastTheMap && !errors.Is(err, boltstore.ErrDamaged) {
					// The address 1 GiB past the map was mapped in this
					// process (another mapping happened to lie there), so
					// nothing faulted to recover from: a layout accident
					// (seen once in CI), not a bug. Check, which bounds each
					// element by its page, must still find the damage.
					t.Logf("ActiveStates: %v: no fault, the address past the map was mapped", err)
					noFault = true
				} else {
					wantDamaged("ActiveStates", err)
					_, err = s.Active(ctx)
					wantDamaged("Active", err)
				}
				// What does not reach the damaged page is served.
				if _, err := s.Get(ctx, "o", "t-00000", tasks.Whole); err != nil {
					t.Errorf("Get of a task beside the damage: %v", err)
				}
				if err := s.Close(); err != nil {
					t.Fatalf("Close after the damage was found: %v", err)
				}
			}
			r, err := boltstore.Check(path, 200*time.Millisecond)
			if r != nil {
				t.Errorf("Check returned a report: %+v", r)
			}
			wantDamaged("Check", err)
			if noFault {
				return // Compact copies what it reads, and here it reads no fault
			}
			if tc.atOpen {
				n, err := boltstore.BackupFile(ctx, path, io.Discard, 200*time.Millisecond)
				wantDamaged("BackupFile", err)
				if n != 0 {
					t.Errorf("BackupFile copied %d bytes of a damaged file", n)
				}
			}
			if _, err := boltstore.Compact(path, "", 200*time.Millisecond); err == nil {
				t.Fatal("Compact of a damaged file succeeded")
			} else {
				wantDamaged("Compact", err)
			}
			if left, _ := filepath.Glob(path + "?*"); len(left) > 0 && (len(left) > 1 || left[0] != path+".wal") {
				t.Errorf("Compact of a damaged file left %q", left)
			}
		})
	}
}
