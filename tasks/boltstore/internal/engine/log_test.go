package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/testkit"
)

// TestReplayAtOpen: what a crash leaves in the log, acknowledged and not
// checkpointed, is in the file once it opens again; a clean close then
// leaves no segment to replay.
func TestReplayAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.db")
	db := mustOpen(t, path, noCheckpoints)
	defer db.Close()
	putN(t, db, 0, 30)
	out := crashCopy(t, path)
	c := mustOpen(t, out, noCheckpoints)
	wantKeys(t, c, 0, 30)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if pending, err := Pending(out); err != nil || pending {
		t.Fatalf("Pending after a clean close = %v, %v; want false", pending, err)
	}
	c = mustOpen(t, out, noCheckpoints)
	defer c.Close()
	wantKeys(t, c, 0, 30)
}

// TestTornRecord: a last record torn in its write (never synced, so
// never acknowledged), cut anywhere in its header or its ops, is dropped
// at replay; every record before it is applied, and the log goes on from
// there.
func TestTornRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.db")
	db := mustOpen(t, path, noCheckpoints)
	defer db.Close()
	putN(t, db, 0, 10)
	at := db.Position() // where the last record will begin
	putN(t, db, 10, 11)
	end := db.Position().Offset
	seg := filepath.Base(at.Segments[len(at.Segments)-1].Path)
	for _, cut := range []int64{0, 3, HeaderSize - 1, HeaderSize, HeaderSize + 5, end - at.Offset - 1} {
		t.Run(fmt.Sprint("cut at ", cut), func(t *testing.T) {
			out := crashCopy(t, path)
			f, err := os.OpenFile(filepath.Join(Dir(out), seg), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			// What the write did not reach holds something else.
			b := make([]byte, end-at.Offset-cut)
			if _, err := f.ReadAt(b, at.Offset+cut); err != nil {
				t.Fatal(err)
			}
			for i := range b {
				b[i] = ^b[i]
			}
			if _, err := f.WriteAt(b, at.Offset+cut); err != nil {
				t.Fatal(err)
			}
			f.Close()
			c := mustOpen(t, out, noCheckpoints)
			defer c.Close()
			wantKeys(t, c, 0, 10)
			if p := c.Position(); p.Next != at.Next {
				t.Fatalf("next record %d, want %d (the torn one's number again)", p.Next, at.Next)
			}
			putN(t, c, 10, 12)
			wantKeys(t, c, 0, 12)
		})
	}
}

// TestDamagedRecord: a record that does not read back, with records
// after it, is damage: nothing is applied and the *LogError names the
// record and the keys of the Named bucket the lost records write; with
// AcceptLoss the log is applied up to it and the rest kept aside.
func TestDamagedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.db")
	db := mustOpen(t, path, noCheckpoints)
	defer db.Close()
	putN(t, db, 0, 20) // record k puts k-(k-1)
	out := crashCopy(t, path)
	p := db.Position()
	seg := filepath.Join(Dir(out), filepath.Base(p.Segments[0].Path))
	recs, _, err := ReadSegment(seg, p.Segments[0].First)
	if err != nil || len(recs) != 20 {
		t.Fatalf("ReadSegment: %d records, %v; want 20", len(recs), err)
	}
	testkit.XorByte(t, seg, int64(recs[10].Offset+HeaderSize+len(recs[10].Ops)/2), 0xff) // record 11
	_, err = open(out, noCheckpoints, Mode{})
	var le *LogError
	if !errors.As(err, &le) || le.Damage == nil || !errors.Is(err, ErrDamaged) || !errors.Is(err, ErrLog) {
		t.Fatalf("open = %v, want a *LogError with damage", err)
	}
	d := le.Damage
	if d.Record != 11 || d.Offset != recs[10].Offset || d.What != "its checksum does not match its content" || d.Lost != 9 || d.First != 12 || d.Last != 20 || d.TaskCount != 9 || d.Tasks[0] != "k-011" {
		t.Fatalf("damage %+v", d)
	}
	c, err := open(out, noCheckpoints, Mode{AcceptLoss: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantKeys(t, c, 0, 10)
	if ents, _ := os.ReadDir(Dir(out)); !strings.HasPrefix(ents[0].Name(), "damaged-") {
		t.Fatalf("the damaged segment is not kept aside: %v", ents)
	}
}

// TestCheckpointThatCannotApplyStopsWrites: a record the checkpoint
// cannot apply (an a2ad before the write-time checks could log one)
// stops the writes at once, with a *StoppedError that Writable, every
// later write and Close return, rather than growing the log and memory;
// the file it leaves opens with the op named, and recovery that skips it
// (the store's Repair) applies every other op.
func TestCheckpointThatCannotApplyStopsWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.db")
	db := mustOpen(t, path, noCheckpoints)
	putN(t, db, 0, 5)
	bad := db.Position().Next
	long := []byte(strings.Repeat("x", 33000))
	err := db.Update(context.Background(), func(tx *Tx) error {
		tx.w.change(tx.active, 1, item{k: long}) // past Put's check
		return tx.Bucket(bucketMeta).Put([]byte("beside"), []byte("kept"))
	})
	if err != nil {
		t.Fatal(err)
	}
	putN(t, db, 5, 10)
	var se *StoppedError
	if err := db.Flush(); !errors.As(err, &se) || !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "(key too large)") {
		t.Fatalf("Flush = %v, want a *StoppedError: key too large", err)
	}
	if err := db.Writable(); !errors.As(err, &se) {
		t.Fatalf("Writable = %v, want a *StoppedError", err)
	}
	next := db.Position().Next
	if err := db.Update(context.Background(), func(tx *Tx) error { return tx.Bucket(bucketKeys).Put([]byte("later"), nil) }); !errors.As(err, &se) {
		t.Fatalf("Update after the stop = %v, want a *StoppedError", err)
	}
	if db.Position().Next != next {
		t.Fatal("a write after the stop reached the log")
	}
	if err := db.Close(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Close = %v, want ErrStopped", err)
	}
	_, err = open(path, noCheckpoints, Mode{})
	var le *LogError
	want := BadOp{Segment: fmt.Sprintf("%016x.wal", 1), Record: bad, Op: 1, Bucket: "more", What: "a key of 33000 bytes (bbolt's limit is 32768)"}
	if !errors.As(err, &le) || len(le.Bad) != 1 || le.Bad[0] != want {
		t.Fatalf("open = %v, want a *LogError naming %+v", err, want)
	}
	c, err := open(path, noCheckpoints, Mode{SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantKeys(t, c, 0, 10)
	_ = c.View(func(tx *Tx) error {
		if v := tx.Bucket(bucketMeta).Get([]byte("beside")); string(v) != "kept" {
			t.Errorf("the other op of the record: %q, want it applied", v)
		}
		return nil
	})
}

// TestPutOverLimitRefused: a put bbolt would refuse is a *LimitError
// naming the bucket, and nothing of its write reaches the log.
func TestPutOverLimitRefused(t *testing.T) {
	db := mustOpen(t, filepath.Join(t.TempDir(), "e.db"), noCheckpoints)
	defer db.Close()
	putN(t, db, 0, 2)
	next := db.Position().Next
	err := db.Update(context.Background(), func(tx *Tx) error {
		if err := tx.Bucket(bucketKeys).Put([]byte("fine"), nil); err != nil {
			return err
		}
		return tx.Bucket(bucketMore).Put(nil, []byte("v"))
	})
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrTooLarge) || err.Error() != "the file cannot hold an empty key (bucket more)" {
		t.Fatalf("Update = %v, want a *LimitError of bucket more", err)
	}
	if db.Position().Next != next {
		t.Fatal("the refused write reached the log")
	}
	wantKeys(t, db, 0, 2) // "fine" was undone with it
}

// TestSegmentsRecycled: under many small segments, checkpoints recycle
// the segments they cover, so the log keeps a bounded number of files:
// the current segment, the spares, and one the checkpoint has not
// reached yet.
func TestSegmentsRecycled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.db")
	db, err := open(path, Options{CheckpointEvery: time.Millisecond, CheckpointBytes: 1}, Mode{SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	putN(t, db, 0, 300)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(Dir(path))
	if len(ents) > 1+walSpares+1 {
		t.Errorf("%d files in the log after 300 writes; want at most %d", len(ents), walSpares+2)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, path, Options{})
	defer c.Close()
	wantKeys(t, c, 0, 300)
}

// TestMissingSegment: a segment gone from the middle of the log (not a
// crash: someone removed it) is damage, named with what it loses, not a
// silent loss.
func TestMissingSegment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.db")
	db, err := open(path, noCheckpoints, Mode{SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	putN(t, db, 0, 400)
	p := db.Position()
	if len(p.Segments) < 3 {
		t.Fatalf("%d segments; want at least 3", len(p.Segments))
	}
	out := crashCopy(t, path)
	gone := p.Segments[1]
	if err := os.Remove(filepath.Join(Dir(out), filepath.Base(gone.Path))); err != nil {
		t.Fatal(err)
	}
	_, err = open(out, noCheckpoints, Mode{})
	var le *LogError
	if !errors.As(err, &le) || le.Damage == nil {
		t.Fatalf("open = %v, want a *LogError with damage", err)
	}
	next := p.Segments[2].First
	d := le.Damage
	what := fmt.Sprintf("records %d to %d are missing: the next segment, %s, begins with record %d", gone.First, next-1, filepath.Base(p.Segments[2].Path), next)
	if d.Segment != filepath.Base(p.Segments[0].Path) || d.Record != gone.First || d.What != what || d.Lost != int(400-next+1) || d.First != next || d.Last != 400 || d.Tasks[0] != keyOf(int(next-1)) {
		t.Fatalf("damage %+v, want at record %d: %s", d, gone.First, what)
	}
}
