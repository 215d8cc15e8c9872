//go:build !linux

package functions

import "syscall"

// sysProcAttr puts the child in a process group of its own. Only Linux
// can have the kernel kill it when a2ad dies (Pdeathsig).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// groupOf reports no group: without /proc, a group cannot be told from a
// later one with the same id, so none is recorded.
func groupOf(int) (ProcessGroup, bool) { return ProcessGroup{}, false }

// KillLeftover does nothing outside Linux, where no group is recorded.
func KillLeftover(ProcessGroup) (killed bool, err error) { return false, nil }

// niceThread does nothing outside Linux, where niceness is not per thread.
func niceThread(int) bool { return false }

// groupWatch watches nothing outside Linux, where no group is recorded.
type groupWatch struct{}

func watchGroup(int) *groupWatch { return nil }

func (*groupWatch) stop() {}
