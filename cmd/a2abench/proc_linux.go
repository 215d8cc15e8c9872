package main

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill a server if a2abench dies without
// stopping it (SIGKILL, a crash).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
