package tasks_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
)

// TestCancelOnAnotherReplicaKillsTheExecGroup: a cancel answered by
// replica B kills the process group of the exec call replica A runs
// (its sleeping child included) within 1s.
func TestCancelOnAnotherReplicaKillsTheExecGroup(t *testing.T) {
	dsn := pgtest.Schema(t)
	eb, pidFile, _ := waitBackend(t)
	a := openReplica(t, dsn, true, tasks.Config{}, fn(t, "demo::wait", eb))
	b := openReplica(t, dsn, true, tasks.Config{}, fn(t, "demo::wait", eb))
	task, _, err := a.svc.Send(ctx, tasks.Caller{}, nonBlocking(dataMsg("m1", "demo::wait", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	pgid := readPid(t, pidFile) // the script leads its group
	if _, err := b.svc.Cancel(ctx, tasks.Caller{}, task.ID); err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	for groupAlive(pgid) {
		if time.Since(answered) > time.Second {
			t.Fatalf("the exec call's group %d still runs 1s after the cancel on B", pgid)
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("cross-replica cancel: the exec call's group was gone %v after the cancel's answer", time.Since(answered))
	awaitState(t, a, task.ID, a2a.StateCanceled)
}

// groupAlive reports whether a process of group pgid runs (a zombie,
// which the container's init may never reap, does not).
func groupAlive(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		fields := strings.Fields(string(b[i+1:])) // state, ppid, pgrp, ...
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" && fields[0] != "X" {
			return true
		}
	}
	return false
}
