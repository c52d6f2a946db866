package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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

// stopProcess stops p (SIGSTOP) and waits until every thread of it has
// stopped. The kernel wakes one thread to take the signal, which then
// stops the others: on a loaded machine, while that thread waits for a
// CPU, the others run on (long enough, once, for a SIGSTOPped coordinator
// to carry out an action posted after the signal).
func stopProcess(t *testing.T, p *os.Process) {
	t.Helper()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	tasks := fmt.Sprintf("/proc/%d/task", p.Pid)
	eventually(t, fmt.Sprintf("every thread of process %d stopped", p.Pid), time.Minute, func() bool {
		ents, err := os.ReadDir(tasks)
		if err != nil || len(ents) == 0 {
			return false
		}
		for _, e := range ents {
			stat, err := os.ReadFile(filepath.Join(tasks, e.Name(), "stat"))
			if err != nil {
				return false
			}
			// The state follows the command name's closing parenthesis.
			i := bytes.LastIndexByte(stat, ')')
			if i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
				return false
			}
		}
		return true
	})
}
