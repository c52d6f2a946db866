package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"drover/admin"
	"drover/store/redis/redistest"
)

// redisCoordinator is one `drover serve --store redis://...` process of a
// test, with a worker process of its own.
type redisCoordinator struct {
	serve      *syncBuffer
	peers, adm string
	proc       *os.Process
	workerFile string
}

// startRedisCoordinator starts a coordinator on the store at url with a
// worker that appends each URL it runs to its workerFile in dir.
func startRedisCoordinator(t *testing.T, url, dir, name string) *redisCoordinator {
	t.Helper()
	rc := startRedisServe(t, url)
	rc.workerFile = filepath.Join(dir, name+".ran")
	rc.startWorker(t, "w-"+name, 8, "--exec", `echo "$DROVER_URL" >> `+rc.workerFile)
	return rc
}

// startRedisServe starts `drover serve --store url` on ephemeral
// endpoints, with no crawl limits but those flags sets, and no worker.
func startRedisServe(t *testing.T, url string, flags ...string) *redisCoordinator {
	t.Helper()
	const ephemeral = "tcp://127.0.0.1:0"
	args := append([]string{"serve", "--store", url, "--bind", ephemeral, "--admin", ephemeral, "--events", ephemeral,
		"--metrics", "", "--heartbeat-interval", "1s", "--crawl-per-host", "0"}, flags...)
	cmd, out := start(t, args...)
	peers := "(not listening yet)"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("drover serve on peers %s (pid %d, extra flags %q), last lines of its log:\n%s", peers, cmd.Process.Pid, flags, lastLines(out.String(), serveLogLines))
		}
	})
	at := listening(t, out, "peers", "admin")
	peers = at["peers"]
	return &redisCoordinator{serve: out, peers: at["peers"], adm: at["admin"], proc: cmd.Process}
}

// serveLogLines is how many of its last log lines a coordinator of a test
// that failed prints.
const serveLogLines = 200

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.SplitAfter(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "")
}

// startWorker starts a worker process of rc named id with slots and the
// extra flags.
func (rc *redisCoordinator) startWorker(t *testing.T, id string, slots int, flags ...string) {
	t.Helper()
	args := append([]string{"worker", "--connect", rc.peers, "--slots", strconv.Itoa(slots), "--id", id, "--heartbeat-interval", "1s"}, flags...)
	start(t, args...)
}

// awaitWorkers waits until rc counts n idle workers.
func (rc *redisCoordinator) awaitWorkers(t *testing.T, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d workers registered", n), 30*time.Second, func() bool {
		tot, _, ok := statusJSON(t, rc.adm)
		return ok && tot.WorkersIdle == n
	})
}

var submitCounts = regexp.MustCompile(`(\d+) submitted: (\d+) accepted, (\d+) duplicates, (\d+) waiting, (\d+) rejected`)

// submitTo submits urls to a coordinator and returns how many were
// accepted and how many were duplicates or waited for another's key.
func submitTo(t *testing.T, peers string, urls []string) (accepted, others int) {
	t.Helper()
	out, code := run(t, strings.Join(urls, "\n")+"\n", "submit", "-", "--connect", peers)
	m := submitCounts.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Errorf("submit to %s: exit %d, output %q; want exit 0 and the counts", peers, code, out)
		return 0, 0
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	return n(2), n(3) + n(4)
}

// ran counts, over the coordinators' workers, how often each URL ran.
func ran(t *testing.T, cs ...*redisCoordinator) map[string]int {
	t.Helper()
	seen := make(map[string]int)
	for _, c := range cs {
		b, err := os.ReadFile(c.workerFile)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" {
				seen[l]++
			}
		}
	}
	return seen
}

func redisURLs(phase string, n int) []string {
	urls := make([]string, n)
	for i := range urls {
		// Private addresses: no politeness delay between fetches.
		urls[i] = fmt.Sprintf("http://10.0.%d.%d/%s/%d", i%4, i%25+1, phase, i)
	}
	return urls
}

// clusterFaults returns the lines of the coordinators' logs that say a
// worker session or a coordinator was taken for dead (its jobs may run
// twice), or "" when there are none.
func clusterFaults(cs ...*redisCoordinator) string {
	var b strings.Builder
	for _, c := range cs {
		for _, l := range strings.Split(c.serve.String(), "\n") {
			if strings.Contains(l, "liveness") || strings.Contains(l, "taken for dead") || strings.Contains(l, "lost claim") {
				b.WriteString(l + "\n")
			}
		}
	}
	return b.String()
}

// TestTwoCoordinatorsOnRedis runs two `drover serve --store redis://...`
// processes on a local Redis Cluster, each with a worker process: URLs
// submitted half to each, with overlap, are accepted once cluster-wide
// and each runs exactly once, on either coordinator's worker. Then one
// coordinator is SIGKILLed while a second batch runs: its claimed jobs go
// back to the shared queue when the other sweeps it, and every URL still
// runs (at least once; the duplicates are bounded by what the dead one had
// claimed), and the cluster's done total still counts the dead one's jobs.
func TestTwoCoordinatorsOnRedis(t *testing.T) {
	drover(t)
	t0 := time.Now()
	cl := redistest.Start(t)
	t.Logf("cluster up in %v", time.Since(t0).Round(time.Millisecond))
	dir := t.TempDir()
	a := startRedisCoordinator(t, cl.URL(), dir, "a")
	b := startRedisCoordinator(t, cl.URL(), dir, "b")

	// Phase 1: 1,000 URLs, 0..599 to a and 400..999 to b at once.
	const n = 1000
	urls := redisURLs("one", n)
	type res struct{ acc, other int }
	done := make(chan res, 2)
	go func() { x, y := submitTo(t, a.peers, urls[:600]); done <- res{x, y} }()
	go func() { x, y := submitTo(t, b.peers, urls[400:]); done <- res{x, y} }()
	r1, r2 := <-done, <-done
	t.Logf("phase 1 submitted in %v", time.Since(t0).Round(time.Millisecond))
	if acc := r1.acc + r2.acc; acc != n || r1.other+r2.other != 200 {
		t.Fatalf("accepted %d+%d, duplicates or waiting %d+%d; want %d accepted once and the 200 overlapping URLs not again", r1.acc, r2.acc, r1.other, r2.other, n)
	}
	eventually(t, "every URL ran", time.Minute, func() bool { return len(ran(t, a, b)) == n })
	seen := ran(t, a, b)
	onA := len(ran(t, a))
	if faults := clusterFaults(a, b); faults == "" {
		for _, u := range urls {
			if seen[u] != 1 {
				t.Fatalf("%s ran %d times; want once (no coordinator died, no worker or coordinator was taken for dead)", u, seen[u])
			}
		}
	} else {
		// A machine loaded past three heartbeats' silence: a worker or a
		// coordinator was taken for dead and its jobs ran again (at least
		// once), at most what it held.
		dups := 0
		for _, u := range urls {
			if seen[u] == 0 {
				t.Fatalf("%s never ran", u)
			}
			dups += seen[u] - 1
		}
		t.Logf("phase 1 on a loaded machine: %d ran twice after\n%s", dups, faults)
		if dups > 2*(64+8) {
			t.Fatalf("%d phase-1 URLs ran again; want at most what two coordinators held (%d)", dups, 2*(64+8))
		}
	}
	t.Logf("phase 1 ran at %v", time.Since(t0).Round(time.Millisecond))
	t.Logf("phase 1: %d URLs ran once each, %d on a's worker, %d on b's", n, onA, n-onA)

	// b's status shows both coordinators and the cluster's totals.
	var cluster *admin.Cluster
	eventually(t, "b's status shows both coordinators, all jobs done", 20*time.Second, func() bool {
		tot, _, ok := statusJSON(t, b.adm)
		cluster = tot.Cluster
		// A job run again after a fault counts each time it finishes.
		doneOK := cluster != nil && (cluster.Done == n || cluster.Done > n && clusterFaults(a, b) != "")
		return ok && doneOK && len(cluster.Coordinators) == 2 && cluster.Queued == 0 && cluster.Claimed == 0
	})
	for _, c := range cluster.Coordinators {
		if !c.Alive || c.Peers != a.peers && c.Peers != b.peers || c.Done == 0 {
			t.Fatalf("cluster view %+v: want a and b alive, each with jobs done", cluster.Coordinators)
		}
	}
	if out, _ := run(t, "", "status", "--connect", b.adm); !strings.Contains(out, fmt.Sprintf("cluster: 2 coordinators (2 alive); shared queue 0, claimed 0, done %d, failed 0", cluster.Done)) {
		t.Fatalf("status prints no cluster line:\n%s", out)
	}

	// Phase 2: 1,000 more, half to each; a is SIGKILLed mid-run.
	urls2 := redisURLs("two", n)
	go func() { x, y := submitTo(t, a.peers, urls2[:n/2]); done <- res{x, y} }()
	go func() { x, y := submitTo(t, b.peers, urls2[n/2:]); done <- res{x, y} }()
	r1, r2 = <-done, <-done
	if r1.acc+r2.acc != n {
		t.Fatalf("phase 2 accepted %d+%d; want %d", r1.acc, r2.acc, n)
	}
	ranTwo := func() int {
		k := 0
		for u := range ran(t, a, b) {
			if strings.Contains(u, "/two/") {
				k++
			}
		}
		return k
	}
	eventually(t, "a tenth of phase 2 ran", time.Minute, func() bool { return ranTwo() >= n/10 })
	if err := a.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := ranTwo()
	eventually(t, "b's status shows a gone", 30*time.Second, func() bool {
		tot, _, ok := statusJSON(t, b.adm)
		if !ok || tot.Cluster == nil {
			return false
		}
		for _, c := range tot.Cluster.Coordinators {
			if c.Peers == a.peers && !c.Alive {
				return true
			}
		}
		return false
	})
	eventually(t, "every phase-2 URL ran after a was killed", time.Minute, func() bool { return ranTwo() == n })
	// The cluster's totals keep a's jobs: every URL of both phases is
	// counted done, though a died (its last summary is not summed).
	var last admin.Cluster
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) { // polling with a deadline
		tot, _, ok := statusJSON(t, b.adm)
		if ok && tot.Cluster != nil {
			if last = *tot.Cluster; last.Done >= 2*n && last.Queued == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's status: cluster done %d, queued %d, claimed %d within 30s; want both phases done (%d, a's jobs included) and none queued", last.Done, last.Queued, last.Claimed, 2*n)
		}
	}
	dups := 0
	for u, c := range ran(t, a, b) {
		if strings.Contains(u, "/two/") && c > 1 {
			dups += c - 1
		}
	}
	// At most what a had claimed: its window of waiting jobs (64) and the
	// jobs running on its worker (8).
	if dups > 64+8 {
		t.Fatalf("%d phase-2 URLs ran again after a died; want at most the 72 it had claimed", dups)
	}
	t.Logf("phase 2 ran at %v", time.Since(t0).Round(time.Millisecond))
	t.Logf("phase 2: a killed with %d of %d URLs run; all ran, %d twice", killedAt, n, dups)
	// The URLs of both phases are done in the cluster's ledger: a sample
	// submitted again to b is not accepted.
	var again []string
	for i := 0; i < n; i += 5 {
		again = append(again, urls[i], urls2[i])
	}
	if acc, _ := submitTo(t, b.peers, again); acc != 0 {
		t.Fatalf("submitting %d URLs again to b accepted %d; want 0 (all done)", len(again), acc)
	}
	t.Logf("resubmitted at %v", time.Since(t0).Round(time.Millisecond))
}

// A store URL that does not parse exits 2 naming the key it came from,
// without the password; a Redis URL in both store.path and store.url is
// refused the same way.
func TestStoreURLErrorsExitTwo(t *testing.T) {
	for _, c := range []struct {
		args []string
		key  string
	}{
		{[]string{"--store", "redis://ops:s3cret@:bad"}, "store.path"},
		{[]string{"--store-url", "rediss://ops:s3cret@h:1/db/2"}, "store.url"},
		{[]string{"--store-url", "http://ops:s3cret@h:1"}, "store.url"},
		{[]string{"--store", "redis://h:1", "--store-url", "redis://ops:s3cret@h:2"}, "store.url"},
	} {
		out, code := run(t, "", append([]string{"serve", "--bind", "tcp://127.0.0.1:0", "--admin", "tcp://127.0.0.1:0",
			"--events", "tcp://127.0.0.1:0", "--metrics", ""}, c.args...)...)
		if code != 2 || !strings.Contains(out, c.key) || strings.Contains(out, "s3cret") {
			t.Errorf("serve %v: exit %d, output %q; want exit 2 naming %s, without the password", c.args, code, out, c.key)
		}
	}
}
