package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"drover/net/wire"
)

// Exit codes of an Exec command with a meaning of their own (sysexits.h).
const (
	ExitDataErr  = 65 // EX_DATAERR: the job is bad: external failure
	ExitTempFail = 75 // EX_TEMPFAIL: try again: internal failure
)

// stderrTail is how much of a command's stderr an error message keeps.
const stderrTail = 2048

// Exec returns a Handler that runs cmd (a program and its arguments, not a
// shell line) once per job, for `drover worker --exec`. The job's payload
// is its stdin; its environment is the worker's plus DROVER_JOB_ID,
// DROVER_URL, DROVER_ATTEMPT, DROVER_CRAWLER and DROVER_PROCESSOR. Its
// stdout becomes the job's output. Exit status 0 is ok; 75 (EX_TEMPFAIL) an
// internal failure (retried); 65 (EX_DATAERR) an external failure (failed
// at once); any other status, a signal, or a command that cannot start is
// an internal failure, with the tail of stderr as the error. When the job's
// context ends the command's process group is killed. Stdout beyond
// wire.MaxOutput makes the job an internal failure.
func Exec(cmd []string) Handler {
	argv := append([]string(nil), cmd...)
	return func(ctx context.Context, j Job) Result {
		if len(argv) == 0 || argv[0] == "" {
			return Internal(errors.New("exec: no command given: want a program and its arguments"))
		}
		c := exec.CommandContext(ctx, argv[0], argv[1:]...)
		c.Stdin = bytes.NewReader(j.Payload)
		c.Env = append(os.Environ(),
			"DROVER_JOB_ID="+strconv.FormatUint(j.ID, 10),
			"DROVER_URL="+j.Key.URL,
			"DROVER_ATTEMPT="+strconv.Itoa(j.Attempt),
			"DROVER_CRAWLER="+j.Key.Crawler,
			"DROVER_PROCESSOR="+j.Key.Processor,
		)
		stdout := &capped{max: wire.MaxOutput}
		stderr := &tail{max: stderrTail}
		c.Stdout, c.Stderr = stdout, stderr
		// Kill the whole process group, so that what the command started
		// goes too; do not wait long for pipes a stray grandchild holds.
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
		c.WaitDelay = time.Second
		err := c.Run()
		if ctx.Err() != nil {
			return Internal(fmt.Errorf("exec %s: killed: %w", argv[0], context.Cause(ctx)))
		}
		if stdout.over {
			return Internal(fmt.Errorf("exec %s: more than %d bytes on stdout, want at most that", argv[0], wire.MaxOutput))
		}
		var ee *exec.ExitError
		switch {
		case err == nil:
			return OK(stdout.buf.Bytes())
		case errors.As(err, &ee) && ee.ExitCode() == ExitDataErr:
			return External(fmt.Errorf("exec %s: exit status %d (EX_DATAERR)%s", argv[0], ExitDataErr, stderr.suffix()))
		case errors.As(err, &ee) && ee.ExitCode() == ExitTempFail:
			return Internal(fmt.Errorf("exec %s: exit status %d (EX_TEMPFAIL)%s", argv[0], ExitTempFail, stderr.suffix()))
		default:
			return Internal(fmt.Errorf("exec %s: %w%s", argv[0], err, stderr.suffix()))
		}
	}
}

// capped keeps the first max bytes written and notes whether there were
// more.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

// Write keeps what fits and reports all of p written.
func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.over = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// tail keeps the last max bytes written.
type tail struct {
	b   []byte
	max int
}

// Write appends p and keeps the last max bytes.
func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// suffix is ": <stderr tail>" or "" when stderr was empty.
func (t *tail) suffix() string {
	s := string(bytes.TrimSpace(t.b))
	if s == "" {
		return ""
	}
	return ": " + s
}
