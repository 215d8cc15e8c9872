package main

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat.
const userHZ = 100

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces, so fields are counted after its closing one.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat line without a command name: %.80q", b)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("stat line with %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("stat line: CPU time %q is not a tick count", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// cpu is the CPU time the group's processes have used so far; ok is false
// when it cannot be read (not Linux, a process gone).
func (g *group) cpu() (d time.Duration, ok bool) {
	for _, s := range g.procs {
		t, err := cpuTime(s.cmd.Process.Pid)
		if err != nil {
			return 0, false
		}
		d += t
	}
	return d, true
}
