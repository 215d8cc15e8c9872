//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/cmd/a2ad/internal/storecmd"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// attackStoreDir holds a store that met issue 25's long-messageId attack
// under a2ad at commit 1895df3, what that a2ad acknowledged, and how it
// was made (README.md there).
const attackStoreDir = "testdata/store-1895df3-long-id"

// attackLongBytes is the length of the attack's messageId: 33 KiB, over
// bbolt's 32,768-byte keys.
const attackLongBytes = 33 * 1024

// attackCalls is attackStoreDir's calls.json.
type attackCalls struct {
	Commit    string       `json:"commit"`
	LongBytes int          `json:"longBytes"`
	Before    []attackTask `json:"before"` // acknowledged and checkpointed
	Attack    attackTask   `json:"attack"` // its messageId is LongBytes of "x"
	After     []attackTask `json:"after"`  // acknowledged, in the log only
}

type attackTask struct {
	MessageID string `json:"messageId,omitempty"`
	TaskID    string `json:"taskId"`
	State     string `json:"state"`
}

// attackParams is the message/send of an echo with messageId msgID.
func attackParams(msgID string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"message": map[string]any{
		"kind": "message", "role": "user", "messageId": msgID,
		"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"skill": "demo::echo", "input": map[string]any{"message": "hi " + msgID[:min(len(msgID), 12)]}}}},
	}})
	return b
}

// copyAttackStore copies attackStoreDir's store and its log into a new
// directory and returns the store's path.
func copyAttackStore(t *testing.T) string {
	t.Helper()
	store := filepath.Join(t.TempDir(), "a2ad.db")
	testkit.CopyFile(t, filepath.Join(attackStoreDir, "a2ad.db"), store)
	if err := os.Mkdir(store+".wal", 0o700); err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(attackStoreDir, "a2ad.db.wal", "*.wal"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no log segments in %s: %v", attackStoreDir, err)
	}
	for _, s := range segs {
		testkit.CopyFile(t, s, filepath.Join(store+".wal", filepath.Base(s)))
	}
	return store
}

func readAttackCalls(t *testing.T) attackCalls {
	t.Helper()
	return testkit.ReadJSON[attackCalls](t, filepath.Join(attackStoreDir, "calls.json"))
}

// checkAcknowledged reads each of acked on the server at base, in the
// state it was acknowledged in, and sends its message again: the same
// task answers (nothing runs again).
func checkAcknowledged(t *testing.T, base string, acked []attackTask) {
	t.Helper()
	for _, a := range acked {
		id, _ := json.Marshal(map[string]any{"id": a.TaskID})
		got := resultOf(t, oldCall(t, base, "", "", "tasks/get", id))
		if st := got["status"].(map[string]any)["state"]; got["id"] != a.TaskID || st != a.State {
			t.Errorf("task %s (message %s): %v %v, want %s", a.TaskID, a.MessageID, got["id"], st, a.State)
		}
		again := resultOf(t, oldCall(t, base, "", "", "message/send", attackParams(a.MessageID)))
		if again["id"] != a.TaskID {
			t.Errorf("message %s sent again: task %v, want %s", a.MessageID, again["id"], a.TaskID)
		}
	}
}

// TestStoreThatMetTheLongIDAttack: a store that acknowledged a 33 KiB
// messageId under a2ad 1895df3 (whose checkpoints then failed, and whose
// close failed, leaving a log that record bbolt refuses) is refused by
// serve and by store check with one line naming that record's ops, not as
// a file to restore from backup; store repair applies every other op and
// the file checks clean; and a2ad then serves every task acknowledged
// before and after the attack, a resent message running nothing.
func TestStoreThatMetTheLongIDAttack(t *testing.T) {
	skipShort(t, "runs the real binary")
	calls := readAttackCalls(t)
	store := copyAttackStore(t)
	catalog := filepath.Join(attackStoreDir, "catalog.yaml")
	wal := store + ".wal"
	bad := fmt.Sprintf("a2ad: the store file %[1]s cannot be opened as it is: its write-ahead log %[2]s holds 2 ops bbolt refuses: "+
		"%[3]s; %[4]s; every other write is intact: to apply the log without those ops, run a2ad store repair --store %[1]s\n",
		store, wal, attackBadOps[0], attackBadOps[1])

	code, _, stderr := runRefused(t, "serve", "--catalog", catalog, "--store", store, "--listen", "127.0.0.1:0", "--admin-listen", "")
	if code != storecmd.ExitDamaged || stderr != bad {
		t.Fatalf("a2ad serve = %d:\n%s\nwant %d:\n%s", code, stderr, storecmd.ExitDamaged, bad)
	}
	code, _, stderr = runBinary(t, "store", "check", "--store", store)
	if code != storecmd.ExitDamaged || stderr != bad {
		t.Fatalf("a2ad store check = %d:\n%s\nwant %d:\n%s", code, stderr, storecmd.ExitDamaged, bad)
	}
	code, stdout, stderr := runBinary(t, "store", "repair", "--store", store)
	for _, want := range []string{
		"repaired " + store + ": it holds the write-ahead log to record " + attackApplied,
		"left out " + attackBadOps[0] + ": bbolt refuses it; the other ops of the record were applied\n",
		"left out " + attackBadOps[1] + ": bbolt refuses it; the other ops of the record were applied\n",
		"no problems found\n",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Fatalf("a2ad store repair = %d, want 0 and %q:\n%s%s", code, want, stdout, stderr)
		}
	}

	p := startBinary(t, catalog, store)
	checkAcknowledged(t, p.base, calls.Before)
	checkAcknowledged(t, p.base, calls.After)
	// The attack's task keeps what bbolt took of it; its messageId, sent
	// again, is refused.
	id, _ := json.Marshal(map[string]any{"id": calls.Attack.TaskID})
	if got := resultOf(t, oldCall(t, p.base, "", "", "tasks/get", id)); got["status"].(map[string]any)["state"] != calls.Attack.State {
		t.Errorf("the attack's task: %v, want %s", got["status"], calls.Attack.State)
	}
	wantInvalid(t, oldCall(t, p.base, "", "", "message/send", attackParams(strings.Repeat("x", calls.LongBytes))))
	if err := p.terminate(t, 20*time.Second); err != nil {
		t.Fatalf("a2ad's exit on SIGTERM: %v\n%s", err, p.logs)
	}
	checkStoreFile(t, store, len(calls.Before)+len(calls.After), "after the repair and a restart")
}

// attackBadOps are the ops of the attack's log record that bbolt refuses
// (its idempotency key and the message id the task holds), and
// attackApplied the last record the repaired file holds.
var attackBadOps = [2]string{
	"record 9 (segment 0000000000000009.wal) op 2 puts a key of 33793 bytes (bbolt's limit is 32768) into bucket idem",
	"record 9 (segment 0000000000000009.wal) op 10 puts a key of 33830 bytes (bbolt's limit is 32768) into bucket body",
}

const attackApplied = "18 (it held 8)"

// wantInvalid fails t unless answer is a -32602 error.
func wantInvalid(t *testing.T, answer json.RawMessage) {
	t.Helper()
	var a struct {
		Error *struct{ Code int } `json:"error"`
	}
	if err := json.Unmarshal(answer, &a); err != nil || a.Error == nil || a.Error.Code != -32602 {
		t.Fatalf("a %d-byte messageId: %.300s, want error -32602", attackLongBytes, answer)
	}
}

// TestLongIDAttackThenRestart: the attack against this a2ad: a messageId
// too long for the store is refused with -32602 and nothing of it is
// stored, the store goes on (ready, its checkpoints pass), stops cleanly
// on SIGTERM, and a restart serves every task acknowledged before and
// after the attack; the file checks clean. (With a2ad 1895df3 the call was
// acknowledged, SIGTERM failed and the restart refused the store.)
func TestLongIDAttackThenRestart(t *testing.T) {
	skipShort(t, "runs the real binary")
	catalog := filepath.Join(attackStoreDir, "catalog.yaml")
	store := filepath.Join(t.TempDir(), "a2ad.db")
	p := startBinary(t, catalog, store)
	var acked []attackTask
	send := func(msgID string) {
		t.Helper()
		task := resultOf(t, oldCall(t, p.base, "", "", "message/send", attackParams(msgID)))
		acked = append(acked, attackTask{MessageID: msgID, TaskID: task["id"].(string), State: task["status"].(map[string]any)["state"].(string)})
	}
	for i := range 3 {
		send(fmt.Sprintf("before-%d", i))
	}
	wantInvalid(t, oldCall(t, p.base, "", "", "message/send", attackParams(strings.Repeat("x", attackLongBytes))))
	for i := range 3 {
		send(fmt.Sprintf("after-%d", i))
	}
	time.Sleep(1200 * time.Millisecond) // checkpoints run meanwhile
	if resp := getURL(t, p.admin+"/readyz"); resp != 200 {
		t.Fatalf("/readyz after the attack: HTTP %d, want 200", resp)
	}
	if err := p.terminate(t, 20*time.Second); err != nil {
		t.Fatalf("a2ad's exit on SIGTERM after the attack: %v\n%s", err, p.logs)
	}
	p = startBinary(t, catalog, store)
	checkAcknowledged(t, p.base, acked)
	if err := p.terminate(t, 20*time.Second); err != nil {
		t.Fatalf("a2ad's exit on SIGTERM after the restart: %v\n%s", err, p.logs)
	}
	checkStoreFile(t, store, len(acked), "after the attack and a restart")
}

// getURL is the HTTP status of a GET of url.
func getURL(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestNotReadyWhenStoreStopsTakingWrites: /readyz's reason once the bbolt
// store stopped taking writes (a checkpoint met a change bbolt refuses):
// the balancer sends no more calls to a server that would refuse them.
func TestNotReadyWhenStoreStopsTakingWrites(t *testing.T) {
	m := &Main{}
	m.catalog.Store(&functions.Catalog{})
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "a2ad.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m.store, m.storeWritable = s, s.Writable
	if got := m.notReady(); got != "" {
		t.Fatalf("notReady = %q, want ready", got)
	}
	m.storeWritable = func() error { return &boltstore.StoppedError{Path: "a2ad.db", Cause: errors.New("key too large")} }
	if got := m.notReady(); got != "store stopped taking writes" {
		t.Fatalf("notReady = %q, want the store's stop", got)
	}
}

// TestStoreToolsOnTheAttackStore: backup --store and compact refuse the attack's store with the same line as check, and exit code 3.
func TestStoreToolsOnTheAttackStore(t *testing.T) {
	skipShort(t, "runs the real binary")
	store := copyAttackStore(t)
	for _, args := range [][]string{
		{"store", "backup", "--store", store, "--out", filepath.Join(filepath.Dir(store), "backup.db")},
		{"store", "compact", "--store", store},
	} {
		code, _, stderr := runBinary(t, args...)
		if want := "a2ad: the store file " + store + " cannot be opened as it is: "; code != storecmd.ExitDamaged || !strings.HasPrefix(stderr, want) || !strings.HasSuffix(stderr, "run a2ad store repair --store "+store+"\n") {
			t.Errorf("a2ad %s = %d:\n%s", strings.Join(args[:2], " "), code, stderr)
		}
	}
}
