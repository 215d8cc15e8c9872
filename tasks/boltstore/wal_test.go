package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
)

// noCheckpoints keeps every change in the log and in memory until Close.
var noCheckpoints = Options{CheckpointEvery: time.Hour, CheckpointBytes: 1 << 40, LockTimeout: time.Second}

// openLog opens a new store in a temporary directory with checkpoints
// off, and returns it with its path; the caller closes it.
func openLog(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s, err := Open(path, noCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

func walTask(id string) *tasks.Record {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	return &tasks.Record{Owner: "o", Task: a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking}}, CreatedAt: now, UpdatedAt: now}
}

// createN creates tasks t-from .. t-(to-1), one commit each.
func createN(t *testing.T, s *Store, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		id := fmt.Sprintf("t-%03d", i)
		if _, _, err := s.Create(context.Background(), tasks.IdemKey{Owner: "o", MessageID: id}, walTask(id), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// crashCopy copies the store file and its log while s runs, as a crash
// would leave them (nothing checkpoints meanwhile: noCheckpoints), and
// returns the copy's path.
func crashCopy(t *testing.T, path string) string {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "a2ad.db")
	testkit.CopyFile(t, path, out)
	if err := os.Mkdir(engine.Dir(out), 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(engine.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		testkit.CopyFile(t, filepath.Join(engine.Dir(path), e.Name()), filepath.Join(engine.Dir(out), e.Name()))
	}
	return out
}

// wantTasks checks that tasks t-from .. t-(to-1) are in s, and t-to is not.
func wantTasks(t *testing.T, s *Store, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		_, err := s.Get(context.Background(), "o", fmt.Sprintf("t-%03d", i), tasks.Whole)
		switch {
		case i < to && err != nil:
			t.Fatalf("t-%03d: %v", i, err)
		case i == to && !errors.Is(err, tasks.ErrNotFound):
			t.Fatalf("t-%03d: %v, want not found", i, err)
		}
	}
	if r, err := s.Check(context.Background()); err != nil || !r.Clean() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
}

// TestLogReplayedAtOpen: what a crash leaves (the file as of the last
// checkpoint, and the log) opens with every acknowledged change: those
// checkpointed, and those only in the log.
func TestLogReplayedAtOpen(t *testing.T) {
	s, path := openLog(t)
	defer s.Close()
	createN(t, s, 0, 20)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	createN(t, s, 20, 50)
	if _, _, _, err := s.Update(context.Background(), "o", "t-003", nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
		r.Task.Status.State = a2a.StateCompleted
		return []tasks.Event{{Status: &r.Task.Status}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	out := crashCopy(t, path)
	c, err := Open(out, noCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantTasks(t, c, 0, 50)
	if r, _ := c.Get(context.Background(), "o", "t-003", tasks.Whole); r.State() != a2a.StateCompleted {
		t.Fatalf("t-003 is %s, want the update replayed", r.State())
	}
	// The file holds it all now, and the log is empty: a second open
	// replays nothing and finds the same.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if pending, _ := engine.Pending(out); pending {
		t.Fatal("segments left after a clean close")
	}
	c, err = Open(out, noCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	wantTasks(t, c, 0, 50)
}

// TestLogMissingSegment: a segment gone from the middle of the log (not a
// crash: someone removed it) is damage, named, not a silent loss.
func TestLogMissingSegment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	opts := noCheckpoints
	opts.WALSegmentBytes = 4096
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	createN(t, s, 0, 60)
	if len(s.db.Position().Segments) < 3 {
		t.Fatalf("%d segments; want at least 3", len(s.db.Position().Segments))
	}
	out := crashCopy(t, path)
	gone := s.db.Position().Segments[1]
	_, stop0, err := engine.ReadSegment(s.db.Position().Segments[0].Path, s.db.Position().Segments[0].First)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(engine.Dir(out), filepath.Base(gone.Path))); err != nil {
		t.Fatal(err)
	}
	_, err = Open(out, opts)
	next := s.db.Position().Segments[2].First
	want := fmt.Sprintf("open task store %s: the store file %s cannot be opened as it is: its write-ahead log %s is damaged: segment %s, record %d at byte %d: records %d to %d are missing: the next segment, %s, begins with record %d; after it the log holds %d acknowledged records (%d to 60) that cannot be applied without it, writing %d tasks: t-%03d",
		out, out, engine.Dir(out), filepath.Base(s.db.Position().Segments[0].Path), gone.First, stop0, gone.First, next-1, filepath.Base(s.db.Position().Segments[2].Path), next, 60-next+1, next, 60-next+1, next-1)
	if !errors.Is(err, ErrDamaged) || !errors.Is(err, ErrLog) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Open = %v, want %q", err, want)
	}
}
