//go:build !linux

package cli

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
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

// stopProcess stops p (SIGSTOP). (Linux's waits until every thread of it
// has stopped; here the signal is all.)
func stopProcess(t *testing.T, p *os.Process) {
	t.Helper()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// threadStates says nothing here (Linux's reads /proc): every thread is
// taken for stopped.
func threadStates(pid int) (string, bool) { return "", true }
