//go:build !linux

package main

import (
	"errors"
	"os/exec"
	"time"
)

// setProcAttr does nothing here: only Linux can tie a child's life to its
// parent's; a2abench still stops every server on a normal exit.
func setProcAttr(*exec.Cmd) {}

// cpuTime is not measured here: a2abench reads it from Linux's /proc.
func cpuTime(int) (time.Duration, error) {
	return 0, errors.New("CPU time is read from /proc on Linux only")
}
