package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"drover/coord/id"
	"drover/net/wire"
)

func TestExec(t *testing.T) {
	job := Job{ID: 42, Attempt: 3, Key: id.Key{Crawler: "news", Processor: "html", URL: "http://e.test/a"}, Payload: []byte("the payload")}
	cases := []struct {
		name    string
		script  string
		outcome wire.Outcome
		output  string
		errHas  string
	}{
		{"ok with stdin and env", `cat; printf ' %s %s %s %s/%s' "$DROVER_JOB_ID" "$DROVER_URL" "$DROVER_ATTEMPT" "$DROVER_CRAWLER" "$DROVER_PROCESSOR"`,
			wire.OutcomeOK, "the payload 42 http://e.test/a 3 news/html", ""},
		{"tempfail is internal", `echo retry me >&2; exit 75`, wire.OutcomeInternal, "", "EX_TEMPFAIL): retry me"},
		{"dataerr is external", `echo bad job >&2; exit 65`, wire.OutcomeExternal, "", "EX_DATAERR): bad job"},
		{"other status is internal", `echo oops >&2; exit 3`, wire.OutcomeInternal, "", "exit status 3: oops"},
		{"signal is internal", `kill -9 $$`, wire.OutcomeInternal, "", "signal: killed"},
		{"stderr tail only", `head -c 10000 /dev/zero | tr '\0' a >&2; echo END >&2; exit 1`, wire.OutcomeInternal, "", "aaaaEND"},
		{"stdout over the limit", `head -c 5000000 /dev/zero`, wire.OutcomeInternal, "", "bytes on stdout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Exec([]string{"/bin/sh", "-c", tc.script})(ctxT(t), job)
			if r.outcome() != tc.outcome || (tc.output != "" && string(r.Output) != tc.output) || !strings.Contains(r.Error, tc.errHas) {
				t.Fatalf("result %s, output %q, error %q; want %s, output %q, error containing %q",
					r.outcome(), r.Output, r.Error, tc.outcome, tc.output, tc.errHas)
			}
			if len(r.Error) > stderrTail+200 {
				t.Fatalf("error of %d bytes, want stderr cut to its last %d", len(r.Error), stderrTail)
			}
		})
	}
}

func TestExecNoCommand(t *testing.T) {
	for _, cmd := range [][]string{nil, {""}} {
		r := Exec(cmd)(ctxT(t), Job{ID: 1})
		if r.outcome() != wire.OutcomeInternal || !strings.Contains(r.Error, "no command") {
			t.Fatalf("Exec(%q): %+v, want an internal failure saying there is no command", cmd, r)
		}
	}
	r := Exec([]string{"/nonexistent/drover-test-command"})(ctxT(t), Job{ID: 1})
	if r.outcome() != wire.OutcomeInternal {
		t.Fatalf("missing program: %+v, want internal", r)
	}
}

// TestExecKilledOnCancel: the command (and what it started) is killed
// when the job's context ends, and the handler returns long before the
// command would have.
func TestExecKilledOnCancel(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "started")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan Result, 1)
	go func() {
		done <- Exec([]string{"/bin/sh", "-c", `touch "$0"; sleep 60 & wait`, mark})(ctx, Job{ID: 1})
	}()
	testEventually(t, "command started", func() bool {
		_, err := os.Stat(mark)
		return err == nil
	})
	cancel(ErrEvicted)
	r := recvT(t, done, "handler return after cancel")
	if r.outcome() != wire.OutcomeInternal || !strings.Contains(r.Error, "killed") || !strings.Contains(r.Error, ErrEvicted.Error()) {
		t.Fatalf("result %+v: want internal, killed, naming the cause", r)
	}
}
