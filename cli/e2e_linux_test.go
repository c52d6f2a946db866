package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
		t.Fatalf("stopping process %d: %v", p.Pid, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		states, stopped := threadStates(p.Pid)
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d: not every thread stopped within a minute of SIGSTOP (thread states: %s)", p.Pid, states)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// threadStates returns the state of each thread of process pid (as
// /proc/PID/task/TID/stat has it: R running, S sleeping, T stopped, Z
// zombie...), and whether every one is stopped.
func threadStates(pid int) (string, bool) {
	tasks := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(tasks)
	if err != nil {
		return err.Error(), false
	}
	var b strings.Builder
	stopped := len(ents) > 0
	for _, e := range ents {
		stat, err := os.ReadFile(filepath.Join(tasks, e.Name(), "stat"))
		// The state follows the command name's closing parenthesis.
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 || i+2 >= len(stat) {
			fmt.Fprintf(&b, "%s:? ", e.Name())
			stopped = false
			continue
		}
		fmt.Fprintf(&b, "%s:%c ", e.Name(), stat[i+2])
		stopped = stopped && stat[i+2] == 'T'
	}
	return strings.TrimSpace(b.String()), stopped
}
