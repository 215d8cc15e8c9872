package boltstore_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// TestInspectorBoundsAndSizes pins what the suite leaves to each store:
// the overview's sizes are the file's, a page bound by ScanLimit stops at
// the last task it examined, and finding that more tasks follow costs
// one task more.
func TestInspectorBoundsAndSizes(t *testing.T) {
	s := MustOpen(t, "")
	for i := range 30 {
		create(t, s, newRecord(fmt.Sprintf("t%02d", i), "o", a2a.StateCompleted, seedTime))
	}
	in := s.Inspector()
	o, err := in.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.DB().Path()); err != nil || o.FileBytes != fi.Size() || o.DataBytes <= 0 || o.DataBytes > o.FileBytes {
		t.Errorf("FileBytes %d, DataBytes %d; file: %v %v", o.FileBytes, o.DataBytes, fi.Size(), err)
	}
	p, err := in.Tasks(ctx, tasks.TaskQuery{}, "t05", 1)
	if err != nil || len(p.Tasks) != 1 || p.Next != "t04" || p.Scanned != 2 {
		t.Fatalf("Tasks after t05: %+v, %v; want t04, next t04, 2 scanned", p, err)
	}
	in.ScanLimit = 4
	p, err = in.Tasks(ctx, tasks.TaskQuery{FunctionID: "nope"}, "", 10)
	if err != nil || len(p.Tasks) != 0 || p.Next != "t26" || p.Scanned != 4 {
		t.Errorf("Tasks with a scan bound of 4: %+v, %v; want no tasks, next t26, 4 scanned", p, err)
	}
}

// TestInspectorWritesNothing calls every Inspector method many times: not
// a byte of the store file changes.
func TestInspectorWritesNothing(t *testing.T) {
	s := MustOpen(t, seedStore(t))
	storetest.GiveUp(t, s, "dead")
	before, hash := testkit.DumpStore(t, s.DB())
	in := s.Inspector()
	alice := "alice"
	for range 20 {
		if _, err := in.Overview(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"t-1", "t-2", "t-3", "t-4", "dead", "nope"} {
			if _, _, err := in.Task(ctx, id); err != nil && id != "nope" {
				t.Fatal(err)
			}
		}
		for _, q := range []tasks.TaskQuery{{}, {Owner: &alice, State: a2a.StateWorking}} {
			for after := ""; ; {
				p, err := in.Tasks(ctx, q, after, 1)
				if err != nil {
					t.Fatal(err)
				}
				if after = p.Next; after == "" {
					break
				}
			}
		}
		if _, _, err := in.DeadLetters(ctx, 0, 10); err != nil {
			t.Fatal(err)
		}
	}
	if after, afterHash := testkit.DumpStore(t, s.DB()); after != before || afterHash != hash {
		t.Errorf("the store changed (-before +after):\n%s", cmp.Diff(before, after))
	}
}
