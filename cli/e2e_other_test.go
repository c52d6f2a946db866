//go:build !linux

package cli

import (
	"os/exec"
	"syscall"
)

// dieWithTest gives the process cmd starts a process group of its own,
// which the harness kills whole (killGroup); without Linux's
// parent-death signal it outlives a test binary that panics. It returns
// cmd.
func dieWithTest(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.WaitDelay = waitDelay
	return cmd
}
