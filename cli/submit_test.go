package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// urlLines is n lines of distinct URLs under prefix, with line i (1-based)
// replaced by bad[i].
func urlLines(prefix string, n int, bad map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if l, ok := bad[i]; ok {
			b.WriteString(l)
		} else {
			fmt.Fprintf(&b, "%s%d", prefix, i)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestSubmitBadLines: 100,000 lines with a bad one at line 7 (not UTF-8)
// and one far too long at line 9: each is named by its line number and
// skipped, the others are all submitted, and the exit status says some
// were skipped; with --strict nothing of the input reaches the
// coordinator.
func TestSubmitBadLines(t *testing.T) {
	_, srvOut := start(t, append([]string{"serve", "--store", "memory", "--metrics", ""}, anyPorts...)...)
	peers, adminEP, _ := serving(t, srvOut)

	const n = 100_000
	input := urlLines("http://bad-lines.test/", n, map[int]string{7: "http://bad-lines.test/\xff\xfe", 9: "http://long.test/" + strings.Repeat("x", 100_000)})
	out, code := run(t, input, "submit", "-", "--connect", peers, "--strict")
	if code != 1 || !strings.Contains(out, "line 7: not valid UTF-8") || !strings.Contains(out, "line 9: longer than 8192 bytes") ||
		!strings.Contains(out, "nothing submitted (--strict)") {
		t.Fatalf("submit --strict: exit %d, output %q: want exit 1 naming lines 7 and 9, nothing submitted", code, out)
	}
	tot, _, ok := statusJSON(t, adminEP)
	if !ok || tot.Queued != 0 || tot.KeysQueued != 0 {
		t.Fatalf("after submit --strict: totals %+v: want nothing queued", tot)
	}

	out, code = run(t, input, "submit", "-", "--connect", peers, "--timeout", "2m") // 100,000 lines: a loaded machine under the race detector
	want := fmt.Sprintf("%d submitted: %d accepted, 0 duplicates, 0 waiting, 0 rejected, 2 bad lines skipped", n-2, n-2)
	if code != 1 || !strings.Contains(out, "line 7: not valid UTF-8: skipped") || !strings.Contains(out, "line 9: longer than") || !strings.Contains(out, want) {
		t.Fatalf("submit: exit %d, output %q: want exit 1, lines 7 and 9 named and %q", code, clipOut(out), want)
	}
	tot, _, ok = statusJSON(t, adminEP)
	if !ok || tot.Queued != n-2 {
		t.Fatalf("totals %+v: want %d queued", tot, n-2)
	}
}

func clipOut(s string) string {
	if len(s) > 2000 {
		return s[:1000] + " ... " + s[len(s)-1000:]
	}
	return s
}

// TestSubmitResumesAfterReconnect forces a reconnect in the middle of a
// submit, at the point where a resend is dangerous: the coordinator has
// accepted every item but its SUBMITTED answers have not left. A real
// serve on a disk store with sync=batch every 5s holds each answer until
// the fsync that covers it; once the status shows every job queued, the
// test stops serve (SIGSTOP) past the submit's liveness (heartbeat 1s × 3)
// and lets it go on (SIGCONT): the answers then go to the dead session,
// and the submit, on a new one, sends both requests again under the same
// request ids. The keys are all queued by then, so without the submit
// memo (net/server/submitmemo.go) the resends are answered duplicates and
// the submit prints "0 accepted, N duplicates"; with it the counts are the
// truth: N accepted, 0 duplicates, every job made once (N queued, no
// duplicate counted).
func TestSubmitResumesAfterReconnect(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "drover.yaml")
	if err := os.WriteFile(conf, []byte("store:\n  sync: batch\n  sync_interval: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, srvOut := start(t, append([]string{"serve", "--config", conf, "--store", filepath.Join(dir, "store"), "--metrics", ""}, anyPorts...)...)
	peers, adminEP, _ := serving(t, srvOut)

	const n = 20_000 // two SUBMITs of 10,000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The timeout bounds each wait for a reply, not the resume: the
	// reconnect comes from the session's liveness either way, and under
	// -race on a loaded machine the answers after the stop can take over 10s.
	sub := dieWithTest(exec.CommandContext(ctx, drover(t), "submit", "-", "--connect", peers, "--timeout", "1m"))
	sub.Stdin = strings.NewReader(urlLines("http://resume.test/", n, nil))
	sub.Env = append(os.Environ(), "DROVER_CONFIG=", "NO_COLOR=1")
	var subOut syncBuffer
	sub.Stdout, sub.Stderr = &subOut, &subOut
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	// Every job accepted (the status is not held for the fsync), the
	// answers still waiting for it.
	eventually(t, "every job queued", time.Minute, func() bool {
		tot, _, ok := statusJSON(t, adminEP)
		return ok && tot.Queued == n
	})
	stopProcess(t, srv.Process)
	time.Sleep(5 * time.Second) // the fault: a server that does not answer for 5s
	if err := srv.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err := sub.Wait()
	out := subOut.String()
	if err != nil {
		t.Fatalf("submit: %v, output %q; serve log:\n%s", err, clipOut(out), clipOut(srvOut.String()))
	}
	// The fault happened where it matters: the submit opened a second
	// session and (below) resent requests whose keys were accepted
	// already.
	log := srvOut.String()
	if opened := strings.Count(log, "role=producer"); opened < 2 {
		t.Fatalf("the submit opened %d sessions: the stop did not interrupt it (serve log:\n%s)", opened, clipOut(log))
	}
	if want := fmt.Sprintf("%d submitted: %d accepted, 0 duplicates, 0 waiting, 0 rejected", n, n); !strings.Contains(out, want) {
		t.Fatalf("submit printed %q, want %q", clipOut(out), want)
	}
	tot, _, ok := statusJSON(t, adminEP)
	if !ok || tot.Queued != n || tot.KeysQueued != n || tot.DedupHits != 0 {
		t.Fatalf("totals %+v: want %d jobs and keys queued (each item once) and no duplicates", tot, n)
	}
	if resent := resentKeys(log); resent == 0 {
		t.Fatalf("no resent request had accepted keys: its answers left before the stop, nothing was forced (submit said %q; serve log:\n%s)", clipOut(out), clipOut(log))
	} else {
		t.Logf("%d keys were resent after they were accepted", resent)
	}
}

// resentKeys adds up the keys of serve's log lines saying a resent SUBMIT
// had keys its first send got accepted.
func resentKeys(log string) int {
	total := 0
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, "submit resent") {
			continue
		}
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, "keys="); ok {
				k, _ := strconv.Atoi(v)
				total += k
			}
		}
	}
	return total
}
