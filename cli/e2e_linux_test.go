package cli

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the process cmd starts die with this test process:
// the kernel SIGKILLs it when the thread that started it exits (Linux's
// parent-death signal: a test binary that panics on its timeout, or is
// killed, takes its serves and workers with it instead of leaving them
// running). It also gets a process group of its own, which the harness
// kills whole (killGroup). It returns cmd.
func dieWithTest(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.WaitDelay = waitDelay
	return cmd
}
