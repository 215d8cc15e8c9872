//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// TestReplicasCancelExec cancels, on replica C, an exec call running on
// A: A kills the call's process group at once (the child and its own
// child are gone within a second), and every replica reports the task
// canceled.
func TestReplicasCancelExec(t *testing.T) {
	dsn := pgtest.Schema(t)
	dir, catalog := execCatalog(t, "wait", crashScript, "wait")
	rs := startReplicas(t, catalog, dsn, 3)
	a, c := rs[0], rs[2]

	id, child, grandchild := startWaitCall(t, dir, a, c)

	canceledAt := time.Now()
	if got := resultTask(t, rpc(t, c.base, "tasks/cancel", map[string]any{"id": id})); state(got) != "canceled" {
		t.Fatalf("tasks/cancel on C: %v", got)
	}
	answered := time.Since(canceledAt)
	for _, pid := range []int{child, grandchild} {
		for !procGone(pid) {
			if time.Since(canceledAt) > time.Second {
				t.Fatalf("process %d of the call on A still runs %v after the cancel on C", pid, time.Since(canceledAt))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	gone := time.Since(canceledAt)
	t.Logf("cancel on C answered in %v; the call's processes on A gone %v after it was sent", answered, gone)
	for i, r := range rs {
		if got := resultTask(t, rpc(t, r.base, "tasks/get", map[string]any{"id": id})); state(got) != "canceled" {
			t.Fatalf("replica %d reports %s, want canceled", i, state(got))
		}
	}
	if n := countLines(t, filepath.Join(dir, "wait.runs")); n != 1 {
		t.Fatalf("the function ran %d times, want 1", n)
	}
}

// TestReplicasExecRunnerKilled is issue 26 item 3: an exec call runs on
// A, A is SIGKILLed, and the task is canceled on B. The call's process
// group (its child and the child's own child) ends with A, whatever
// happens to the task after; the cancel on B is answered canceled, and
// the function ran once.
func TestReplicasExecRunnerKilled(t *testing.T) {
	dsn := pgtest.Schema(t)
	dir, catalog := execCatalog(t, "wait", crashScript, "wait")
	rs := startReplicas(t, catalog, dsn, 2, "--lease-ttl", "2s")
	a, b := rs[0], rs[1]

	id, child, grandchild := startWaitCall(t, dir, a, b)

	a.kill(t)
	killed := time.Now()
	if running := waitGone(child, grandchild); len(running) > 0 {
		t.Fatalf("processes %v of the call outlive its replica (child %d, its child %d)", running, child, grandchild)
	}
	t.Logf("the call's processes were gone %v after its replica's SIGKILL", time.Since(killed))
	if got := resultTask(t, rpc(t, b.base, "tasks/cancel", map[string]any{"id": id})); state(got) != "canceled" {
		t.Fatalf("tasks/cancel on B: %v", got)
	}
	if n := countLines(t, filepath.Join(dir, "wait.runs")); n != 1 {
		t.Fatalf("the function ran %d times, want 1", n)
	}
}

// startWaitCall starts exec::wait (crashScript) on replica on, waits on
// replica seen for it to report its start, and returns its task and the
// pids of its child and the child's own child (killed when the test
// ends, whatever it shows).
func startWaitCall(t *testing.T, dir string, on, seen *process) (id string, child, grandchild int) {
	t.Helper()
	task := resultTask(t, rpc(t, on.base, "message/send", sendParams("m-wait", "exec::wait", map[string]any{}, false)))
	id = task["id"].(string)
	deadline := time.Now().Add(10 * time.Second)
	for statusMessage(waitTaskState(t, seen.base, id, "working")) != "started" {
		if time.Now().After(deadline) {
			t.Fatal("the call never reported its start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "wait.pids"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscan(string(raw), &child, &grandchild); err != nil {
		t.Fatalf("wait.pids %q: %v", raw, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(child, syscall.SIGKILL)
		_ = syscall.Kill(grandchild, syscall.SIGKILL)
	})
	return id, child, grandchild
}
