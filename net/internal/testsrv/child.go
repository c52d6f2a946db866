package testsrv

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// HelperEnv selects a helper main in a re-executed test binary: a test
// package's TestMain runs the helper named by it instead of the tests.
const HelperEnv = "DROVER_TEST_HELPER"

// Child is a helper process: the test binary re-executed with HelperEnv
// set. Its stdout lines arrive on Lines. It exits when its stdin closes,
// so it does not outlive the test process.
type Child struct {
	cmd   *exec.Cmd
	Lines <-chan string
	exit  chan error
}

// StartChild runs the test binary as helper mode with extra environment
// variables (KEY=value). The test's cleanup kills it if it still runs.
func StartChild(tb testing.TB, mode string, env ...string) *Child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), HelperEnv+"="+mode), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	lines := make(chan string, 64)
	c := &Child{cmd: cmd, Lines: lines, exit: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		c.exit <- cmd.Wait()
	}()
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		<-c.exit
	})
	return c
}

// Line returns the next stdout line that starts with prefix (others are
// skipped), or fails the test after d.
func (c *Child) Line(tb testing.TB, prefix string, d time.Duration) string {
	tb.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		select {
		case l, ok := <-c.Lines:
			if !ok {
				tb.Fatalf("helper exited before printing %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return strings.TrimSpace(strings.TrimPrefix(l, prefix))
			}
		case <-deadline.C:
			tb.Fatalf("helper printed no %q within %v", prefix, d)
		}
	}
}

// Kill sends SIGKILL and returns when it was sent.
func (c *Child) Kill(tb testing.TB) time.Time {
	tb.Helper()
	at := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatalf("kill helper: %v", err)
	}
	return at
}

// ExitOnStdinEOF ends a helper process when the test process closes its
// stdin (or dies). Helpers call it first.
func ExitOnStdinEOF() {
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
}
