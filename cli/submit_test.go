package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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
	eps := freeEndpoints(t, 3)
	peers, adminEP, events := eps[0], eps[1], eps[2]
	_, srvOut := start(t, "serve", "--store", "memory", "--bind", peers, "--admin", adminEP, "--events", events, "--metrics", "")
	eventually(t, "serve listening", 10*time.Second, func() bool { return strings.Contains(srvOut.String(), "drover serving") })

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

	out, code = run(t, input, "submit", "-", "--connect", peers)
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

// TestSubmitResumesAfterReconnect stops a real serve (SIGSTOP) while a
// large submit is in flight, long enough for the submit's session to end;
// the submit reconnects and sends what was not answered again, with the
// same request ids, and the counts it prints are the truth: every URL
// accepted once, none reported as a duplicate of itself.
func TestSubmitResumesAfterReconnect(t *testing.T) {
	eps := freeEndpoints(t, 3)
	peers, adminEP, events := eps[0], eps[1], eps[2]
	srv, srvOut := start(t, "serve", "--store", "memory", "--bind", peers, "--admin", adminEP, "--events", events, "--metrics", "")
	eventually(t, "serve listening", 10*time.Second, func() bool { return strings.Contains(srvOut.String(), "drover serving") })

	const n = 100_000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sub := exec.CommandContext(ctx, drover(t), "submit", "-", "--connect", peers)
	sub.Stdin = strings.NewReader(urlLines("http://resume.test/", n, nil))
	sub.Env = append(os.Environ(), "DROVER_CONFIG=", "NO_COLOR=1")
	var subOut syncBuffer
	sub.Stdout, sub.Stderr = &subOut, &subOut
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	// Once the submit's session is open (it sends its batches at once,
	// pipelined), stop the server past the submit's liveness (its
	// heartbeat, 1s, x 3): the session ends with replies unsent, and the
	// submit reconnects and sends what was not answered again.
	eventually(t, "the submit's session", time.Minute, func() bool { return strings.Contains(srvOut.String(), "role=producer") })
	if err := srv.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the fault: a server that does not answer for 5s
	if err := srv.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err := sub.Wait()
	out := subOut.String()
	if err != nil {
		t.Fatalf("submit: %v, output %q; serve log:\n%s", err, clipOut(out), clipOut(srvOut.String()))
	}
	if want := fmt.Sprintf("%d submitted: %d accepted, 0 duplicates, 0 waiting, 0 rejected", n, n); !strings.Contains(out, want) {
		t.Fatalf("submit printed %q, want %q", clipOut(out), want)
	}
	if opened := strings.Count(srvOut.String(), "role=producer"); opened < 2 {
		t.Fatalf("the submit opened %d sessions: the stop did not interrupt it, so nothing was resent (serve log:\n%s)", opened, clipOut(srvOut.String()))
	}
	tot, _, ok := statusJSON(t, adminEP)
	if !ok || tot.Queued != n || tot.DedupHits != 0 {
		t.Fatalf("totals %+v: want %d queued and no duplicates", tot, n)
	}
}
