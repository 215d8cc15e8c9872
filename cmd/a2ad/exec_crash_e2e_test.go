//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashScript appends a line to $1/$2.runs on every run. Its first run
// starts a sleeping child in its process group, writes its own pid and the
// child's to $1/$2.pids, reports the progress note "started" and waits;
// later runs answer {"run": N} at once.
const crashScript = `#!/bin/sh
cat >/dev/null
echo run >>"$1/$2.runs"
n=$(wc -l <"$1/$2.runs")
if [ "$n" -gt 1 ]; then
	echo "{\"run\": $n}"
	exit 0
fi
sleep 60 &
echo "$$ $!" >"$1/$2.pids.tmp" && mv "$1/$2.pids.tmp" "$1/$2.pids"
echo '{"a2a.progress": "started"}'
wait
`

// procGone reports whether pid has exited (or is a zombie waiting for its
// new parent to reap it).
func procGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// waitGone waits a little for pids to be gone, and reports those that are
// not.
func waitGone(pids ...int) (running []int) {
	deadline := time.Now().Add(3 * time.Second)
	for _, pid := range pids {
		for !procGone(pid) {
			if time.Now().After(deadline) {
				running = append(running, pid)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return running
}

func countLines(tb testing.TB, path string) int {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestExecChildrenDieWithA2AD reproduces issue 13 item 3 and issue 26
// item 3: SIGKILL the real binary while two exec calls run, one
// retry-safe and one not, each with a child of its own in its process
// group. The direct children die with a2ad (Pdeathsig), and their
// children with them (each group's watcher kills it): nothing waits for
// a restart, which may never come on this host. At the restart the tasks
// are settled: the retry-safe call runs exactly once more, and the other
// fails as interrupted.
func TestExecChildrenDieWithA2AD(t *testing.T) {
	skipShort(t, "builds and kills the real binary")
	dir := t.TempDir()
	script := filepath.Join(dir, "crash.sh")
	putScript(t, script, crashScript)
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, fmt.Sprintf(`functions:
  - id: exec::once
    metadata: {"a2a.expose": true}
    exec: {argv: [%[1]q, %[2]q, once]}
  - id: exec::again
    metadata: {"a2a.expose": true}
    retry_safe: true
    exec: {argv: [%[1]q, %[2]q, again]}
`, script, dir))
	store := filepath.Join(dir, "a2ad.db")
	p := startBinary(t, catalog, store)

	once := resultTask(t, rpc(t, p.base, "message/send", sendParams("m-once", "exec::once", map[string]any{}, false)))
	again := resultTask(t, rpc(t, p.base, "message/send", sendParams("m-again", "exec::again", map[string]any{}, false)))
	var children, grandchildren []int
	for _, task := range []map[string]any{once, again} {
		// The note is read only once the call's process group is stored.
		deadline := time.Now().Add(10 * time.Second)
		for statusMessage(waitTaskState(t, p.base, task["id"].(string), "working")) != "started" {
			if time.Now().After(deadline) {
				t.Fatalf("task %s never reported its start", task["id"])
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, name := range []string{"once", "again"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".pids"))
		if err != nil {
			t.Fatal(err)
		}
		var child, grandchild int
		if _, err := fmt.Sscan(string(b), &child, &grandchild); err != nil {
			t.Fatalf("%s.pids %q: %v", name, b, err)
		}
		children, grandchildren = append(children, child), append(grandchildren, grandchild)
	}
	t.Cleanup(func() {
		for _, pid := range append(children, grandchildren...) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	p.kill(t)
	if running := waitGone(append(children, grandchildren...)...); len(running) > 0 {
		t.Fatalf("processes %v of the calls outlive a2ad (children %v, theirs %v)", running, children, grandchildren)
	}

	p2 := startBinary(t, catalog, store)
	failed := waitTaskState(t, p2.base, once["id"].(string), "failed")
	if got := statusMessage(failed); got != "interrupted: server restarted" {
		t.Fatalf("interrupted task's reason %q", got)
	}
	rerun := waitTaskState(t, p2.base, again["id"].(string), "completed")
	arts, _ := rerun["artifacts"].([]any)
	if len(arts) != 1 {
		t.Fatalf("rerun task artifacts: %v", rerun["artifacts"])
	}
	data := arts[0].(map[string]any)["parts"].([]any)[0].(map[string]any)["data"]
	if got := fmt.Sprint(data); got != "map[run:2]" {
		t.Fatalf("rerun output %s, want the second run", got)
	}
	// Exactly one more run of the retry-safe call, none of the other.
	time.Sleep(200 * time.Millisecond)
	for name, want := range map[string]int{"once": 1, "again": 2} {
		if n := countLines(t, filepath.Join(dir, name+".runs")); n != want {
			t.Errorf("exec::%s ran %d times, want %d", name, n, want)
		}
	}
}
