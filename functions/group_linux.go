//go:build linux

package functions

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// sysProcAttr puts the child in a process group of its own, and has the
// kernel send it SIGKILL when the thread that started it ends: a crashed
// a2ad leaves no direct child running. Its own children are killed at the
// next start instead (see KillLeftover).
//
// Pdeathsig fires when the creating *thread* exits, not the process, and
// the Go runtime ends a thread when a goroutine that locked it returns
// without unlocking. So Invoke starts the child from a goroutine locked to
// its thread, which stays locked until the child has been reaped (see
// runChild): no other goroutine runs on that thread meanwhile, so none
// can end it early, and the thread lives exactly as long as a2ad does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// bootID is the kernel's boot id, read once.
var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return string(bytes.TrimSpace(b)), nil
})

// procStat is what a2ad reads of /proc/<pid>/stat.
type procStat struct {
	state   byte
	pgrp    int
	session int
	start   uint64 // clock ticks since boot
}

// readStat reads /proc/<pid>/stat; an error wrapping fs.ErrNotExist means
// no process has that pid.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name, in parentheses, may hold anything: the fields
	// that follow its last ")" are space-separated, from field 3 (state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	st := procStat{state: f[0][0]}
	if st.pgrp, err = strconv.Atoi(f[2]); err == nil { // field 5
		if st.session, err = strconv.Atoi(f[3]); err == nil { // field 6
			st.start, err = strconv.ParseUint(f[19], 10, 64) // field 22
		}
	}
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// groupOf returns the group a just started child leads.
func groupOf(pid int) (ProcessGroup, bool) {
	boot, err := bootID()
	if err != nil {
		return ProcessGroup{}, false
	}
	st, err := readStat(pid)
	if err != nil {
		return ProcessGroup{}, false
	}
	return ProcessGroup{ID: pid, LeaderStart: st.start, Session: st.session, BootID: boot}, true
}

// KillLeftover sends SIGKILL to what is left running of g, the group of
// a call a previous a2ad did not see end, and reports whether anything
// was. It kills nothing that may belong to another group given the same
// id since: not after a reboot (BootID differs), not if the id's process
// started at another time than g's leader, and not unless every process
// in the group is in g's session and started no earlier than its leader.
// Zombies do not count as running. It returns an error only if /proc
// cannot be read or the kill fails for another reason than the group
// being gone.
func KillLeftover(g ProcessGroup) (killed bool, err error) {
	if g.ID <= 1 {
		return false, fmt.Errorf("process group %d: not a group a2ad started", g.ID)
	}
	boot, err := bootID()
	if err != nil {
		return false, err
	}
	if g.BootID != boot {
		return false, nil // rebooted since: nothing of it runs
	}
	st, err := readStat(g.ID)
	switch {
	case err == nil:
		if st.start != g.LeaderStart || st.pgrp != g.ID {
			// The pid went to another process: ours had all ended,
			// since a pid is not reused while a group holds it.
			return false, nil
		}
	case errors.Is(err, fs.ErrNotExist):
		// The leader is gone (Pdeathsig killed it); its children may be
		// left in the group.
	default:
		return false, err
	}
	if running, err := leftRunning(g); err != nil || !running {
		return false, err
	}
	if err := syscall.Kill(-g.ID, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("kill process group %d: %w", g.ID, err)
	}
	return true, nil
}

// leftRunning reports whether group g has a process that is not a zombie,
// and all its processes are in g's session and started no earlier than
// its leader (else the group may be another's, and false is returned).
func leftRunning(g ProcessGroup) (bool, error) {
	if err := syscall.Kill(-g.ID, 0); errors.Is(err, syscall.ESRCH) {
		return false, nil // the group is gone
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false, fmt.Errorf("list processes: %w", err)
	}
	running := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.pgrp != g.ID {
			continue // ended meanwhile, or in another group
		}
		if st.session != g.Session || st.start < g.LeaderStart {
			return false, nil
		}
		if st.state != 'Z' && st.state != 'X' {
			running = true
		}
	}
	return running, nil
}

// niceThread sets the niceness of the calling OS thread, which a child it
// starts inherits, and reports whether it did (a2ad running nicer may not
// lower it: the child then runs at a2ad's niceness).
func niceThread(nice int) bool {
	return syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice) == nil
}

// groupWatch is the watcher of a call's process group (see watchGroup).
type groupWatch struct {
	cmd *exec.Cmd
	w   *os.File // the pipe's write end, a2ad's alone
}

// watchScript ignores SIGTERM (a cancel's first signal to the group must
// not end the watch for the grace period), waits for its stdin to end,
// and kills its process group.
const watchScript = "trap '' TERM; read -r _; kill -KILL 0"

// watchGroup starts a watcher in the process group pgid: /bin/sh reading
// a pipe whose only writer is this process. When a2ad dies, however it
// dies, the kernel closes that end, the read returns and the watcher
// kills its whole group, itself included: what the call's child started
// ends with the replica that ran it, where Pdeathsig reaches only the
// child. Being in the group, the watcher also keeps its id from going to
// another group before then. It returns nil if the watcher cannot start:
// the child still dies with a2ad, and what it started is killed at the
// next start (KillLeftover).
func watchGroup(pgid int) *groupWatch {
	r, w, err := os.Pipe() // close-on-exec: no other child inherits w
	if err != nil {
		return nil
	}
	cmd := exec.Command("/bin/sh", "-c", watchScript)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return nil
	}
	return &groupWatch{cmd: cmd, w: w}
}

// stop ends the watcher once the call is over and its group killed (the
// watcher with it), and reaps it.
func (g *groupWatch) stop() {
	if g == nil {
		return
	}
	_ = g.cmd.Process.Kill()
	_ = g.cmd.Wait()
	_ = g.w.Close()
}
