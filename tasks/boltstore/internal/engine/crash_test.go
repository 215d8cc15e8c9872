package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/crashpoint"
)

// crashChild names, in a child's environment, the file the child writes
// (crashWrites) until the crash point kills it.
const crashChild = "A2AD_ENGINE_CRASH_FILE"

// crashKeep set makes the child checkpoint nothing.
const crashKeep = "A2AD_ENGINE_CRASH_KEEP"

// TestCrashPoints kills a child writing the file, at each step of the log
// and the checkpoint (crashpoint), and of a recovery, as a power cut or
// a SIGKILL would; the file then opens with every write the child was
// told of, and none but those and the one it was making, in order.
func TestCrashPoints(t *testing.T) {
	if path := os.Getenv(crashChild); path != "" {
		crashWrites(path)
		return
	}
	if testing.Short() {
		t.Skip("starts a child process per crash point")
	}
	for _, at := range []string{"wal.write:7", "wal.sync:7", "wal.ack:7", "wal.rotate:3", "checkpoint.start:4", "checkpoint.apply:4", "checkpoint.commit:4", "checkpoint.trim:4"} {
		t.Run(at, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "e.db")
			acked := crashAt(t, path, at)
			if acked == 0 {
				t.Fatalf("the child was killed at %s before any write was durable", at)
			}
			db := mustOpen(t, path, noCheckpoints)
			defer db.Close()
			got := keys(t, db)
			if len(got) < acked || len(got) > acked+1 {
				t.Fatalf("%d keys after the crash, want %d (acknowledged) or one more", len(got), acked)
			}
			wantKeys(t, db, 0, len(got))
		})
	}
	// A crash in a recovery: the next one applies it all again.
	for _, at := range []string{"recover.apply", "recover.commit"} {
		t.Run(at, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "e.db")
			t.Setenv(crashKeep, "1") // the log holds the writes
			acked := crashAt(t, path, "wal.ack:40")
			t.Setenv(crashKeep, "")
			if n := crashAt(t, path, at); n != 0 {
				t.Fatalf("the child acknowledged %d writes before %s", n, at)
			}
			db := mustOpen(t, path, noCheckpoints)
			defer db.Close()
			if got := keys(t, db); len(got) < acked || len(got) > acked+1 {
				t.Fatalf("%d keys, want %d or one more", len(got), acked)
			}
		})
	}
}

// crashAt runs a child that writes the file at path until crash point at
// kills it (it fails the test if none does), and returns how many writes
// the child was told are durable.
func crashAt(t *testing.T, path, at string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashPoints$")
	cmd.Env = append(os.Environ(), crashChild+"="+path, crashpoint.Env+"="+at)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(ee.Error(), "killed") {
		t.Fatalf("the child was not killed at %s: %v\n%s", at, err, out)
	}
	acked := 0
	for _, line := range strings.Split(string(out), "\n") {
		if n, ok := strings.CutPrefix(line, "acked "); ok {
			acked, _ = strconv.Atoi(n)
		}
	}
	return acked
}

// crashWrites is the child: it opens the file at path with a checkpoint
// after every write and small segments, and puts keys one write each,
// saying on stdout which are durable, until the crash point kills it
// (crashKeep: with no checkpoint).
func crashWrites(path string) {
	opts := Options{CheckpointEvery: time.Millisecond, CheckpointBytes: 1}
	if os.Getenv(crashKeep) != "" {
		opts = noCheckpoints
	}
	db, err := open(path, opts, Mode{SegmentBytes: 4096})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	for i := range 1000 {
		err := db.Update(context.Background(), func(tx *Tx) error {
			return tx.Bucket(bucketKeys).Put([]byte(keyOf(i)), []byte(keyOf(i)))
		})
		if err != nil {
			fmt.Println("put:", err)
			os.Exit(2)
		}
		fmt.Printf("acked %d\n", i+1)
	}
	os.Exit(3) // not killed
}
