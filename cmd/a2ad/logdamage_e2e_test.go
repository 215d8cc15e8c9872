//go:build linux

package main

import (
	"bytes"
	"context"
	be "encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/cmd/a2ad/internal/storecmd"
	"github.com/a2ad/a2ad/internal/testkit"
)

// walRecord is a record of a store's write-ahead log, as the test reads
// it (tasks/boltstore/internal/engine/wal.go: magic(4) length(4) lsn(8) crc32c(4) ops).
type walRecord struct {
	seg      string
	off, len int
	lsn      uint64
}

// readWALRecords reads the records of every segment of the log of store,
// each from its start to the first that does not follow.
func readWALRecords(t *testing.T, store string) []walRecord {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(store+".wal", "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(segs)
	var recs []walRecord
	for _, seg := range segs {
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+20 <= len(data) && be.BigEndian.Uint32(data[off:]) == 0xA2AD10C5; {
			n := int(be.BigEndian.Uint32(data[off+4:]))
			lsn := be.BigEndian.Uint64(data[off+8:])
			if off+20+n > len(data) || (len(recs) > 0 && lsn != recs[len(recs)-1].lsn+1) {
				break
			}
			recs = append(recs, walRecord{seg: seg, off: off, len: n, lsn: lsn})
			off += 20 + n
		}
	}
	return recs
}

// appliedRecord reads the last log record the store file holds.
func appliedRecord(t *testing.T, store string) uint64 {
	t.Helper()
	db, err := bolt.Open(store, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n uint64
	_ = db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("wal")); len(v) == 8 {
			n = be.BigEndian.Uint64(v)
		}
		return nil
	})
	return n
}

// crashedStore is a store a2ad died on (SIGKILL at its 40th commit)
// with at least 4 records in its log that the file does not hold, and the
// tasks a2ad acknowledged.
func crashedStore(t *testing.T) (catalog, store string, acks []walAck) {
	t.Helper()
	catalog, _ = crashSetup(t, walCrashCatalog)
	for range 3 { // a checkpoint just before the crash leaves too few
		store = filepath.Join(t.TempDir(), "a2ad.db")
		srv := startWAL(t, catalog, store, "wal.ack:40")
		if !srv.serving(t) {
			t.Fatalf("a2ad did not start:\n%s", srv.tail())
		}
		hc := walClient()
		acks = nil
		for i := 0; ; i++ {
			msgID := fmt.Sprintf("m-%03d", i)
			params := sendParams(msgID, "demo::echo", map[string]any{"message": msgID}, true)
			a, err := walCall(hc, srv.base, "message/send", params)
			if err != nil || a.Result == nil {
				break
			}
			acks = append(acks, walAck{msgID: msgID, params: params, id: a.Result.ID, state: a.Result.Status.State, artifacts: canonical(a.Result.Artifacts)})
		}
		<-srv.exited
		hc.CloseIdleConnections()
		recs := readWALRecords(t, store)
		if len(recs) > 0 && recs[len(recs)-1].lsn >= appliedRecord(t, store)+4 {
			return catalog, store, acks
		}
	}
	t.Fatal("every try checkpointed its last records before the crash")
	return "", "", nil
}

var lostTasks = regexp.MustCompile(`writing (\d+) tasks: ([^;]*);`)

// TestLogDamagedEndToEnd: one flipped byte in the write-ahead log a
// SIGKILL left, with acknowledged records after it, stops serve and store
// check with one line naming the segment, record and byte, and what is
// lost after it (records, tasks); store repair changes nothing without
// --accept-loss, and with it applies the log up to the damage, keeps the
// damaged segment aside and says what was lost; a2ad then serves every
// other acknowledged task. A missing log directory is refused the same
// way. (With a2ad 1895df3 both started without a word, the writes gone.)
func TestLogDamagedEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the real binary")
	}
	t.Run("flipped byte", func(t *testing.T) {
		catalog, store, acks := crashedStore(t)
		recs := readWALRecords(t, store)
		applied := appliedRecord(t, store)
		var bad walRecord
		for _, r := range recs {
			if r.lsn == applied+2 {
				bad = r
			}
		}
		last := recs[len(recs)-1].lsn
		testkit.FlipByte(t, bad.seg, int64(bad.off+20+bad.len/2))
		head := fmt.Sprintf("a2ad: the store file %s cannot be opened as it is: its write-ahead log %s.wal is damaged: segment %s, record %d at byte %d: its checksum does not match its content; after it the log holds %d acknowledged records (%d to %d) that cannot be applied without it, writing ",
			store, store, filepath.Base(bad.seg), bad.lsn, bad.off, last-bad.lsn, bad.lsn+1, last)
		advice := fmt.Sprintf("; put the segment back from a copy if there is one; to apply the log up to the damage, accepting that loss (the damaged segments are kept aside in %s.wal): a2ad store repair --store %s --accept-loss\n", store, store)
		var lost []string
		for _, args := range [][]string{
			{"serve", "--catalog", catalog, "--store", store, "--listen", "127.0.0.1:0", "--admin-listen", ""},
			{"store", "check", "--store", store},
		} {
			code, _, stderr := runRefused(t, args...)
			if code != storecmd.ExitDamaged || !strings.HasPrefix(stderr, head) || !strings.HasSuffix(stderr, advice) {
				t.Fatalf("a2ad %s = %d:\n%s\nwant %d:\n%s...%s", args[0], code, stderr, storecmd.ExitDamaged, head, advice)
			}
			m := lostTasks.FindStringSubmatch(stderr)
			if m == nil {
				t.Fatalf("no tasks named in %q", stderr)
			}
			lost = strings.Fields(m[2])
		}
		code, _, stderr := runBinary(t, "store", "repair", "--store", store)
		if code != 1 || !strings.Contains(stderr, "; nothing was changed: to accept that loss, run a2ad store repair --store "+store+" --accept-loss\n") {
			t.Fatalf("a2ad store repair without --accept-loss = %d:\n%s", code, stderr)
		}
		code, stdout, stderr := runBinary(t, "store", "repair", "--store", store, "--accept-loss")
		wantLost := fmt.Sprintf("lost: record %d (segment %s, byte %d: its checksum does not match its content) and the %d after it (%d to %d), writing %d tasks: %s\n",
			bad.lsn, filepath.Base(bad.seg), bad.off, last-bad.lsn, bad.lsn+1, last, len(lost), strings.Join(lost, " "))
		if code != 0 || !strings.Contains(stdout, wantLost) || !strings.Contains(stdout, "kept the damaged segments in "+store+".wal/damaged-") || !strings.Contains(stdout, "no problems found\n") {
			t.Fatalf("a2ad store repair --accept-loss = %d:\n%s%s\nwant %q", code, stdout, stderr, wantLost)
		}
		aside, _ := filepath.Glob(filepath.Join(store+".wal", "damaged-*", filepath.Base(bad.seg)))
		if len(aside) != 1 {
			t.Fatalf("the damaged segment is not kept aside: %v", aside)
		}
		// Every acknowledged task but those lost, and the one the
		// damaged record wrote, reads as acknowledged.
		var kept []walAck
		for _, a := range acks {
			if !slices.Contains(lost, a.id) {
				kept = append(kept, a)
			}
		}
		srv := startWAL(t, catalog, store, "")
		if !srv.serving(t) {
			t.Fatalf("a2ad did not start after the repair:\n%s", srv.tail())
		}
		hc := walClient()
		defer hc.CloseIdleConnections()
		if problems := checkAcks(hc, srv.base, kept); len(problems) > 1 {
			t.Errorf("%d of %d acknowledged tasks not lost are wrong: %s", len(problems), len(kept), strings.Join(problems, "\n"))
		}
		if len(kept) < len(acks)-len(lost)-1 || len(lost) == 0 {
			t.Errorf("%d acknowledged, %d named lost, %d kept", len(acks), len(lost), len(kept))
		}
	})
	t.Run("missing log", func(t *testing.T) {
		catalog, store, _ := crashedStore(t)
		applied := appliedRecord(t, store)
		if err := os.RemoveAll(store + ".wal"); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("a2ad: the store file %[1]s cannot be opened as it is: its write-ahead log %[1]s.wal is missing, but the file says a server had it open and did not close it: the writes after record %[2]d, the last the file holds, were only in the log; put the directory back if it was moved; if the file is a copy (made otherwise than by a2ad store backup), nothing is lost; to go on without the log, accepting that loss: a2ad store repair --store %[1]s --accept-loss\n", store, applied)
		code, _, stderr := runRefused(t, "serve", "--catalog", catalog, "--store", store, "--listen", "127.0.0.1:0", "--admin-listen", "")
		if code != storecmd.ExitDamaged || stderr != want {
			t.Fatalf("a2ad serve = %d:\n%s\nwant %d:\n%s", code, stderr, storecmd.ExitDamaged, want)
		}
		if _, err := os.Stat(store + ".wal"); err == nil {
			t.Fatal("serve made a new log")
		}
		code, stdout, stderr := runBinary(t, "store", "repair", "--store", store, "--accept-loss")
		if code != 0 || !strings.Contains(stdout, "lost: whatever the missing write-ahead log held after that record; a new, empty log was made\n") {
			t.Fatalf("a2ad store repair --accept-loss = %d:\n%s%s", code, stdout, stderr)
		}
		srv := startWAL(t, catalog, store, "")
		if !srv.serving(t) {
			t.Fatalf("a2ad did not start after the repair:\n%s", srv.tail())
		}
	})
}

// runRefused is runBinary of a command that must end by itself (a serve
// that refuses its store): one still running after 20 s fails t.
func runRefused(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	// A refusal comes within a second or two; the bound is for a loaded
	// machine (the README's server and go test ./... beside it), where
	// replaying a large log takes longer.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("a2ad %s still ran after 2 minutes: it did not refuse the store:\n%s", strings.Join(args, " "), errOut.String())
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}
