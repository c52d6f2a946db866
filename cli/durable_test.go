package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"drover/admin"
)

// TestServeStoreSurvivesKill runs `drover serve --store DIR --store-sync
// always` with a worker process whose job blocks until the test releases
// it, submits 20 URLs, SIGKILLs the server with one job running, and starts
// a new server on the same store: every acknowledged submit is restored,
// the running job is reclaimed by the reconnecting worker (it is not run
// twice), and all 20 complete exactly once.
func TestServeStoreSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	gate := filepath.Join(dir, "go")
	runs := filepath.Join(dir, "runs")
	serveArgs := []string{"serve", "--store", storeDir, "--store-sync", "always", "--heartbeat-interval", "1s"}

	srv, srvOut := start(t, append(serveArgs, anyPorts...)...)
	peers, adminEP, events := serving(t, srvOut)
	serveArgs = append(serveArgs, onPorts(peers, adminEP, events)...) // a restart keeps the ports
	// The handler records each run, then blocks until the gate file exists.
	start(t, "worker", "--connect", peers, "--slots", "1", "--id", "w-hold", "--heartbeat-interval", "1s",
		"--exec", `echo "$DROVER_URL" >> `+runs+`; while [ ! -f `+gate+` ]; do sleep 0.02; done; echo ok`)

	var urls strings.Builder
	for i := range 20 {
		urls.WriteString("http://k.test/" + string(rune('a'+i)) + "\n")
	}
	out, code := run(t, urls.String(), "submit", "-", "--connect", peers)
	if code != 0 || !strings.Contains(out, "20 accepted") {
		t.Fatalf("submit: exit %d, %q: want 20 accepted", code, out)
	}
	eventually(t, "one job running", 20*time.Second, func() bool {
		tot, _, ok := statusJSON(t, adminEP)
		return ok && tot.Dispatched == 1 && tot.Queued == 19
	})
	if err := srv.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	srv.Wait()

	srv2, out2 := start(t, serveArgs...)
	eventually(t, "restarted serve listening", 10*time.Second, func() bool { return strings.Contains(out2.String(), "drover serving") })
	if !strings.Contains(out2.String(), "keys: 20 queued") || !strings.Contains(out2.String(), "jobs: 19 queued, 1 dispatched") {
		t.Fatalf("restart output:\n%s\nwant 20 queued keys, 19 queued jobs and 1 dispatched job restored", out2.String())
	}
	eventually(t, "worker reclaims its job", 20*time.Second, func() bool {
		_, ws, ok := statusJSON(t, adminEP)
		return ok && len(ws) == 1 && ws[0].ID == "w-hold" && ws[0].Used == 1
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "all jobs done", 30*time.Second, func() bool {
		tot, _, ok := statusJSON(t, adminEP)
		return ok && tot.Done == 20
	})
	tot, _, _ := statusJSON(t, adminEP)
	if tot.Failed != 0 || tot.KeysDone != 20 {
		t.Fatalf("totals %+v: want 20 done keys, none failed", tot)
	}
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, u := range strings.Fields(string(b)) {
		seen[u]++
	}
	if len(seen) != 20 {
		t.Fatalf("%d distinct URLs ran, want 20:\n%s", len(seen), b)
	}
	for u, n := range seen {
		if n != 1 {
			t.Errorf("%s ran %d times, want once (the running job is reclaimed, not rerun)", u, n)
		}
	}
	srv2.Process.Kill()
	srv2.Wait()

	// A third start on the same store sees the work done and nothing queued.
	_, out3 := start(t, serveArgs...)
	eventually(t, "third serve listening", 10*time.Second, func() bool { return strings.Contains(out3.String(), "drover serving") })
	if !strings.Contains(out3.String(), "keys: 0 queued, 20 done") {
		t.Fatalf("third start output:\n%s\nwant 20 done keys restored", out3.String())
	}
}

// TestServeStoreLocked: a second serve on a store in use exits non-zero
// naming the lock, and a store directory that is not a store is refused.
func TestServeStoreLocked(t *testing.T) {
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	_, out := start(t, append([]string{"serve", "--store", storeDir}, anyPorts...)...)
	serving(t, out)
	got, code := run(t, "", append([]string{"serve", "--store", storeDir}, anyPorts...)...)
	if code == 0 || !strings.Contains(got, "locked") {
		t.Fatalf("second serve on a locked store: exit %d, %q: want non-zero naming the lock", code, got)
	}
	junk := filepath.Join(dir, "junk")
	os.MkdirAll(junk, 0o755)
	os.WriteFile(filepath.Join(junk, "notes.txt"), []byte("x"), 0o644)
	got, code = run(t, "", append([]string{"serve", "--store", junk}, anyPorts...)...)
	if code == 0 || !strings.Contains(got, "not empty") {
		t.Fatalf("serve on a directory that is not a store: exit %d, %q: want non-zero saying why", code, got)
	}
}

// TestServeStoreKilledTwice is the crash test at a size the test
// budget allows (SOAK_JOBS overrides the 1,000 jobs): a real serve
// with a store (sync batch) and two --exec worker processes work through
// the jobs while the server is SIGKILLed twice at random moments and
// restarted on the same store. At the end every key is done exactly once
// in the ledger (one completion per job), none is lost or stuck; the
// executions beyond one per job are reported (they can only come from jobs
// in flight at a kill).
func TestServeStoreKilledTwice(t *testing.T) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("SOAK_JOBS")); err == nil && v > 0 {
		n = v
	}
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	runs := filepath.Join(dir, "runs")
	serveArgs := []string{"serve", "--store", storeDir, "--store-sync", "batch", "--heartbeat-interval", "1s",
		"--crawl-per-host", "0", "--crawl-min-delay", "0"} // an --exec queue on one host: no crawl politeness
	ports := anyPorts // the first start's ports, chosen by the OS, then kept
	var peers, adminEP, events string
	serve := func() *exec.Cmd {
		cmd, out := start(t, append(serveArgs, ports...)...)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("serve output:\n%s", out.String())
			}
		})
		peers, adminEP, events = serving(t, out)
		ports = onPorts(peers, adminEP, events)
		return cmd
	}
	srv := serve()
	for i := range 2 {
		start(t, "worker", "--connect", peers, "--slots", "4", "--id", fmt.Sprintf("w%d", i), "--heartbeat-interval", "1s",
			"--exec", `echo "$DROVER_URL" >> `+runs)
	}
	var urls strings.Builder
	for i := range n {
		fmt.Fprintf(&urls, "http://soak.test/%d\n", i)
	}
	out, code := run(t, urls.String(), "submit", "-", "--connect", peers)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d accepted", n)) {
		t.Fatalf("submit: exit %d, %q: want %d accepted", code, out, n)
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)
	lo := 0
	for kill := range 2 {
		at := lo + 1 + rng.IntN(max(n/3, 1))
		eventually(t, fmt.Sprintf("kill %d: %d keys done", kill+1, at), 60*time.Second, func() bool {
			tot, _, ok := statusJSON(t, adminEP)
			return ok && (tot.KeysDone >= at || tot.KeysDone == n)
		})
		tot, _, _ := statusJSON(t, adminEP)
		t.Logf("kill %d with %d keys done, %d jobs dispatched", kill+1, tot.KeysDone, tot.Dispatched)
		lo = tot.KeysDone
		srv.Process.Kill()
		srv.Wait()
		srv = serve()
	}
	var tot admin.Totals
	eventually(t, "every key done", 90*time.Second, func() bool {
		tt, _, ok := statusJSON(t, adminEP)
		tot = tt
		return ok && tt.KeysDone == n && tt.Queued+tt.Dispatched+tt.Backoff == 0
	})
	if tot.Failed != 0 || tot.KeysQueued != 0 || tot.Completions != uint64(n) {
		t.Fatalf("totals %+v: want %d completions (each job done once), none failed or queued", tot, n)
	}
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	execs := 0
	for _, u := range strings.Fields(string(b)) {
		seen[u]++
		execs++
	}
	if len(seen) != n {
		t.Fatalf("%d distinct URLs ran, want %d", len(seen), n)
	}
	t.Logf("%d jobs, %d executions: %d beyond one per job (jobs in flight at the kills)", n, execs, execs-n)
}
