//go:build attackstoregen && linux

package main

// TestGenerateAttackStore writes testdata/store-1895df3-long-id again with
// an a2ad binary of commit 1895df3 (see the README.md there):
//
//	go test -tags attackstoregen -run TestGenerateAttackStore ./cmd/a2ad/ -args -attack-a2ad /tmp/a2ad-1895df3
//
// It is not part of go test ./...: the store it writes is the point, and
// it must come from the binary that acknowledged the attack.

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/internal/testkit"
)

var attackA2AD = flag.String("attack-a2ad", "", "the a2ad binary (of commit 1895df3) that writes testdata/store-1895df3-long-id")

func TestGenerateAttackStore(t *testing.T) {
	if *attackA2AD == "" {
		t.Skip("needs -attack-a2ad, the binary of commit 1895df3")
	}
	work := t.TempDir()
	store := filepath.Join(work, "a2ad.db")
	// Small segments keep the files small: the long record gets one of
	// its own, and the records after it the next.
	t.Setenv("A2AD_TEST_WAL_SEGMENT_BYTES", "65536")
	p := startProgram(t, *attackA2AD, filepath.Join(attackStoreDir, "catalog.yaml"), store)
	calls := attackCalls{Commit: "1895df313ccdb26675a094e4d350163cb1eec174", LongBytes: attackLongBytes}
	send := func(msgID string) attackTask {
		t.Helper()
		task := resultOf(t, oldCall(t, p.base, "", "", "message/send", attackParams(msgID)))
		st, _ := task["status"].(map[string]any)
		return attackTask{MessageID: msgID, TaskID: task["id"].(string), State: st["state"].(string)}
	}
	for i := range 4 {
		calls.Before = append(calls.Before, send(fmt.Sprintf("before-%d", i)))
	}
	time.Sleep(1200 * time.Millisecond) // a checkpoint puts them in the file
	calls.Attack = send(strings.Repeat("x", attackLongBytes))
	calls.Attack.MessageID = ""
	for i := range 4 {
		calls.After = append(calls.After, send(fmt.Sprintf("after-%d", i)))
	}
	time.Sleep(1200 * time.Millisecond) // checkpoints fail meanwhile
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := p.cmd.Wait()
	p.mu.Lock()
	logs := p.logs.String()
	p.mu.Unlock()
	if err == nil || !strings.Contains(logs, "close store: key too large") {
		t.Fatalf("the old a2ad's exit: %v; want it to fail to close the store:\n%s", err, logs)
	}

	out := filepath.Join(attackStoreDir, "a2ad.db")
	_ = os.Remove(out)
	_ = os.RemoveAll(out + ".wal")
	testkit.CopyFile(t, store, out)
	// bbolt allocates up to 16 MiB ahead of its last page: cut that off
	// (it allocates it again), leaving every page as the old a2ad wrote it.
	db, err := bolt.Open(out, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	_ = db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	db.Close()
	if err := os.Truncate(out, size); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(out+".wal", 0o755); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(store + ".wal/*.wal")
	for _, s := range segs {
		testkit.CopyFile(t, s, filepath.Join(out+".wal", filepath.Base(s)))
	}
	b, err := json.MarshalIndent(calls, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(attackStoreDir, "calls.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
