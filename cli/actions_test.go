package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"drover/admin"
	"drover/net/client"
)

// actionServe starts a headless serve and returns its peers and admin
// endpoints.
func actionServe(t *testing.T) (peers, adminEP string) {
	t.Helper()
	_, out := start(t, append([]string{"serve", "--store", "memory", "--metrics", "", "--heartbeat-interval", "1s"}, anyPorts...)...)
	peers, adminEP, _ = serving(t, out)
	return peers, adminEP
}

// totals reads the coordinator's totals through drover status --json.
func totals(t *testing.T, adminEP string) (admin.Totals, map[string]admin.WorkerRow) {
	t.Helper()
	tot, ws, ok := statusJSON(t, adminEP)
	if !ok {
		t.Fatal("drover status failed")
	}
	byID := map[string]admin.WorkerRow{}
	for _, w := range ws {
		byID[w.ID] = w
	}
	return tot, byID
}

// outcome runs an action command with --json and decodes what it printed.
func outcome(t *testing.T, args ...string) (actionOutcome, string, int) {
	t.Helper()
	out, code := run(t, "", append(args, "--json")...)
	var o actionOutcome
	if i := strings.Index(out, "{"); i >= 0 {
		if err := json.NewDecoder(strings.NewReader(out[i:])).Decode(&o); err != nil {
			t.Fatalf("drover %v printed %q: %v", args, out, err)
		}
	}
	return o, out, code
}

// TestActionCommands drives pause, resume, evict, drain and requeue
// against a real serve with real worker processes, checking each change
// in drover status.
func TestActionCommands(t *testing.T) {
	peers, adminEP := actionServe(t)
	gate := filepath.Join(t.TempDir(), "go")
	hold := `while [ ! -e ` + gate + ` ]; do sleep 0.05; done` // a job that runs until the test opens the gate
	for _, id := range []string{"w-a", "w-b"} {
		start(t, "worker", "--connect", peers, "--id", id, "--heartbeat-interval", "1s", "--exec", hold)
	}
	eventually(t, "two workers", 10*time.Second, func() bool { tot, _ := totals(t, adminEP); return tot.WorkersIdle == 2 })

	// pause: submitted jobs stay queued.
	if o, out, code := outcome(t, "pause", "--connect", adminEP); code != 0 || o.Action != admin.ActPause || o.Affected != 1 {
		t.Fatalf("pause: exit %d, %s", code, out)
	}
	if out, code := run(t, "", "submit", "--connect", peers, "http://x.test/1", "http://x.test/2", "http://x.test/3"); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	if tot, _ := totals(t, adminEP); !tot.Paused || tot.Queued != 3 || tot.Dispatched != 0 {
		t.Fatalf("after pause and submit: %+v, want paused with 3 queued", tot)
	}
	if o, _, code := outcome(t, "pause", "--connect", adminEP); code != 0 || o.Affected != 0 {
		t.Fatalf("pause again: exit %d, affected %d: want 0 and nothing done", code, o.Affected)
	}
	// resume: both workers take one.
	if out, code := run(t, "", "resume", "--connect", adminEP); code != 0 || !strings.Contains(out, "dispatch resumed") {
		t.Fatalf("resume: exit %d, %q", code, out)
	}
	eventually(t, "two dispatched", 10*time.Second, func() bool {
		tot, _ := totals(t, adminEP)
		return !tot.Paused && tot.Dispatched == 2 && tot.Queued == 1
	})

	// evict: refused without a terminal or --yes, an unknown worker is an error.
	out, code := run(t, "", "evict", "w-a", "--connect", adminEP)
	if code != 2 || !strings.Contains(out, "stdin is not a terminal") || !strings.Contains(out, "--yes") {
		t.Fatalf("evict without --yes on a pipe: exit %d, %q: want 2 and a message naming --yes", code, out)
	}
	out, code = run(t, "", "evict", "w-nope", "--yes", "--connect", adminEP)
	if code != 1 || !strings.Contains(out, `unknown worker "w-nope"`) {
		t.Fatalf("evict of an unknown worker: exit %d, %q", code, out)
	}
	if _, ws := totals(t, adminEP); len(ws) != 2 {
		t.Fatalf("workers after refused evictions: %v, want both", ws)
	}
	if o, out, code := outcome(t, "evict", "w-a", "--yes", "--connect", adminEP); code != 0 || o.Affected != 1 {
		t.Fatalf("evict w-a --yes: exit %d, %s", code, out)
	}
	tot, ws := totals(t, adminEP)
	if _, ok := ws["w-a"]; ok || tot.Dispatched != 1 || tot.Queued != 2 {
		t.Fatalf("after evicting w-a: %+v, workers %v: want w-a gone and its job queued again", tot, ws)
	}

	// drain: w-b takes nothing new and leaves once its job ends.
	if out, code := run(t, "", "drain", "w-b", "--connect", adminEP); code != 0 || !strings.Contains(out, "draining 1 worker") {
		t.Fatalf("drain: exit %d, %q", code, out)
	}
	if _, ws := totals(t, adminEP); ws["w-b"].State != "draining" {
		t.Fatalf("w-b after drain: %+v, want draining", ws["w-b"])
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "w-b gone after its job", 20*time.Second, func() bool {
		tot, ws := totals(t, adminEP)
		_, there := ws["w-b"]
		return !there && tot.Done == 1 && tot.Queued == 2
	})

	// requeue: fail the two queued jobs with a worker that rejects them,
	// pause, and requeue them by id, by --filter and by --failed.
	start(t, "worker", "--connect", peers, "--id", "w-bad", "--heartbeat-interval", "1s", "--exec", "exit 65")
	failBoth := func() {
		t.Helper()
		run(t, "", "resume", "--connect", adminEP)
		eventually(t, "two failed", 20*time.Second, func() bool { tot, _ := totals(t, adminEP); return tot.Failed == 2 })
		if _, _, code := outcome(t, "pause", "--connect", adminEP); code != 0 {
			t.Fatal("pause failed")
		}
	}
	failBoth()
	ids := failedJobIDs(t, adminEP)
	if len(ids) != 2 {
		t.Fatalf("failed job ids %v, want 2", ids)
	}
	out, code = run(t, "", "requeue", ids[0], ids[1], "--connect", adminEP)
	if code != 2 || !strings.Contains(out, "--yes") {
		t.Fatalf("requeue of 2 jobs on a pipe: exit %d, %q: want 2 and a message naming --yes", code, out)
	}
	if o, out, code := outcome(t, "requeue", ids[0], "--connect", adminEP); code != 0 || o.Affected != 1 {
		t.Fatalf("requeue %s: exit %d, %s", ids[0], code, out)
	}
	if tot, _ := totals(t, adminEP); tot.Failed != 1 || tot.Queued != 1 {
		t.Fatalf("after requeue of one: %+v, want 1 failed and 1 queued", tot)
	}
	if o, out, code := outcome(t, "requeue", "--filter", "state=failed", "--yes", "--connect", adminEP); code != 0 || o.Affected != 1 {
		t.Fatalf("requeue --filter state=failed: exit %d, %s", code, out)
	}
	if tot, _ := totals(t, adminEP); tot.Failed != 0 || tot.Queued != 2 {
		t.Fatalf("after requeue --filter: %+v, want 0 failed and 2 queued", tot)
	}
	failBoth()
	if out, code := run(t, "", "requeue", "--failed", "--connect", adminEP); code != 2 || !strings.Contains(out, "--yes") {
		t.Fatalf("requeue --failed on a pipe: exit %d, %q", code, out)
	}
	if o, out, code := outcome(t, "requeue", "--failed", "--yes", "--connect", adminEP); code != 0 || o.Affected != 2 || o.Requested != 2 {
		t.Fatalf("requeue --failed --yes: exit %d, %s", code, out)
	}
	if tot, _ := totals(t, adminEP); tot.Failed != 0 || tot.Queued != 2 {
		t.Fatalf("after requeue --failed: %+v, want 2 queued again", tot)
	}
	o, out, code := outcome(t, "requeue", "99999", "--connect", adminEP)
	if code != 1 || len(o.Errors) != 1 || !strings.Contains(out, "no such job") {
		t.Fatalf("requeue of an unknown job: exit %d, %s", code, out)
	}
}

// failedJobIDs lists the failed jobs' ids through the admin client.
func failedJobIDs(t *testing.T, adminEP string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := client.DialAdmin(ctx, client.AdminOptions{Connect: adminEP, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	page, err := a.Query(ctx, admin.Query{View: admin.ViewJobs, Filter: "state=failed", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range page.Jobs {
		ids = append(ids, strconv.FormatUint(j.JobID, 10))
	}
	return ids
}

// TestActionErrors: usage errors exit 2 before dialling; a coordinator that
// does not answer is an error naming it within --timeout.
func TestActionErrors(t *testing.T) {
	// A TCP port that takes connections and never answers: the listener
	// is held (not closed and guessed free), so nothing else binds it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dead := "tcp://" + ln.Addr().String()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"requeue", "--connect", dead}, 2, "exactly one of them"},
		{[]string{"requeue", "12", "--failed", "--connect", dead}, 2, "exactly one of them"},
		{[]string{"requeue", "abc", "--connect", dead}, 2, `requeue "abc": want a job id`},
		{[]string{"evict", "--connect", dead}, 2, "requires at least 1 arg"},
		{[]string{"pause", "--timeout", "0s", "--connect", dead}, 2, "--timeout 0s"},
		{[]string{"pause", "--timeout", "1s", "--connect", dead}, 1, "did not answer within 1s"},
		{[]string{"evict", "w-1", "--yes", "--timeout", "1s", "--connect", dead}, 1, "did not answer within 1s"},
		{[]string{"submit", "--timeout", "0s", "--connect", dead, "http://x.test/"}, 2, "--timeout 0s"},
		{[]string{"submit", "--timeout", "1s", "--connect", dead, "http://x.test/"}, 1, "did not answer within 1s"},
	} {
		out, code := run(t, "", c.args...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("drover %v: exit %d, %q: want exit %d and %q", c.args, code, out, c.code, c.want)
		}
	}
}

// TestActionConfirmation answers the question on a (pretend) terminal:
// "n" does nothing, "y" evicts.
func TestActionConfirmation(t *testing.T) {
	peers, adminEP := actionServe(t)
	w, _ := start(t, "worker", "--connect", peers, "--id", "w-q", "--heartbeat-interval", "1s", "--exec", "true")
	eventually(t, "worker up", 10*time.Second, func() bool { _, ws := totals(t, adminEP); _, ok := ws["w-q"]; return ok })
	stdinIsTerminal = func(io.Reader) bool { return true }
	defer func() { stdinIsTerminal = func(r io.Reader) bool { return isTerminal(r) } }()
	t.Setenv("DROVER_CONFIG", "")

	var stdout, stderr bytes.Buffer
	code := Main([]string{"evict", "w-q", "--connect", adminEP}, strings.NewReader("n\n"), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "Evict 1 worker?\n  w-q\n") || !strings.Contains(stderr.String(), "cancelled: nothing was done") {
		t.Fatalf("evict answered n: exit %d, stderr %q", code, stderr.String())
	}
	if _, ws := totals(t, adminEP); ws["w-q"].ID == "" {
		t.Fatal("w-q evicted although the answer was n")
	}
	stdout.Reset()
	stderr.Reset()
	code = Main([]string{"evict", "w-q", "--connect", adminEP}, strings.NewReader("y\n"), &stdout, &stderr)
	if code != 0 || stdout.String() != "evicted 1 worker\n" {
		t.Fatalf("evict answered y: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	if _, ws := totals(t, adminEP); ws["w-q"].ID != "" {
		t.Fatal("w-q still registered after the eviction")
	}
	w.Process.Signal(syscall.SIGTERM)
	w.Wait()
}
