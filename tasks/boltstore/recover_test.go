package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
)

// longID is an id over bbolt's key limit once in a key.
var longID = strings.Repeat("x", 33000)

// TestWriteOverKeyLimitRefused: a messageId too long for a bbolt key is
// refused when written, with a typed error that names the bucket, before
// anything reaches the log; the store goes on, closes cleanly and opens
// with every other task (issue 25: it used to be acknowledged, and fail
// every checkpoint and the close after it).
func TestWriteOverKeyLimitRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	createN(t, s, 0, 3)
	next := s.db.Position().Next
	_, _, err = s.Create(context.Background(), tasks.IdemKey{Owner: "o", MessageID: longID}, walTask("t-long"), nil)
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrTooLarge) || !errors.Is(err, tasks.ErrInvalidInput) {
		t.Fatalf("Create with a 33000-byte messageId = %v, want a *LimitError", err)
	}
	if want := "the task store cannot hold a key of 33002 bytes (bbolt's limit is 32768) (bucket idem)"; err.Error() != want {
		t.Fatalf("Create = %q, want %q", err, want)
	}
	if s.db.Position().Next != next {
		t.Fatalf("the refused write reached the log: next record %d, was %d", s.db.Position().Next, next)
	}
	createN(t, s, 3, 6)
	if err := s.Flush(); err != nil {
		t.Fatalf("checkpoint after the refusal: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	c, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantTasks(t, c, 0, 6)
	if _, err := c.Get(context.Background(), "o", "t-long", tasks.Whole); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("the refused task: %v, want not found", err)
	}
}

// TestPushConfigIDOverKeyLimitRefused: a webhook whose id would make a
// pending key bbolt refuses is refused when set, so that no transition
// of its task can fail on it later.
func TestPushConfigIDOverKeyLimitRefused(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "a2ad.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	createN(t, s, 0, 1)
	_, err = s.PushConfigs(context.Background(), "o", "t-000", func(c []a2a.PushConfig) ([]a2a.PushConfig, error) {
		return append(c, a2a.PushConfig{ID: longID, URL: "http://127.0.0.1:1/hook"}), nil
	})
	if !errors.Is(err, ErrTooLarge) || !strings.HasSuffix(err.Error(), "(bucket pending)") {
		t.Fatalf("PushConfigs with a 33000-byte id = %v, want a *LimitError of bucket pending", err)
	}
	rec := walTask("t-hook")
	rec.PushConfigs = []a2a.PushConfig{{ID: longID, URL: "http://127.0.0.1:1/hook"}}
	if _, _, err := s.Create(context.Background(), tasks.IdemKey{Owner: "o", MessageID: "m-hook"}, rec, nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Create with a 33000-byte webhook id = %v, want a *LimitError", err)
	}
}

// logBad writes into segment seg of a crash copy, at offset off, record
// lsn as an a2ad before the write-time checks wrote it: its first op puts
// a key bbolt refuses (in bucket idem), its second puts meta key. The
// record is written out here, byte by byte, as the log's format has it
// (engine/wal.go): a change of the format fails this test.
func logBad(t *testing.T, seg string, off int64, lsn uint64, key string) {
	t.Helper()
	var ops []byte
	put := func(bucket, k, v []byte) {
		i := slices.IndexFunc(layout.Buckets, func(b []byte) bool { return bytes.Equal(b, bucket) })
		ops = append(ops, 1, byte(i))
		ops = binary.AppendUvarint(ops, uint64(len(k)))
		ops = append(ops, k...)
		ops = binary.AppendUvarint(ops, uint64(len(v)))
		ops = append(ops, v...)
	}
	put(bucketIdem, []byte(longID), nil)
	put(bucketMeta, []byte(key), []byte("kept"))
	rec := binary.BigEndian.AppendUint32(nil, 0xA2AD10C5)
	rec = binary.BigEndian.AppendUint32(rec, uint32(len(ops)))
	rec = binary.BigEndian.AppendUint64(rec, lsn)
	tab := crc32.MakeTable(crc32.Castagnoli)
	rec = binary.BigEndian.AppendUint32(rec, crc32.Update(crc32.Checksum(rec[8:16], tab), tab, ops))
	rec = append(rec, ops...)
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(rec, off); err != nil {
		t.Fatal(err)
	}
}

// TestLogOpRefused: a log whose record holds an op bbolt refuses (an
// a2ad before the write-time checks could write one) is refused at open
// and by Check, naming the op; Repair applies every other op, so that
// every other acknowledged write is kept. (That a checkpoint meeting such
// an op stops the writes is the engine's test.)
func TestLogOpRefused(t *testing.T) {
	s, path := openLog(t)
	defer s.Close()
	createN(t, s, 0, 5)
	p := s.db.Position()
	out := crashCopy(t, path)
	seg := filepath.Base(p.Segments[len(p.Segments)-1].Path)
	logBad(t, filepath.Join(engine.Dir(out), seg), p.Offset, p.Next, "test-beside")

	_, err := Open(out, noCheckpoints)
	var le *LogError
	if !errors.As(err, &le) || len(le.Bad) != 1 {
		t.Fatalf("Open = %v, want a *LogError naming the record", err)
	}
	want := BadOp{Segment: seg, Record: p.Next, Op: 1, Bucket: "idem", What: "a key of 33000 bytes (bbolt's limit is 32768)"}
	if le.Bad[0] != want {
		t.Fatalf("Open: bad op %+v, want %+v", le.Bad[0], want)
	}
	if _, err := Check(out, 0); !errors.As(err, &le) || len(le.Bad) != 1 || le.Bad[0] != want {
		t.Fatalf("Check = %v, want the same *LogError", err)
	}
	res, err := Repair(out, RepairOptions{})
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	if len(res.Skipped) != 1 || res.Skipped[0] != want || res.Applied != p.Next {
		t.Fatalf("Repair = %+v, want op %+v skipped and records to %d applied", res, want, p.Next)
	}
	c, err := Open(out, noCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantTasks(t, c, 0, 5)
	_ = c.view(func(tx *engine.Tx) error {
		if v := tx.Bucket(bucketMeta).Get([]byte("test-beside")); string(v) != "kept" {
			t.Errorf("the other op of the record: %q, want it applied", v)
		}
		return nil
	})
	createN(t, c, 5, 7)
	wantTasks(t, c, 0, 7)
}

// TestEngineErrorsAreTheStores: what the engine refuses reaches the
// store's callers as the store's errors, which the task service knows.
func TestEngineErrorsAreTheStores(t *testing.T) {
	cause := errors.New("key too large")
	err := fromEngine(&engine.StoppedError{Path: "/x/a2ad.db", Cause: cause})
	if want := "the task store /x/a2ad.db stopped taking writes: a checkpoint cannot apply a change to the file (key too large); every write acknowledged is in its write-ahead log: stop the server and check the store"; err.Error() != want {
		t.Fatalf("stopped: %q, want %q", err, want)
	}
	if !errors.Is(err, ErrStopped) || !errors.Is(err, tasks.ErrStoreUnavailable) || !errors.Is(err, cause) {
		t.Fatalf("stopped: %v does not match ErrStopped, tasks.ErrStoreUnavailable and its cause", err)
	}
	err = fromEngine(&engine.UnwritableError{Path: "/x/a2ad.db", Cause: cause})
	var ue *UnwritableError
	if !errors.As(err, &ue) || !errors.Is(err, tasks.ErrStoreUnavailable) || !strings.HasPrefix(err.Error(), "the task store /x/a2ad.db cannot write to its disk (key too large)") {
		t.Fatalf("unwritable: %v", err)
	}
	err = fromEngine(&engine.LimitError{Bucket: "idem", What: "an empty key"})
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, tasks.ErrInvalidInput) || err.Error() != "the task store cannot hold an empty key (bucket idem)" {
		t.Fatalf("limit: %v", err)
	}
	if err := fromEngine(engine.ErrClosed); err != tasks.ErrClosed { //nolint:errorlint // the very sentinel
		t.Fatalf("closed: %v, want tasks.ErrClosed", err)
	}
}

// damagedCopy is a copy of what a crash of s leaves, with one byte of
// record lsn's ops flipped; it returns the copy's path.
func damagedCopy(t *testing.T, s *Store, path string, lsn uint64) string {
	t.Helper()
	out := crashCopy(t, path)
	seg := filepath.Join(engine.Dir(out), filepath.Base(s.db.Position().Segments[len(s.db.Position().Segments)-1].Path))
	recs, _, err := engine.ReadSegment(seg, s.db.Position().Segments[len(s.db.Position().Segments)-1].First)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.LSN == lsn {
			testkit.FlipByte(t, seg, int64(rec.Offset+engine.HeaderSize+len(rec.Ops)/2))
			return out
		}
	}
	t.Fatalf("record %d is not in the last segment", lsn)
	return ""
}

// TestLogFlippedByte: one flipped byte in a record of the last segment,
// with acknowledged records after it, is damage: Open and Check name the
// record and what is lost after it (records and tasks), and change
// nothing; Repair without AcceptLoss refuses the same way; with it, it
// applies the log up to the damage and keeps the segment aside (issue 25:
// those records were dropped without a word).
func TestLogFlippedByte(t *testing.T) {
	s, path := openLog(t)
	var err error
	defer s.Close()
	createN(t, s, 0, 20) // record k creates t-(k-1)
	out := damagedCopy(t, s, path, 11)
	seg := filepath.Base(s.db.Position().Segments[0].Path)

	wantErr := func(what string, err error) {
		t.Helper()
		var le *LogError
		if !errors.As(err, &le) || le.Damage == nil {
			t.Fatalf("%s = %v, want a *LogError with damage", what, err)
		}
		d := le.Damage
		if d.Segment != seg || d.Record != 11 || d.What != "its checksum does not match its content" || d.Lost != 9 || d.First != 12 || d.Last != 20 || d.TaskCount != 9 || d.Tasks[0] != "t-011" {
			t.Fatalf("%s: damage %+v", what, d)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("its write-ahead log %s is damaged: segment %s, record 11 at byte %d: its checksum does not match its content; after it the log holds 9 acknowledged records (12 to 20) that cannot be applied without it, writing 9 tasks: t-011 t-012", engine.Dir(out), seg, d.Offset)) {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err = Open(out, noCheckpoints)
	wantErr("Open", err)
	_, err = Check(out, 0)
	wantErr("Check", err)
	_, err = Repair(out, RepairOptions{})
	wantErr("Repair without AcceptLoss", err)

	res, err := Repair(out, RepairOptions{AcceptLoss: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Damage == nil || res.Damage.Record != 11 || res.Applied != 10 {
		t.Fatalf("Repair = %+v, want records to 10 applied", res)
	}
	if _, err := os.Stat(filepath.Join(res.Aside, seg)); err != nil || filepath.Dir(res.Aside) != engine.Dir(out) {
		t.Fatalf("the damaged segment is not kept aside in %s: %v", res.Aside, err)
	}
	c, err := Open(out, noCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantTasks(t, c, 0, 10)
	createN(t, c, 10, 12)
	wantTasks(t, c, 0, 12)
}

// TestLogDamageInAppliedRecord: damage in a record the file holds
// already loses nothing: the records after it are applied.
func TestLogDamageInAppliedRecord(t *testing.T) {
	s, path := openLog(t)
	defer s.Close()
	createN(t, s, 0, 10)
	if err := s.Flush(); err != nil { // the file holds records 1 to 10
		t.Fatal(err)
	}
	createN(t, s, 10, 15)
	out := damagedCopy(t, s, path, 5)
	c, err := Open(out, noCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantTasks(t, c, 0, 15)
}

// TestLogMissingDir: a store whose log directory is gone after a crash
// (the file says a server had it open) is refused, naming the last record
// the file holds; after a clean close, or for a backup, the log is not
// needed; Repair with AcceptLoss makes a new one.
func TestLogMissingDir(t *testing.T) {
	s, path := openLog(t)
	defer s.Close()
	createN(t, s, 0, 5)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	createN(t, s, 5, 10)
	out := crashCopy(t, path)
	if err := os.RemoveAll(engine.Dir(out)); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the store file %s cannot be opened as it is: its write-ahead log %s is missing, but the file says a server had it open and did not close it: the writes after record 5, the last the file holds, were only in the log", out, engine.Dir(out))
	for what, open := range map[string]func() error{
		"Open":   func() error { _, err := Open(out, noCheckpoints); return err },
		"Check":  func() error { _, err := Check(out, 0); return err },
		"Repair": func() error { _, err := Repair(out, RepairOptions{}); return err },
	} {
		if err := open(); !errors.Is(err, ErrLog) || !strings.HasSuffix(err.Error(), want) {
			t.Fatalf("%s = %v, want %q", what, err, want)
		}
	}
	res, err := Repair(out, RepairOptions{AcceptLoss: true})
	if err != nil || !res.Missing {
		t.Fatalf("Repair with AcceptLoss = %+v, %v", res, err)
	}
	c, err := Open(out, noCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	wantTasks(t, c, 0, 5)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// A clean close leaves nothing in the log.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(engine.Dir(path)); err != nil {
		t.Fatal(err)
	}
	c, err = Open(path, noCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantTasks(t, c, 0, 10)
}

// TestBackupNeedsNoLog: a backup taken while the server runs, and a copy
// SealCopy sealed, open without a log; an empty file is left as it is.
func TestBackupNeedsNoLog(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, "a2ad.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	createN(t, s, 0, 3)
	backupTo(t, s, filepath.Join(dir, "backup.db"))
	createN(t, s, 3, 5)
	if err := s.Flush(); err != nil { // its checkpoint marks the log open again
		t.Fatal(err)
	}
	raw := crashCopy(t, filepath.Join(dir, "a2ad.db"))
	if err := os.RemoveAll(engine.Dir(raw)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(raw, Options{}); !errors.Is(err, ErrLog) {
		t.Fatalf("Open of a copy of the live file without its log = %v, want a *LogError", err)
	}
	if err := SealCopy(raw); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "backup.db"), raw} {
		c, err := Open(p, Options{})
		if err != nil {
			t.Fatalf("Open(%s) = %v", p, err)
		}
		for i := range 3 { // the raw copy may hold more: what a checkpoint put in
			if _, err := c.Get(context.Background(), "o", fmt.Sprintf("t-%03d", i), tasks.Whole); err != nil {
				t.Fatalf("%s: t-%03d: %v", p, i, err)
			}
		}
		c.Close()
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SealCopy(empty); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(empty); fi.Size() != 0 {
		t.Fatalf("SealCopy wrote %d bytes into an empty file", fi.Size())
	}
}

// TestRestoredBackupBesideNewerLog: a backup put in place of the store,
// beside the log of the newer store it copied (README: restore), goes on
// from its own records: the log's spares, which hold the newer store's
// records, are not reused, so that a torn last record of the restored
// store is not taken for damage with (old) records after it.
func TestRestoredBackupBesideNewerLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a2ad.db")
	opts := Options{WALSegmentBytes: 4096, CheckpointEvery: time.Millisecond, CheckpointBytes: 1, LockTimeout: time.Second}
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	createN(t, s, 0, 5)
	backupTo(t, s, filepath.Join(dir, "backup.db"))
	createN(t, s, 5, 120) // the spares hold records of these
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "backup.db"), path); err != nil {
		t.Fatal(err)
	}
	opts.CheckpointEvery, opts.CheckpointBytes = time.Hour, 1<<40 // the new records stay in the log
	c, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	createN(t, c, 200, 215)
	pos := c.db.Position()
	if len(pos.Segments) != 2 {
		t.Fatalf("%d segments, want 2 (where the spares would go)", len(pos.Segments))
	}
	last := pos.Segments[len(pos.Segments)-1]
	out := damagedCopy(t, c, path, pos.Next-1) // the last record torn
	r, err := Open(out, opts)
	if err != nil {
		t.Fatalf("Open after a torn last record = %v, want it dropped", err)
	}
	defer r.Close()
	for i := 200; i < 214; i++ {
		if _, err := r.Get(context.Background(), "o", fmt.Sprintf("t-%03d", i), tasks.Whole); err != nil {
			t.Fatalf("t-%03d: %v (segment %s)", i, err, filepath.Base(last.Path))
		}
	}
}

// backupTo writes a backup of s to a new file at path.
func backupTo(t *testing.T, s *Store, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := s.Backup(context.Background(), f, nil); err != nil {
		t.Fatal(err)
	}
}
