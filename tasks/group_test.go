//go:build linux

package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// waitScript writes its pid to $1, starts a sleeping child in its group,
// and prints {"ok":true} once the file $2 exists.
const waitScript = `#!/bin/sh
cat >/dev/null
sleep 60 &
echo $$ >"$1.tmp" && mv "$1.tmp" "$1"
while [ ! -e "$2" ]; do sleep 0.02; done
kill $!
echo '{"ok":true}'
`

// waitBackend is an exec backend of waitScript, with the files it writes
// and waits for.
func waitBackend(tb testing.TB) (b *functions.ExecBackend, pidFile, release string) {
	tb.Helper()
	dir := tb.TempDir()
	script := filepath.Join(dir, "wait.sh")
	if err := os.WriteFile(script, []byte(waitScript), 0o755); err != nil {
		tb.Fatal(err)
	}
	pidFile, release = filepath.Join(dir, "pid"), filepath.Join(dir, "release")
	tb.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })
	return &functions.ExecBackend{Argv: []string{script, pidFile, release}}, pidFile, release
}

func readPid(tb testing.TB, pidFile string) int {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				tb.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			tb.Fatal("the script wrote no pid")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitGroup waits until the stored task id holds a process group.
func waitGroup(tb testing.TB, store tasks.Store, id string) *functions.ProcessGroup {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec, err := store.Get(ctx, "", id, tasks.Whole)
		if err != nil && !errors.Is(err, tasks.ErrNotFound) {
			tb.Fatal(err)
		}
		if err == nil && rec.Group != nil {
			return rec.Group
		}
		if time.Now().After(deadline) {
			tb.Fatalf("task %s holds no process group", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestExecCallStoresItsGroup: while an exec call runs, its task's record
// holds the child's process group, also when the call started before its
// task was stored (a blocking send of a retry-safe function); once the
// call ends, the record holds none.
func TestExecCallStoresItsGroup(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprintf("blocking=%v", blocking), func(t *testing.T) {
			b, pidFile, release := waitBackend(t)
			e := newEnv(t, tasks.Config{}, fn(t, "demo::wait", b, func(f *functions.Function) { f.RetrySafe = blocking }))
			p := nonBlocking(dataMsg("m1", "demo::wait", `{}`))
			if blocking {
				p = send(dataMsg("m1", "demo::wait", `{}`))
			}
			done := make(chan *a2a.Task, 1)
			go func() {
				task, _, err := e.svc.Send(ctx, tasks.Caller{}, p)
				if err != nil {
					t.Error(err)
				}
				done <- task
			}()
			pid := readPid(t, pidFile)
			var id string
			if !blocking {
				id = (<-done).ID
			} else {
				id = waitListed(t, e)
			}
			g := waitGroup(t, e.store, id)
			if g.ID != pid || g.LeaderStart == 0 || g.BootID == "" {
				t.Fatalf("stored group %+v, want the group of pid %d", g, pid)
			}
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if blocking {
				<-done
			}
			waitState(t, e, tasks.Caller{}, id, a2a.StateCompleted)
			if rec, err := e.store.Get(ctx, "", id, tasks.Whole); err != nil || rec.Group != nil {
				t.Fatalf("completed task: group %+v, err %v; want none", rec.Group, err)
			}
		})
	}
}

// waitListed waits for the only task of the anonymous caller to be
// stored, and returns its id.
func waitListed(tb testing.TB, e *env) string {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, _, _, err := e.store.List(ctx, "", tasks.ListFilter{}, nil, 10, tasks.Head)
		if err != nil {
			tb.Fatal(err)
		}
		if len(recs) == 1 {
			return recs[0].Task.ID
		}
		if time.Now().After(deadline) {
			tb.Fatal("no task stored")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRecoveryKillsLeftoverGroup: a working task whose record holds the
// group of a call that still runs (as after a crash of a2ad) is settled
// only once that group is killed, whether it is run again or failed.
func TestRecoveryKillsLeftoverGroup(t *testing.T) {
	for _, retrySafe := range []bool{false, true} {
		t.Run(fmt.Sprintf("retry_safe=%v", retrySafe), func(t *testing.T) {
			// The leftover call: a real child that runs until killed.
			b, pidFile, _ := waitBackend(t)
			groups := make(chan functions.ProcessGroup, 1)
			invoked := make(chan error, 1)
			go func() {
				ctx := functions.WithStarted(context.Background(), func(g functions.ProcessGroup) { groups <- g })
				_, err := b.Invoke(ctx, json.RawMessage(`{}`))
				invoked <- err
			}()
			pid := readPid(t, pidFile)
			g := <-groups

			now := time.Now()
			path := leftBehind(t, &tasks.Record{
				Task:       a2a.Task{ID: "t-left", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking}},
				FunctionID: "demo::wait", Input: json.RawMessage(`{}`), Group: &g, CreatedAt: now, UpdatedAt: now,
			})

			rerun := echoBackend()
			e := openEnv(t, path, tasks.Config{}, fn(t, "demo::wait", rerun, func(f *functions.Function) { f.RetrySafe = retrySafe }))
			// Start returned: the group is killed already.
			select {
			case err := <-invoked:
				var ce *functions.CallError
				if !errors.As(err, &ce) || ce.Reason != "function was killed by signal 9" {
					t.Fatalf("leftover call ended with %v, want killed by signal 9", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the leftover call still runs")
			}
			if err := syscall.Kill(pid, 0); err == nil && !zombie(pid) {
				t.Fatalf("leftover child %d still runs", pid)
			}
			want := a2a.StateFailed
			if retrySafe {
				want = a2a.StateCompleted
			}
			task := waitState(t, e, tasks.Caller{}, "t-left", want)
			if !retrySafe && statusText(task) != "interrupted: server restarted" {
				t.Fatalf("failed task's reason %q", statusText(task))
			}
			if rec, err := e.store.Get(ctx, "", "t-left", tasks.Whole); err != nil || rec.Group != nil {
				t.Fatalf("settled task: group %+v, err %v; want none", rec.Group, err)
			}
		})
	}
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}
