package main

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// setProcAttr makes the kernel kill a server if a2abench dies without
// stopping it (SIGKILL, a crash).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// cpuTime is the CPU time (user and system) the process pid has used so
// far, from /proc/<pid>/stat (in clock ticks of 10 ms: USER_HZ is 100 on
// Linux's supported ABIs).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}
