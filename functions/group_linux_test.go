//go:build linux

package functions_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/functions"
)

// StartGroup starts sh running sleeps: the shell leads a new process
// group and has a sleeping child in it. It returns the group and the
// pids of the shell and the sleep.
func StartGroup(tb testing.TB) (functions.ProcessGroup, []int) {
	tb.Helper()
	pidFile := filepath.Join(tb.TempDir(), "pids")
	cmd := exec.Command("/bin/sh", Script(tb, "spawn.sh"), pidFile, "plain")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()
	tb.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-reaped
	})
	g, ok := functions.GroupOf(cmd.Process.Pid)
	if !ok || g.ID != cmd.Process.Pid || g.LeaderStart == 0 || g.BootID == "" || g.Session != mustSession(tb) {
		tb.Fatalf("GroupOf(%d) = %+v, %v", cmd.Process.Pid, g, ok)
	}
	return g, waitPids(tb, pidFile)
}

func mustSession(tb testing.TB) int {
	tb.Helper()
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
	if errno != 0 {
		tb.Fatal(errno)
	}
	return int(sid)
}

// waitPids waits for spawn.sh's pid file and returns its two pids.
func waitPids(tb testing.TB, pidFile string) []int {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, err := os.ReadFile(pidFile)
		if err == nil {
			var pids []int
			for _, f := range strings.Fields(string(data)) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					tb.Fatal(err)
				}
				pids = append(pids, pid)
			}
			return pids
		}
		if time.Now().After(deadline) {
			tb.Fatal("spawn.sh wrote no pids")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// AssertRunning checks that the processes still run (not zombies).
func AssertRunning(tb testing.TB, pids ...int) {
	tb.Helper()
	for _, pid := range pids {
		if gone(pid) {
			tb.Errorf("process %d is gone, want it left alone", pid)
		}
	}
}

func TestKillLeftover(t *testing.T) {
	t.Run("group with its leader", func(t *testing.T) {
		g, pids := StartGroup(t)
		killed, err := functions.KillLeftover(g)
		if err != nil || !killed {
			t.Fatalf("KillLeftover = %v, %v; want true, nil", killed, err)
		}
		AssertGone(t, pids...)
		// Once gone, there is nothing to kill.
		if killed, err := functions.KillLeftover(g); err != nil || killed {
			t.Fatalf("KillLeftover of a gone group = %v, %v; want false, nil", killed, err)
		}
	})
	t.Run("members without their leader", func(t *testing.T) {
		g, pids := StartGroup(t)
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		AssertGone(t, pids[0])
		AssertRunning(t, pids[1])
		killed, err := functions.KillLeftover(g)
		if err != nil || !killed {
			t.Fatalf("KillLeftover = %v, %v; want true, nil", killed, err)
		}
		AssertGone(t, pids[1])
	})
	// A group that may be another's since the id was reused is left alone.
	for name, change := range map[string]func(*functions.ProcessGroup){
		"leader started at another time": func(g *functions.ProcessGroup) { g.LeaderStart++ },
		"another boot":                   func(g *functions.ProcessGroup) { g.BootID = "00000000-0000-0000-0000-000000000000" },
	} {
		t.Run(name, func(t *testing.T) {
			g, pids := StartGroup(t)
			change(&g)
			if killed, err := functions.KillLeftover(g); err != nil || killed {
				t.Fatalf("KillLeftover = %v, %v; want false, nil", killed, err)
			}
			time.Sleep(50 * time.Millisecond)
			AssertRunning(t, pids...)
		})
	}
	t.Run("members in another session", func(t *testing.T) {
		g, pids := StartGroup(t)
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		AssertGone(t, pids[0])
		g.Session++
		if killed, err := functions.KillLeftover(g); err != nil || killed {
			t.Fatalf("KillLeftover = %v, %v; want false, nil", killed, err)
		}
		time.Sleep(50 * time.Millisecond)
		AssertRunning(t, pids[1])
	})
	t.Run("not a group", func(t *testing.T) {
		_, err := functions.KillLeftover(functions.ProcessGroup{ID: 1})
		if err == nil || err.Error() != "process group 1: not a group a2ad started" {
			t.Fatalf("KillLeftover(1) error %v", err)
		}
	})
}

// TestExecBackend_ReportsGroup: Invoke reports the child's group to the
// StartedFunc of its context before the call ends.
func TestExecBackend_ReportsGroup(t *testing.T) {
	got := make(chan functions.ProcessGroup, 2)
	ctx := functions.WithStarted(context.Background(), func(g functions.ProcessGroup) { got <- g })
	pids, done := StartSpawn(t, ctx, "leave", time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d groups reported, want 1", len(got))
	}
	g := <-got
	if g.ID != pids[0] || g.LeaderStart == 0 || g.BootID == "" {
		t.Fatalf("reported group %+v, want the group of pid %d", g, pids[0])
	}
	// Without a StartedFunc, nothing is reported and the call works.
	res, err := ShBackend(t, "cat.sh").Invoke(context.Background(), json.RawMessage(`{"a":1}`))
	AssertOutput(t, res, err, `{"a":1}`)
}
