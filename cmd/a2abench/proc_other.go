//go:build !linux

package main

import "os/exec"

// setProcAttr does nothing here: only Linux can tie a child's life to its
// parent's; a2abench still stops every server on a normal exit.
func setProcAttr(*exec.Cmd) {}
